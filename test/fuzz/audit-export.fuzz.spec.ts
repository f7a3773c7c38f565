import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DecisionRecordedV1, type TopicEvent, validateEvent } from '@gatehouse/contracts';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import fc from 'fast-check';
import { type Kafka } from 'kafkajs';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';
import { approvalBases, decisionRecorded, ledgerBases, policyBases } from './support/events.js';
import { derivedSeed, FUZZ_RUNS, fuzzSeed, samples } from './support/fuzz-run.js';
import { type RouteFuzz } from './support/http-fuzz.js';
import { CANARY, type FieldSpec, junkString, notOneOf, type ObjectSpec, wrongType } from './support/http-inputs.js';
import { getJson, produceRaw, tally } from './support/kafka-fuzz.js';
import { poisonRecords } from './support/kafka-inputs.js';
import { authOnlyRoute, bodyRoute, type Credentials, fixedPath, HEALTH_RUNS, healthReport, hostileText, inputlessRoute, junkPaths, pathRoute, queryRoute } from './support/routes.js';
import { aliveAndHealthy, describeRestFuzz } from './support/service.js';
import { appended, Database, deadLettered, grown, TopicEnds } from './support/state.js';

// Malformed input at every route of audit-export and at both of its consumers of the audit topic
// (the decisions projection behind the query API, and the SIEM export): typed refusals, a live
// service, no state changed; poison kept as unapplied (and parked once on the dead-letter topic)
// and skipped by the export, and a decision recorded after the garbage still reaches the query
// API and the SIEM file.

const seed = fuzzSeed('audit-export');
const CODES = /^(AUDIT|HTTP)\.[A-Z_]+$/;
const EXPORT = 'siem';
const UUID = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-fuzz-export-'));
const operatorKey = `ek_${randomUUID()}`;
const operators = JSON.stringify([{ id: 'user:secops', role: 'siem-operator', apiKeySha256: createHash('sha256').update(operatorKey).digest('hex') }]);
// Moving the export takes an operator's key; reading the query API, a reader's.
const credentials: Credentials = { valid: [`Bearer ${operatorKey}`], material: { validKey: operatorKey } };
const reader = auditReader();
const readerCredentials: Credentials = { valid: [reader.headers.authorization], material: { validKey: reader.headers.authorization.slice('Bearer '.length) } };

let kafka: Kafka;
let agentKafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let db: Database;
let ends: TopicEnds;
let service: Started & { url: string };
let recorded: string[] = [];

/** Appends decisions as a guard does (the agent principal, our own validating producer). */
async function record(events: readonly Record<string, unknown>[]): Promise<string[]> {
  const producer = await EventProducer.connect(agentKafka, { namespace });
  try {
    for (const event of events) await producer.publish('audit', validateEvent('audit', event) as TopicEvent<'audit'>);
  } finally {
    await producer.close();
  }
  return events.map((e) => e['id'] as string);
}

async function stored(id: string): Promise<Record<string, unknown> | undefined> {
  const res = await fetch(`${service.url}/v1/decisions/${id}`, { headers: reader.headers });
  return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : undefined;
}

beforeAll(async () => {
  kafka = testKafka('fuzz-audit-export');
  agentKafka = testKafka('fuzz-audit-export-agent', 'agent');
  namespace = await provisionedNamespace(kafka, 'fuzz');
  database = await throwawayDatabase('gh_fuzz');
  db = new Database(database.url);
  ends = new TopicEnds(kafka, namespace);
  service = await startService('audit-export', { ...reader.env, GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_EXPORT_NAME: EXPORT, GATEHOUSE_EXPORT_FILE_DIR: dir, GATEHOUSE_EXPORT_FROM: 'earliest', GATEHOUSE_EXPORT_OPERATORS: operators });
  // Decisions already there: the refused requests must not touch them.
  recorded = await record([decisionRecorded({ runId: 'run-a' }), decisionRecorded({ runId: 'run-a', code: 'POLICY.ALLOWED' }), decisionRecorded({ runId: 'run-b' })]);
  for (const id of recorded) await waitFor(() => stored(id), { timeoutMs: 30_000, what: 'the seeded decisions in the projection' });
  await waitFor(async () => ((await exportStatus()).exported >= recorded.length ? true : undefined), { timeoutMs: 30_000, what: 'the seeded decisions exported' });
}, 120_000);

