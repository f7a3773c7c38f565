import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TEST_AGENT_KEY, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { type ApprovalRequestInput, createKafkaApprovalGateway, type GrantedApproval, type KafkaApprovalGateway } from '@gatehouse/guard/approvals';
import { replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import fc from 'fast-check';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';
import { approvalBases, decisionRecorded, forgedApprovalGrants, ledgerBases, policyBases, rejectedApprovalEvents, unknownApprovalId } from './support/events.js';
import { derivedSeed, FUZZ_RUNS, fuzzSeed, samples } from './support/fuzz-run.js';
import { type RouteFuzz } from './support/http-fuzz.js';
import { CANARY, deepNesting, type FieldSpec, junkJson, junkString, notIntegerIn, notOneOf, type ObjectSpec, signJwt, wrongType } from './support/http-inputs.js';
import { getJson, produceRaw, tally } from './support/kafka-fuzz.js';
import { classify, poisonRecords } from './support/kafka-inputs.js';
import { authOnlyRoute, bodyRoute, contentType, type Credentials, fixedPath, HEALTH_RUNS, healthReport, hostileText, inputlessRoute, jsonObject, junkPaths, pathRoute, queryRoute } from './support/routes.js';
import { aliveAndHealthy, describeRestFuzz } from './support/service.js';
import { appended, auditCodes, Database, deadLettered, expectPoisonCounted, grown, TopicEnds } from './support/state.js';

// Malformed input at every route of the approval service and at both consumers of the approvals
// topic (the service's fold and the guard's approval gateway): typed 4xx answers, a live
// service, no state changed; poison counted, kept in unapplied_records and parked once on the
// dead-letter topic, forgeries ignored and reported, and a real request after the garbage still
// reaches a reviewer and its grant still reaches the waiting guard.

const seed = fuzzSeed('approval');
const CODES = /^(APPROVAL|HTTP)\.[A-Z_]+$/;
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-fuzz-approval-'));
const apiKey = `rk_${randomUUID()}`;
const jwtSecret = randomBytes(32).toString('hex');
const jwtFile = path.join(dir, 'jwt.secret');
writeFileSync(jwtFile, jwtSecret, { mode: 0o600 });
const reviewers = JSON.stringify([{ id: 'user:rita', role: 'payments-approver', tenants: ['acme'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(apiKey).digest('hex') }]);
const hour = () => Math.floor(Date.now() / 1000) + 3_600;
const claims = { sub: 'user:jules', role: 'payments-approver', exp: hour(), tenants: ['acme'], connectors: ['payments.refund'] };
const auth = { authorization: `Bearer ${apiKey}` };

// Every credential here authenticates; the last two may decide nothing (another tenant; the requester itself).
const credentials: Credentials = {
  valid: [
    `Bearer ${apiKey}`,
    `Bearer ${signJwt(claims, jwtSecret)}`,
    `Bearer ${signJwt({ ...claims, sub: 'user:glen', tenants: ['globex'] }, jwtSecret)}`,
    // The requester: the agent the gateway's claim key is bound to.
    `Bearer ${signJwt({ ...claims, sub: 'agent:billing' }, jwtSecret)}`,
  ],
  material: { validKey: apiKey, jwt: { secret: jwtSecret, claims } },
};

const INPUT_SCHEMA = {
  type: 'object',
  properties: { orderId: { type: 'string' }, amount: { type: 'number', exclusiveMinimum: 0, maximum: 500 } },
  required: ['orderId', 'amount'],
  additionalProperties: false,
};

let kafka: Kafka;
let agentKafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let db: Database;
let ends: TopicEnds;
let service: Started & { url: string };
let gateway: KafkaApprovalGateway;
let pendingId: string;
const waits: Promise<unknown>[] = [];

/** A refund request as the guard appends it; `hostile` fills what the contract allows with what storage and screens dislike. */
function refundRequest(runId: string, amount: number, hostile = false): ApprovalRequestInput {
  return {
    call: { tenant: 'acme', connectorId: 'payments.refund', executionId: `support/${runId}`, toolCallId: 'call-1' },
    arguments: hostile ? { orderId: `o-${runId}\u0000<img src=x>`, amount, 'note\u0000': '\u202e\u0000' } : { orderId: `o-${runId}`, amount },
    inputSchema: INPUT_SCHEMA,
    toolDescription: hostile ? 'Refund\u0000 an order </script>' : 'Refund an order',
    requester: { id: 'agent:billing', role: 'agent', kind: 'agent' },
    reason: hostile ? 'refunds need a person\u0000' : 'refunds need a person',
    deadline: new Date(Date.now() + 3_600_000).toISOString(),
    correlationId: runId,
  };
}

interface Listed {
  readonly approvalId: string;
  readonly executionId: string;
  readonly status: string;
}

/** Asks through the guard's gateway (as the agent would) and waits until the reviewer's list shows the request. */
async function ask(via: KafkaApprovalGateway, runId: string, hostile = false): Promise<{ approvalId: string; granted: Promise<GrantedApproval> }> {
  const granted = via.awaitApproval(refundRequest(runId, 40, hostile), { timeoutMs: 120_000 });
  // Observed at once: the test settles or abandons it later, and an unobserved rejection would fail the run.
  waits.push(granted.catch(() => undefined));
  const listed = await waitFor(
    async () => (await getJson<{ items: Listed[] }>(`${service.url}/v1/approvals?status=pending&limit=200`, auth)).items.find((i) => i.executionId === `support/${runId}`),
    { timeoutMs: 60_000, what: `the request of ${runId} in the reviewer's list` },
  );
  return { approvalId: listed.approvalId, granted };
}

beforeAll(async () => {
  kafka = testKafka('fuzz-approval');
  agentKafka = testKafka('fuzz-approval-agent', 'agent');
  namespace = await provisionedNamespace(kafka, 'fuzz');
  database = await throwawayDatabase('gh_fuzz');
  db = new Database(database.url);
  ends = new TopicEnds(kafka, namespace);
  service = await startService('approval', {
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_APPROVAL_REVIEWERS: reviewers,
    GATEHOUSE_APPROVAL_JWT_SECRET_FILE: jwtFile,
  });
  gateway = createKafkaApprovalGateway({ kafka: agentKafka, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:fuzz-tail' });
  await gateway.start();
  // One real pending request, so the routes that read or decide have something to protect.
  pendingId = (await ask(gateway, `run-${randomUUID().slice(0, 8)}`)).approvalId;
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await Promise.all(waits);
  killAll();
  await ends?.close();
  await db?.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** What must not move: the topics the service writes, its schema, the reviewer's view, the fold's counts. */
async function snapshot() {
  const status = await getJson<Record<string, unknown>>(`${service.url}/v1/approvals-status`);
  return {
    topics: await ends.of(['approvals', 'audit', 'deadLetter']),
    database: await db.digest('approval'),
    listed: (await getJson<{ items: Listed[] }>(`${service.url}/v1/approvals?limit=200`, auth)).items.map((i) => `${i.approvalId}:${i.status}`),
    fold: { approvals: status['approvals'], pending: status['pending'], unapplied: status['unappliedRecords'], untrusted: status['untrustedGrants'], applied: status['appliedOffsets'] },
  };
}

/** Query values of GET /v1/approvals as they travel: text, so "wrong" means wrong text. */
const text = (valid: string): FieldSpec => ({ valid, required: false, invalid: fc.oneof(fc.constant(''), fc.integer({ min: 257, max: 600 }).map((n) => `${CANARY}${'t'.repeat(n)}`)) });
const count = (valid: string, ok: (n: number) => boolean): FieldSpec => ({
  valid,
  required: false,
  invalid: fc
    // Ages beyond what a date can hold are refused too (a request 10^14 seconds old would be before time began).
    .oneof(junkString({ maxLength: 40 }), fc.constantFrom('-1', '1.5', 'NaN', 'Infinity', '1e400', '0x', '9'.repeat(30), '9007199254740991', '100000000000000'))
    .filter((s) => s.trim() !== '' && !ok(Number(s))),
});
const age = (valid: string) => count(valid, (n) => Number.isSafeInteger(n) && n >= 0 && n <= 1e12);

const LIST_QUERY: ObjectSpec = {
  strict: true,
  fields: {
    status: { valid: 'pending', required: false, invalid: notOneOf(['pending', 'approved', 'approved-with-edits', 'denied', 'expired', 'cancelled']).filter((v) => typeof v === 'string' && v !== '') },
    tenant: text('acme'),
    connector: text('payments.refund'),
    requester: text('agent:refund-bot'),
    minAgeSeconds: age('0'),
    maxAgeSeconds: age('3600'),
    limit: count('50', (n) => Number.isSafeInteger(n) && n >= 1 && n <= 200),
    cursor: { valid: '', required: false, invalid: fc.oneof(junkString({ maxLength: 600 }).filter((s) => s !== ''), fc.constant(Buffer.from('{"at":"x","id":"y"}').toString('base64url'))) },
  },
};

/** Edits the tool's input schema refuses: a decision that must be answered 422 (or 403/404) before anything is written. */
const badEdits = fc.oneof(
  wrongType('object'),
  fc.record({ orderId: fc.oneof(wrongType('string')), amount: fc.constant(10) }),
  fc.record({ orderId: fc.constant('o-1'), amount: notIntegerIn(1, 500).filter((n) => !(typeof n === 'number' && n > 0 && n <= 500)) }),
  fc.record({ orderId: fc.constant('o-1'), amount: fc.constant(10), extra: junkJson() }),
  fc.record({ amount: fc.constant(10) }),
);

const DECISION: ObjectSpec = {
  strict: true,
  fields: {
    verdict: { valid: 'approve-with-edits', required: true, invalid: notOneOf(['approve', 'deny', 'approve-with-edits']) },
    // Any JSON is a valid edit to the body schema; only nesting past what a validator can walk is not.
    editedArguments: { valid: { orderId: 'o-1', amount: 10 }, required: true, invalid: deepNesting(10_000), rare: true },
    comment: { valid: 'checked', required: false, invalid: fc.oneof(wrongType('string'), fc.integer({ min: 2_001, max: 5_000 }).map((n) => 'c'.repeat(n))) },
  },
};

function routes(): RouteFuzz[] {
  const decisionPaths = fc.oneof(
    fixedPath(`/v1/approvals/${pendingId}/decision`),
    unknownApprovalId.map((id) => ({ path: `/v1/approvals/${id}/decision`, kind: 'unknown-id' })),
    junkPaths((s) => `/v1/approvals/${s}/decision`, (s) => s === pendingId),
  );
  const decision = bodyRoute('POST /v1/approvals/{id}/decision', { paths: decisionPaths, spec: DECISION, credentials, codes: CODES });
  return [
    queryRoute('GET /v1/approvals', {
      paths: fixedPath('/v1/approvals'),
      spec: LIST_QUERY,
      credentials,
      codes: CODES,
      hostile: {
        tenant: hostileText(),
        connector: hostileText(),
        requester: hostileText(),
        status: fc.constant('pending,approved,approved-with-edits,denied,expired,cancelled'),
        minAgeSeconds: fc.constantFrom('0', '3153600000'),
        maxAgeSeconds: fc.constantFrom('0', '3153600000'),
        limit: fc.constantFrom('1', '200'),
      },
    }),
    pathRoute('GET /v1/approvals/{id}', { template: (s) => `/v1/approvals/${s}`, valid: (s) => s === pendingId, credentials, codes: CODES }),
    {
      ...decision,
      // A well-formed decision whose edits fail the tool's schema reaches the deepest check before any write.
      requests: fc.oneof(
        { weight: 3, arbitrary: decision.requests },
        {
          weight: 1,
          arbitrary: fc.record({ credential: fc.constantFrom(...credentials.valid), edits: badEdits, comment: fc.option(junkString(), { nil: undefined }) }).map(({ credential, edits, comment }) => ({
            method: 'POST',
            path: `/v1/approvals/${pendingId}/decision`,
            headers: { authorization: credential, 'content-type': 'application/json' },
            body: JSON.stringify({ verdict: 'approve-with-edits', editedArguments: edits, ...(comment !== undefined && { comment }) }),
            kind: 'edits-fail-input-schema',
          })),
        },
      ),
    },
    authOnlyRoute('GET /v1/approval-events', { path: '/v1/approval-events', credentials, codes: CODES }),
    inputlessRoute('GET /v1/approvals-status', { path: '/v1/approvals-status', ok: jsonObject, codes: CODES }),
    inputlessRoute('GET /openapi.json', { path: '/openapi.json', ok: jsonObject, codes: CODES }),
    inputlessRoute('GET /inbox', { path: '/inbox', ok: contentType('text/html'), codes: CODES }),
    inputlessRoute('GET /inbox/app.js', { path: '/inbox/app.js', ok: contentType('text/javascript'), codes: CODES }),
    inputlessRoute('GET /inbox/app.css', { path: '/inbox/app.css', ok: contentType('text/css'), codes: CODES }),
    inputlessRoute('GET /health', { path: '/health', ok: healthReport, codes: CODES, runs: HEALTH_RUNS }),
  ];
}

/** The approval id a decodable record is about. */
/** How many records of each type the audit topic holds. */
async function auditTypes(client: Kafka, ns: string): Promise<Record<string, number>> {
  const types: Record<string, number> = {};
  await replayTopic(client, 'audit', { namespace: ns, onRecord: ({ event }) => void (types[event.type] = (types[event.type] ?? 0) + 1) });
  return types;
}

function approvalIdOf(value: Buffer | null): string | undefined {
  const decoded = classify('approvals', value);
  return decoded.poison ? undefined : ((decoded.event['payload'] as { approvalId?: string } | undefined)?.approvalId ?? undefined);
}

// Built lazily: the decision route needs the pending request beforeAll creates.
describeRestFuzz('approval service REST API under malformed input', ['GET /v1/approvals', 'GET /v1/approvals/{id}', 'POST /v1/approvals/{id}/decision', 'GET /v1/approval-events', 'GET /v1/approvals-status', 'GET /openapi.json', 'GET /inbox', 'GET /inbox/app.js', 'GET /inbox/app.css', 'GET /health'], { service: () => service, routes, snapshot, seed });

describe('approvals topic consumers under poison', () => {
  it('count and skip poison, ignore forgeries, and still apply the request that follows: the reviewer sees it, the guard gets its grant', async () => {
    const before = await snapshot();
    const tailBefore = gateway.stats();
    // Garbage as the agent principal writes it: agents may append to this topic, so this is what a compromised one can do.
    const records = samples(
      poisonRecords({
        topicId: 'approvals',
        bases: approvalBases(),
        foreign: [decisionRecorded(), ...ledgerBases(), ...policyBases('refunds')],
        forged: forgedApprovalGrants(fc.oneof(fc.constant(pendingId), unknownApprovalId)),
        ignored: rejectedApprovalEvents(),
        keyring: TEST_KEYRING,
        keyRequired: false,
      }),
      derivedSeed(seed, 'approvals-topic'),
      FUZZ_RUNS,
    );
    const expected = tally(records);
    const forgedOnPending = records.filter((r) => r.expect === 'forged' && approvalIdOf(r.value) === pendingId).length;
    await produceRaw(agentKafka, namespace, 'approvals', records);

    // The request after the garbage (valid, but carrying NUL characters and markup wherever the contract
    // lets an agent put them): listed for the reviewer, approved over REST, granted to the waiting guard.
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const after = await ask(gateway, runId, true);
    const res = await fetch(`${service.url}/v1/approvals/${after.approvalId}/decision`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ verdict: 'approve', comment: 'fine\u0000' }) });
    expect(res.status).toBe(200);
    expect((await after.granted).grant.approvalId).toBe(after.approvalId);

    // The fold counted every poison record and every forgery, and nothing else.
    const status = await expectPoisonCounted(db, 'approval', `${service.url}/v1/approvals-status`, before, expected);
    expect({ approvals: status['approvals'], pending: status['pending'] }).toEqual({ approvals: (before.fold.approvals as number) + 1, pending: before.fold.pending });

    // The guard's tail skipped the same poison and ignored the same forgeries.
    const tail = gateway.stats();
    expect({ poison: tail.poison - tailBefore.poison, untrusted: tail.untrusted - tailBefore.untrusted, forbidden: tail.forbidden - tailBefore.forbidden }).toEqual({
      poison: expected.poison,
      untrusted: expected.forged,
      forbidden: expected.ignored,
    });

    // A guard that starts now replays the garbage from offset 0 and finds the grant on the log.
    const late = createKafkaApprovalGateway({ kafka: agentKafka, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:fuzz-replay' });
    try {
      await late.start();
      const found = await late.awaitApproval(refundRequest(runId, 40, true), { timeoutMs: 30_000 });
      expect(found).toMatchObject({ published: false, grant: { approvalId: after.approvalId } });
      expect(late.stats().poison).toBe(expected.poison);
    } finally {
      await late.close();
    }

    // Forged grants on the real pending request changed nothing but its history; it still waits for a person.
    const pending = await getJson<{ status: string; votes: unknown[]; history: { verdict: { kind: string; reason?: string } }[] }>(`${service.url}/v1/approvals/${pendingId}`, auth);
    expect(pending.status).toBe('pending');
    expect(pending.votes).toEqual([]);
    expect(pending.history.slice(1).map((h) => h.verdict.reason)).toEqual(Array.from({ length: forgedOnPending }, () => 'untrusted-signature'));

    // Each poison record parked once on the dead-letter topic, after the projection stored it: the same set.
    await grown(ends, before.topics, 'deadLetter', expected.poison, 'the poison on the dead-letter topic');
    const parked = await deadLettered(kafka, namespace, 'approvals');
    expect(parked).toEqual(await db.unappliedKeys('approval'));
    expect(parked).toHaveLength(expected.poison);
    // Every forgery was reported once by the service and once by the guard's tail, and so was every
    // claim no author may make (first-edition requests, unsigned withdrawals); nothing else went to the audit topic.
    const reports = (expected.forged + expected.ignored) * 2;
    await grown(ends, before.topics, 'audit', reports, 'the untrusted-grant and forbidden-claim reports');
    expect(await auditCodes(kafka, namespace)).toEqual({
      ...(expected.forged > 0 && { 'SECURITY.UNTRUSTED_GRANT': expected.forged * 2 }),
      ...(expected.ignored > 0 && { 'SECURITY.FORBIDDEN_CLAIM': expected.ignored * 2 }),
    });
    const moved = appended(before.topics, await ends.of(['approvals', 'audit', 'deadLetter']));
    // Approvals: the garbage, the request and the decision. Audit: those reports, and the reporters'
    // signed chain checkpoints over them (one per batch a producer flushes: their number varies).
    expect({ approvals: moved['approvals'], deadLetter: moved['deadLetter'] }).toEqual({ approvals: records.length + 2, deadLetter: expected.poison });
    expect(moved['audit']).toBeGreaterThanOrEqual(reports);
    expect(await auditTypes(kafka, namespace)).toEqual({ DecisionRecorded: reports, AuditChainCheckpoint: (moved['audit'] ?? 0) - reports });
    expect(await aliveAndHealthy(service)).toEqual({ exit: null, health: 200 });
  }, 180_000);
});
