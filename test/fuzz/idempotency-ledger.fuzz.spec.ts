import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { ledgerKeyOf } from '@gatehouse/ledger';
import fc from 'fast-check';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { ledgerAgent, ledgerAgentsEnv } from '../src/support/ledger-agent.js';
import { killAll, type Started, startService } from '../src/support/processes.js';
import { approvalBases, decisionRecorded, forgedLedgerGrants, ledgerBases, policyBases } from './support/events.js';
import { derivedSeed, FUZZ_RUNS, fuzzSeed, samples } from './support/fuzz-run.js';
import { type FuzzRequest, notTypedClientError, type RouteFuzz } from './support/http-fuzz.js';
import { deepNesting, type FieldSpec, junkString, malformedJsonText, notIntegerIn, notMatching, notOneOf, type ObjectSpec, wrongType } from './support/http-inputs.js';
import { getJson, produceRaw, tally } from './support/kafka-fuzz.js';
import { poisonRecords } from './support/kafka-inputs.js';
import { bodyRoute, type Credentials, fixedPath, HEALTH_RUNS, healthReport, inputlessRoute, jsonObject, junkPaths, pathRoute } from './support/routes.js';
import { aliveAndHealthy, describeRestFuzz } from './support/service.js';
import { appended, auditCodes, Database, deadLettered, expectPoisonCounted, grown, TopicEnds } from './support/state.js';

// Malformed input at every route of the idempotency ledger and at its consumer of the ledger
// topic: typed refusals, a live service, no state changed (not even an append: a refused request
// must not reach the log); poison counted, kept and parked once on the dead-letter topic, forged
// grants ignored and reported, and a key reserved after the garbage is still decided.