afterAll(async () => {
  killAll();
  await ends?.close();
  await db?.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function exportStatus(): Promise<{ exported: number; skipped: number; positions: Record<string, string>; paused: boolean }> {
  const [status] = await getJson<{ exported: number; skipped: number; positions: Record<string, string>; paused: boolean }[]>(`${service.url}/v1/exports`, reader.headers);
  if (!status) throw new Error('no export runs');
  return status;
}

async function snapshot() {
  return {
    topics: await ends.of(['audit', 'deadLetter']),
    database: await db.digest('audit_export'),
    export: await exportStatus(),
    files: readdirSync(dir).sort().map((f) => `${f}:${readFileSync(path.join(dir, f)).length}`),
  };
}

/** Query text as it travels: empty, too long, or repeated (an array where one value is expected). */
const text = (valid: string): FieldSpec => ({ valid, required: false, invalid: fc.oneof(fc.constant(''), fc.integer({ min: 257, max: 1_000 }).map((n) => `${CANARY}${'q'.repeat(n)}`), fc.constant([valid, valid])) });
const time = (valid: string): FieldSpec => ({
  valid,
  required: false,
  invalid: fc.oneof(junkString({ maxLength: 40 }), fc.constantFrom('2024-01-01', '2024-01-01T00:00:00', '1700000000', 'yesterday', '2024-13-01T00:00:00Z', '2024-01-01T25:00:00Z', '2024-01-01 00:00:00Z')),
});

const QUERY: ObjectSpec = {
  strict: true,
  fields: {
    tenant: text('acme'),
    actor: text('user:olga'),
    agent: text('refund-bot'),
    run: text('run-a'),
    tool: text('payments.refund'),
    policy: text('refunds'),
    decision: { valid: 'denied', required: false, invalid: notOneOf(['allowed', 'denied', 'masked', 'rewritten', 'observed', 'approval-required', 'error']).filter((v) => typeof v === 'string') },
    boundary: { valid: 'tool', required: false, invalid: notOneOf(['agent-entry', 'input', 'output', 'stream', 'tool', 'egress', 'guardrail', 'approval', 'ledger', 'policy']).filter((v) => typeof v === 'string') },
    from: time('2020-01-01T00:00:00Z'),
    to: time('2100-01-01T00:00:00Z'),
    limit: { valid: '50', required: false, invalid: fc.oneof(junkString({ maxLength: 10 }), fc.constantFrom('0', '501', '999', '1000', '-1', '1.5', '0x10', '', ' 5')) },
    cursor: { valid: undefined, required: false, invalid: fc.oneof(junkString({ maxLength: 700 }), fc.constant(Buffer.from('{"t":"x","id":"y"}').toString('base64url'))) },
  },
};

const RESTART: ObjectSpec = {
  strict: false,
  fields: {
    from: {
      valid: 'latest',
      required: true,
      invalid: fc.oneof(
        junkString(),
        fc.constantFrom('EARLIEST', 'earliest ', '2024-01-01', 'now', '', {}, { a: '1' }, { '0': 1 }, { '0': 'x' }, { '0': '-1' }, { '123456': '1' }, { '0': '1'.repeat(20) }, [], ['earliest']),
        wrongType('string').filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
      ),
    },
  },
};

function routes(): RouteFuzz[] {
  return [
    queryRoute('GET /v1/decisions', {
      paths: fixedPath('/v1/decisions'),
      spec: QUERY,
      credentials: readerCredentials,
      codes: CODES,
      hostile: {
        tenant: hostileText(),
        actor: hostileText(),
        run: hostileText(),
        policy: hostileText(),
        limit: fc.constantFrom('1', '500'),
        from: fc.constantFrom('0001-01-01T00:00:00Z', '2024-02-30T00:00:00Z', '2024-01-01T00:00:00+14:00', '9999-12-31T23:59:59.999999Z'),
        to: fc.constantFrom('9999-12-31T23:59:59Z', '2024-02-31T00:00:00-12:00'),
      },
    }),
    pathRoute('GET /v1/decisions/{id}', { template: (s) => `/v1/decisions/${s}`, valid: (s) => recorded.includes(s), readable: (s) => UUID.test(s), credentials: readerCredentials, codes: CODES }),
    // Any run id of 1 to 256 characters is a fair question (answered with an empty timeline); longer ones are refused.
    pathRoute('GET /v1/runs/{runId}/timeline', { template: (s) => `/v1/runs/${s}/timeline`, valid: () => false, readable: (s) => s.length >= 1 && s.length <= 256, credentials: readerCredentials, codes: CODES }),
    bodyRoute('POST /v1/exports/{name}/restart', { paths: fc.oneof(fixedPath(`/v1/exports/${EXPORT}/restart`), junkPaths((s) => `/v1/exports/${s}/restart`, (s) => s === EXPORT)), spec: RESTART, credentials, codes: CODES }),
    // Its status is read with a reader's key by every snapshot; here every other credential is refused.
    authOnlyRoute('GET /v1/exports', { path: '/v1/exports', credentials: readerCredentials, codes: CODES }),
    inputlessRoute('GET /health', { path: '/health', ok: healthReport, codes: CODES, runs: HEALTH_RUNS }),
  ];
}

const ROUTES = ['GET /v1/decisions', 'GET /v1/decisions/{id}', 'GET /v1/runs/{runId}/timeline', 'POST /v1/exports/{name}/restart', 'GET /v1/exports', 'GET /health'];

describeRestFuzz('audit-export REST API under malformed input', ROUTES, { service: () => service, routes, snapshot, seed });

describe('audit topic consumers under poison', () => {
  it('keep poison as unapplied, skip it in the export, and still project and export the decision recorded after it', async () => {
    const before = await snapshot();
    // Every gate writes this topic, agents included: this is what a compromised agent can append.
    const records = samples(
      poisonRecords({ topicId: 'audit', bases: [decisionRecorded()], foreign: [...approvalBases(), ...ledgerBases(), ...policyBases('refunds')], keyring: TEST_KEYRING, keyRequired: false }),
      derivedSeed(seed, 'audit-topic'),
      FUZZ_RUNS,
    );
    const expected = tally(records);
    await produceRaw(agentKafka, namespace, 'audit', records);

    // The decision after the garbage: valid, with NUL characters and markup where the contract allows text.
    const hostile = { ...decisionRecorded({ runId: 'run-after' }) };
    hostile['payload'] = { ...(hostile['payload'] as object), reason: 'denied\u0000 <script>x</script>', entryPath: 'fuzz\u0000', redactedPaths: ['/a\u0000'] };
    const [id] = await record([DecisionRecordedV1.parse(hostile)]);
    const found = await waitFor(() => stored(id as string), { timeoutMs: 60_000, what: 'the decision after the garbage in the query API' });
    expect(found).toMatchObject({ id, outcome: 'denied', runId: 'run-after' });
    const line = await waitFor(
      () => readdirSync(dir).filter((f) => f.startsWith('ocsf')).flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n')).find((l) => l.includes(id as string)),
      { timeoutMs: 30_000, what: 'the decision after the garbage in the OCSF file' },
    );
    expect(JSON.parse(line)).toMatchObject({ metadata: { uid: id } });

    const exported = await waitFor(async () => {
      const s = await exportStatus();
      return s.skipped === before.export.skipped + expected.poison ? s : undefined;
    }, { timeoutMs: 30_000, what: 'the export to skip the poison' });
    expect({ exported: exported.exported, skipped: exported.skipped, paused: exported.paused }).toEqual({ exported: before.export.exported + 1, skipped: before.export.skipped + expected.poison, paused: false });
    // The projection kept every poison record with its reason, and exactly one new decision.
    const unappliedRows = before.database['unapplied_records']!.rows + expected.poison;
    expect(await db.countReaching('audit_export', 'unapplied_records', unappliedRows)).toBe(unappliedRows);
    const decisionRows = before.database['decisions']!.rows + 1;
    expect(await db.countReaching('audit_export', 'decisions', decisionRows)).toBe(decisionRows);
    for (const seeded of recorded) expect(await stored(seeded)).toMatchObject({ id: seeded });
    // Each poison record parked once on the dead-letter topic, after the projection stored it: the same set.
    await grown(ends, before.topics, 'deadLetter', expected.poison, 'the poison on the dead-letter topic');
    const parked = await deadLettered(kafka, namespace, 'audit');
    expect(parked).toEqual(await db.unappliedKeys('audit_export'));
    expect(parked).toHaveLength(expected.poison);
    const moved = appended(before.topics, await ends.of(['audit', 'deadLetter']));
    expect(moved).toEqual({ audit: records.length + 1, deadLetter: expected.poison });
    expect(await aliveAndHealthy(service)).toEqual({ exit: null, health: 200 });
  }, 180_000);
});