const seed = fuzzSeed('idempotency-ledger');
const CODES = /^(LEDGER|HTTP)\.[A-Z_]+$/;
const operatorToken = `op_${randomUUID()}`;
const credentials: Credentials = { valid: [`Bearer ${operatorToken}`], material: { validKey: operatorToken } };
// Every other route but echo, status and health is an agent's: mostly its valid key, sometimes a refused one.
const agent = ledgerAgent(['acme'], 'agent:fuzz');
const agentCredentials: Credentials = { valid: [agent.headers.authorization], material: { validKey: agent.apiKey } };
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const HEX64 = /^[\da-f]{64}$/;

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let db: Database;
let ends: TopicEnds;
let service: Started & { url: string };
let pending: { key: string; leaseToken: string };

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${service.url}${path}`, { method: 'POST', headers: { ...agent.headers, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function reserve(key: string): Promise<string> {
  const answer = await post('/v1/idempotency/reservations', { key, connectorId: 'payments.refund', holder: 'agent-1', pendingTtlMs: 600_000 });
  expect(answer).toMatchObject({ status: 200, body: { status: 'reserved' } });
  return answer.body['leaseToken'] as string;
}

beforeAll(async () => {
  kafka = testKafka('fuzz-ledger');
  namespace = await provisionedNamespace(kafka, 'fuzz');
  database = await throwawayDatabase('gh_fuzz');
  db = new Database(database.url);
  ends = new TopicEnds(kafka, namespace);
  service = await startService('idempotency-ledger', {
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_LEDGER_OPERATOR_TOKENS: `op-ada:operator:${operatorToken}`,
    ...ledgerAgentsEnv(agent),
  });
  // A completed key and a pending one: state the refused requests must leave alone.
  const done = hex('done');
  expect((await post('/v1/idempotency/completions', { key: done, leaseToken: await reserve(done), result: { refunded: 40 } })).status).toBe(200);
  pending = { key: hex('pending'), leaseToken: '' };
  pending.leaseToken = await reserve(pending.key);
}, 120_000);

afterAll(async () => {
  killAll();
  await ends?.close();
  await db?.close();
  await database?.drop();
});

async function snapshot() {
  const status = await getJson<Record<string, unknown>>(`${service.url}/v1/ledger/status`);
  return {
    topics: await ends.of(['ledger', 'audit', 'deadLetter']),
    database: await db.digest('ledger'),
    fold: { keys: status['keys'], budgets: status['budgets'], unapplied: status['unappliedRecords'], untrusted: status['untrustedGrants'], applied: status['appliedOffsets'] },
  };
}

// A tenant the agent is not bound to is refused too (403), as is one that is not a tenant at all.
const tenant: FieldSpec = { valid: 'acme', required: false, invalid: fc.oneof(fc.constant(''), fc.constant('globex'), fc.integer({ min: 257, max: 3_000 }).map((n) => 't'.repeat(n)), wrongType('string')) };
const identifier = (valid: string): FieldSpec => ({ valid, required: true, invalid: fc.oneof(fc.constant(''), fc.integer({ min: 257, max: 3_000 }).map((n) => 'i'.repeat(n)), wrongType('string')) });
const key = (valid: string): FieldSpec => ({ valid, required: true, invalid: notMatching(HEX64) });
const lease = (valid: string): FieldSpec => ({ valid, required: true, invalid: fc.oneof(notMatching(/^[\da-f]{8}-[\da-f]{4}-[1-8][\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/i), fc.constant('00000000-0000-0000-0000-00000000000g')) });
// Any JSON is a result; only one nested past 64 levels is not.
const result: FieldSpec = { valid: { ok: true }, required: false, invalid: deepNesting(65), rare: true };

const specs = () => ({
  reserve: {
    strict: false,
    fields: { tenant, key: key(hex('fresh')), connectorId: identifier('payments.refund'), holder: identifier('agent-2'), pendingTtlMs: { valid: 30_000, required: true, invalid: notIntegerIn(1, 7 * 24 * 3_600_000) } },
  },
  complete: { strict: false, fields: { tenant, key: key(pending.key), leaseToken: lease(pending.leaseToken), result } },
  fail: { strict: false, fields: { tenant, key: key(pending.key), leaseToken: lease(pending.leaseToken), code: identifier('TOOL.TIMEOUT'), retryable: { valid: true, required: true, invalid: wrongType('boolean') } } },
  reconcile: { strict: false, fields: { tenant, key: key(pending.key), leaseToken: lease(pending.leaseToken), outcome: { valid: 'not-applied', required: true, invalid: notOneOf(['already-applied', 'not-applied']) }, result } },
  resolve: {
    strict: false,
    fields: {
      decision: { valid: 'mark-completed', required: true, invalid: notOneOf(['re-execute', 'mark-completed']) },
      result,
      comment: { valid: 'checked by hand', required: false, invalid: fc.oneof(wrongType('string'), fc.integer({ min: 2_001, max: 5_000 }).map((n) => 'c'.repeat(n))) },
    },
  },
  rate: {
    strict: false,
    fields: {
      tenant,
      budgetKey: key(hex('budget')),
      algorithm: { valid: 'fixed-window', required: true, invalid: notOneOf(['fixed-window', 'sliding-window']) },
      count: { valid: 10, required: true, invalid: notIntegerIn(1, 1_000_000) },
      windowMs: { valid: 1_000, required: true, invalid: notIntegerIn(1, 31 * 24 * 3_600_000) },
    },
  },
}) satisfies Record<string, ObjectSpec>;

/** The echo route accepts any JSON (it measures the transport): only bodies that are not JSON, or too big, must be refused. */
function echoRoute(): RouteFuzz {
  return {
    name: 'POST /v1/ledger/echo',
    requests: fc
      .oneof(
        { weight: 6, arbitrary: malformedJsonText().map((text) => ({ text, type: 'application/json', kind: 'malformed-json' })) },
        { weight: 1, arbitrary: fc.integer({ min: 102_500, max: 160_000 }).map((n) => ({ text: `"${'e'.repeat(n)}"`, type: 'application/json', kind: 'too-large' })) },
        { weight: 2, arbitrary: junkString().map((text) => ({ text: JSON.stringify({ text }), type: 'application/json; charset=latin1', kind: 'unsupported-charset' })) },
      )
      .map(({ text, type, kind }): FuzzRequest => ({ method: 'POST', path: '/v1/ledger/echo', headers: { 'content-type': type }, body: text, kind })),
    judge: (answer) => notTypedClientError(answer, CODES),
  };
}

function routes(): RouteFuzz[] {
  const s = specs();
  // An operator names the key as the ledger stores it.
  const resolvePaths = fc.oneof(fixedPath(`/v1/idempotency/keys/${ledgerKeyOf('acme', pending.key)}/resolution`), junkPaths((k) => `/v1/idempotency/keys/${k}/resolution`, (k) => HEX64.test(k)));
  const resolve = bodyRoute('POST /v1/idempotency/keys/{key}/resolution', { paths: resolvePaths, spec: s.resolve, credentials, codes: CODES });
  return [
    bodyRoute('POST /v1/idempotency/reservations', { paths: fixedPath('/v1/idempotency/reservations'), spec: s.reserve, credentials: agentCredentials, codes: CODES }),
    bodyRoute('POST /v1/idempotency/completions', { paths: fixedPath('/v1/idempotency/completions'), spec: s.complete, credentials: agentCredentials, codes: CODES }),
    bodyRoute('POST /v1/idempotency/failures', { paths: fixedPath('/v1/idempotency/failures'), spec: s.fail, credentials: agentCredentials, codes: CODES }),
    bodyRoute('POST /v1/idempotency/reconciliations', { paths: fixedPath('/v1/idempotency/reconciliations'), spec: s.reconcile, credentials: agentCredentials, codes: CODES }),
    pathRoute('GET /v1/idempotency/keys/{key}', { template: (k) => `/v1/idempotency/keys/${k}`, valid: (k) => HEX64.test(k), credentials: agentCredentials, codes: CODES }),
    {
      ...resolve,
      requests: fc.oneof(
        { weight: 4, arbitrary: resolve.requests },
        // A result is recorded only with mark-completed: re-execute with one is refused before any append.
        {
          weight: 1,
          arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value): FuzzRequest => ({
            method: 'POST',
            path: `/v1/idempotency/keys/${ledgerKeyOf('acme', pending.key)}/resolution`,
            headers: { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json' },
            body: JSON.stringify({ decision: 're-execute', result: value }),
            kind: 're-execute-with-result',
          })),
        },
      ),
    },
    bodyRoute('POST /v1/rate/consumptions', { paths: fixedPath('/v1/rate/consumptions'), spec: s.rate, credentials: agentCredentials, codes: CODES }),
    echoRoute(),
    inputlessRoute('GET /v1/ledger/status', { path: '/v1/ledger/status', ok: jsonObject, codes: CODES }),
    inputlessRoute('GET /health', { path: '/health', ok: healthReport, codes: CODES, runs: HEALTH_RUNS }),
  ];
}

const ROUTES = [
  'POST /v1/idempotency/reservations',
  'POST /v1/idempotency/completions',
  'POST /v1/idempotency/failures',
  'POST /v1/idempotency/reconciliations',
  'GET /v1/idempotency/keys/{key}',
  'POST /v1/idempotency/keys/{key}/resolution',
  'POST /v1/rate/consumptions',
  'POST /v1/ledger/echo',
  'GET /v1/ledger/status',
  'GET /health',
];

describeRestFuzz('idempotency ledger REST API under malformed input', ROUTES, { service: () => service, routes, snapshot, seed });

describe('ledger topic consumer under poison', () => {
  it('counts and skips poison, ignores forged grants, and still decides the key reserved after them', async () => {
    const before = await snapshot();
    // Only the ledger service may write this topic; the admin principal stands in for a compromised or buggy writer.
    const records = samples(
      poisonRecords({ topicId: 'ledger', bases: ledgerBases(), foreign: [decisionRecorded(), ...approvalBases(), ...policyBases('refunds')], forged: forgedLedgerGrants(), keyring: TEST_KEYRING, keyRequired: false }),
      derivedSeed(seed, 'ledger-topic'),
      FUZZ_RUNS,
    );
    const expected = tally(records);
    await produceRaw(kafka, namespace, 'ledger', records);

    // A key reserved and completed after the garbage; a rate unit consumed after it.
    const fresh = hex(`after-${randomUUID()}`);
    expect((await post('/v1/idempotency/completions', { key: fresh, leaseToken: await reserve(fresh), result: { refunded: 1 } })).status).toBe(200);
    expect(await getJson<Record<string, unknown>>(`${service.url}/v1/idempotency/keys/${fresh}`, agent.headers)).toMatchObject({ status: 'completed', result: { refunded: 1 } });
    expect(await post('/v1/rate/consumptions', { budgetKey: fresh, algorithm: 'fixed-window', count: 5, windowMs: 60_000 })).toMatchObject({ status: 200, body: { allowed: true, remaining: 4 } });

    const status = await expectPoisonCounted(db, 'ledger', `${service.url}/v1/ledger/status`, before, expected);
    // The forged reservations and completions took no key; the real ones did.
    expect({ keys: status['keys'], budgets: status['budgets'] }).toEqual({ keys: (before.fold.keys as number) + 1, budgets: (before.fold.budgets as number) + 1 });
    const keyRows = before.database['keys']!.rows + 1;
    expect(await db.countReaching('ledger', 'keys', keyRows)).toBe(keyRows);
    // Each poison record parked once on the dead-letter topic, after the projection stored it: the same set.
    await grown(ends, before.topics, 'deadLetter', expected.poison, 'the poison on the dead-letter topic');
    const parked = await deadLettered(kafka, namespace, 'ledger');
    expect(parked).toEqual(await db.unappliedKeys('ledger'));
    expect(parked).toHaveLength(expected.poison);
    // Each forgery reported once, by the service.
    await grown(ends, before.topics, 'audit', expected.forged, 'the untrusted-grant reports');
    expect((await auditCodes(kafka, namespace))['SECURITY.UNTRUSTED_GRANT'] ?? 0).toBe(expected.forged);
    const moved = appended(before.topics, await ends.of(['ledger', 'deadLetter']));
    // The garbage, then the reservation, the completion and the rate unit.
    expect(moved).toEqual({ ledger: records.length + 3, deadLetter: expected.poison });
    expect(await aliveAndHealthy(service)).toEqual({ exit: null, health: 200 });
  }, 180_000);
});
