import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { createEvent, LedgerKeyReservedV1, signEvent, topicName } from '@gatehouse/contracts';
import { EventProducer, Partitioners } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { DataSource } from 'typeorm';
import { compareProjections, rebuildProjection } from '@gatehouse/service-runtime';
import { ledgerProjection } from '@gatehouse/ledger-projection';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';

const LEDGER_PROJECTION = ledgerProjection(TEST_KEYRING);
import { type LedgerApp, startLedgerApp, testLedgerAgent } from './testing/ledger-app.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';

const OPERATOR_TOKEN = `op-token-${randomUUID()}`;
// Two tenants' agents, known to every replica: the projection holds keys of both.
const ACME = testLedgerAgent(['acme'], 'agent:acme');
const GLOBEX = testLedgerAgent(['globex'], 'agent:globex');

let kafka: Kafka;
let database: TestDatabase;
let sql: DataSource;
const running: LedgerApp[] = [];
let schemaCount = 0;

beforeAll(async () => {
  kafka = testKafka('ledger-projection-int-spec');
  database = await createTestDatabase();
  sql = new DataSource({ type: 'postgres', url: database.url, logging: ['error'] });
  await sql.initialize();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
});

afterAll(async () => {
  if (sql?.isInitialized) await sql.destroy();
  await database.drop();
});

const hash = () => createHash('sha256').update(randomUUID()).digest('hex');

async function boot(namespace: string, schema: string): Promise<LedgerApp> {
  const app = await startLedgerApp({ namespace, schema, databaseUrl: database.url, operatorTokens: `ops:operator:${OPERATOR_TOKEN}`, agents: [ACME, GLOBEX] });
  running.push(app);
  return app;
}

/** A reservation written before callers authenticated: no principal, the caller's key as sent. Still read. */
async function legacyReservation(namespace: string): Promise<void> {
  const key = hash();
  const event = createEvent(LedgerKeyReservedV1, { source: 'service:idempotency-ledger', tenant: 'ledger', subject: key }, { key, connectorId: 'c-old', leaseToken: randomUUID(), holder: 'h-old', pendingTtlMs: 60_000 });
  const producer = await EventProducer.connect(kafka, { namespace });
  try {
    await producer.publish('ledger', signEvent(event, TEST_KEYS.ledger));
  } finally {
    await producer.close();
  }
}

/**
 * Every kind of ledger event, including rejections, a takeover, an operator decision, budgets, two
 * tenants' agents on the same client keys, and an event from before callers authenticated.
 */
async function exercise(apps: LedgerApp[], namespace: string): Promise<void> {
  const pick = (i: number) => apps[i % apps.length]!;
  const reserve = (i: number, key: string, ttl = 60_000) => pick(i).post('/v1/idempotency/reservations', { key, connectorId: `c-${i % 3}`, holder: `h-${i}`, pendingTtlMs: ttl });
  const keys = Array.from({ length: 30 }, hash);
  await legacyReservation(namespace);
  await Promise.all(
    keys.map(async (key, i) => {
      const won = (await reserve(i, key)).body;
      await reserve(i + 1, key);
      if (i % 3 === 0) await pick(i).post('/v1/idempotency/completions', { key, leaseToken: won['leaseToken'], result: { i, nested: [i, null, 'x'] } });
      if (i % 3 === 1) await pick(i).post('/v1/idempotency/failures', { key, leaseToken: won['leaseToken'], code: 'TOOL.FAILED', retryable: true });
      // i % 3 === 2: left pending
    }),
  );
  // globex's agent reserves five of acme's client keys: five keys of its own, left pending.
  for (const [i, key] of keys.slice(0, 5).entries()) {
    expect((await pick(i).post('/v1/idempotency/reservations', { key, connectorId: 'c-g', holder: `g-${i}`, pendingTtlMs: 60_000 }, GLOBEX.headers)).body).toMatchObject({ status: 'reserved' });
  }
  const ambiguous = hash();
  await reserve(0, ambiguous, 150);
  const takeover = await waitFor(async () => {
    const answer = await reserve(1, ambiguous, 150);
    return answer.body['status'] === 'reserved' ? answer.body : undefined;
  }, { intervalMs: 50, timeoutMs: 10_000 });
  await pick(1).post('/v1/idempotency/failures', { key: ambiguous, leaseToken: takeover['leaseToken'], code: 'TOOL.CRASHED', retryable: false });
  const resolved = hash();
  await reserve(0, resolved, 150);
  const takeover2 = await waitFor(async () => {
    const answer = await reserve(0, resolved, 150);
    return answer.body['status'] === 'reserved' ? answer.body : undefined;
  }, { intervalMs: 50, timeoutMs: 10_000 });
  await pick(0).post('/v1/idempotency/failures', { key: resolved, leaseToken: takeover2['leaseToken'], code: 'TOOL.CRASHED', retryable: false });
  const decision = await pick(0).post(`/v1/idempotency/keys/${pick(0).stored(resolved)}/resolution`, { decision: 'mark-completed', result: 'by hand' }, { authorization: `Bearer ${OPERATOR_TOKEN}` });
  expect(decision.status).toBe(200);
  const [fixed, sliding] = [hash(), hash()];
  await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      pick(i).post('/v1/rate/consumptions', { budgetKey: i % 2 ? fixed : sliding, algorithm: i % 2 ? 'fixed-window' : 'sliding-window', count: 4, windowMs: 60_000 }),
    ),
  );
}

/** Waits until every app has committed to the projection all that its fold applied. */
async function settled(apps: LedgerApp[]): Promise<void> {
  await waitFor(
    () => {
      const statuses = apps.map((a) => a.engine.status());
      const same = statuses.every((s) => JSON.stringify(s.projectedOffsets) === JSON.stringify(statuses[0]!.appliedOffsets) && JSON.stringify(s.appliedOffsets) === JSON.stringify(statuses[0]!.appliedOffsets));
      return same ? true : undefined;
    },
    { what: 'projections settled', timeoutMs: 10_000 },
  );
}

describe('the PostgreSQL projection', () => {
  it('equals a projection rebuilt by replay, with two replicas writing it and a record it could not apply', async () => {
    const namespace = await provisionedNamespace(kafka);
    schemaCount += 1;
    const live = `ledger_live_${schemaCount}`;
    const apps = [await boot(namespace, live), await boot(namespace, live)];
    await exercise(apps, namespace);
    // A record that fails its contract is parked in the projection, not dropped.
    const raw = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await raw.connect();
    try {
      await raw.send({ topic: topicName('ledger', namespace), messages: [{ key: hash(), value: '{"type":"LedgerKeyReserved","version":1}' }] });
    } finally {
      await raw.disconnect();
    }
    await waitFor(() => (apps.every((a) => a.engine.status().unappliedRecords === 1) ? true : undefined), { what: 'the poison record seen' });
    await settled(apps);

    const rebuilt = `ledger_rebuilt_${schemaCount}`;
    const report = await rebuildProjection(LEDGER_PROJECTION, { kafka, namespace, database: { url: database.url }, schema: rebuilt });
    expect(report.unapplied).toBe(1);
    const comparison = await compareProjections(LEDGER_PROJECTION, sql.manager, { liveSchema: live, rebuiltSchema: rebuilt, namespace });
    expect(comparison.differences).toEqual([]);
    expect(comparison).toMatchObject({ equal: true, sameOffsets: true, rows: { keys: 28, budgets: 2, unapplied_records: 1 } });
    const statuses: { status: string; n: string }[] = await sql.query(`SELECT status, count(*) AS n FROM ${live}.keys GROUP BY status ORDER BY status`);
    expect(statuses.map((s) => [s.status, Number(s.n)])).toEqual([
      ['ambiguous', 1],
      ['completed', 11],
      ['pending', 16],
    ]);
    // Both replicas counted the same open keys per agent; the legacy claim counts for nobody.
    const counts = apps.map((a) => Object.fromEntries(a.engine.view().openKeysByPrincipal));
    expect(counts[0]).toEqual({ 'agent:acme': 11, 'agent:globex': 5 });
    expect(counts[1]).toEqual(counts[0]);

    // The comparison notices a row that drifted.
    await sql.query(`UPDATE ${live}.keys SET holder = 'someone-else' WHERE key = (SELECT key FROM ${live}.keys WHERE status = 'pending' LIMIT 1)`);
    const drifted = await compareProjections(LEDGER_PROJECTION, sql.manager, { liveSchema: live, rebuiltSchema: rebuilt, namespace });
    expect(drifted.equal).toBe(false);
    expect(drifted.differences).toEqual([{ table: 'keys', id: expect.any(String), issue: 'different' }]);
  });

  it('is rebuilt from offset 0 by the service after its tables were emptied', async () => {
    const namespace = await provisionedNamespace(kafka);
    schemaCount += 1;
    const live = `ledger_live_${schemaCount}`;
    const first = await boot(namespace, live);
    await exercise([first], namespace);
    await settled([first]);
    const rebuilt = `ledger_rebuilt_${schemaCount}`;
    await rebuildProjection(LEDGER_PROJECTION, { kafka, namespace, database: { url: database.url }, schema: rebuilt });
    running.splice(running.indexOf(first), 1);
    await first.close();

    await sql.query(`TRUNCATE ${live}.keys, ${live}.budgets, ${live}.unapplied_records`);
    await sql.query(`DELETE FROM ${live}.projection_offsets`);
    const second = await boot(namespace, live);
    expect(second.engine.status().projectedOffsets).toEqual(second.engine.status().appliedOffsets);
    const comparison = await compareProjections(LEDGER_PROJECTION, sql.manager, { liveSchema: live, rebuiltSchema: rebuilt, namespace });
    expect(comparison.differences).toEqual([]);
    expect(comparison.equal).toBe(true);
    expect(comparison.rows.keys).toBeGreaterThan(0);
  });

  it('expires completed keys past the retention: the fold forgets them, their rows go, the key runs again, and a replay agrees', async () => {
    const namespace = await provisionedNamespace(kafka);
    schemaCount += 1;
    const live = `ledger_retain_${schemaCount}`;
    const app = await startLedgerApp({ namespace, schema: live, databaseUrl: database.url, retainCompletedMs: 1_000, expirySweepMs: 100 });
    running.push(app);
    const reserve = (key: string) => app.post<{ status: string; leaseToken: string }>('/v1/idempotency/reservations', { key, connectorId: 'payments.refund', holder: 'agent-1', pendingTtlMs: 60_000 });
    const [done, other, open] = [hash(), hash(), hash()];
    for (const key of [done, other]) expect((await app.post('/v1/idempotency/completions', { key, leaseToken: (await reserve(key)).body.leaseToken, result: { refunded: 20 } })).status).toBe(200);
    expect((await reserve(open)).body.status).toBe('reserved'); // pending: retention never touches it
    // While retained, a retry gets the recorded result back.
    expect((await reserve(done)).body).toMatchObject({ status: 'completed', result: { refunded: 20 } });
    await waitFor(async () => ((await app.get(`/v1/idempotency/keys/${done}`)).status === 404 ? true : undefined), { what: 'the completed key expired', timeoutMs: 10_000 });
    await waitFor(async () => ((await app.get(`/v1/idempotency/keys/${other}`)).status === 404 ? true : undefined), { what: 'the other completed key expired', timeoutMs: 10_000 });
    expect((await app.get<{ status: string }>(`/v1/idempotency/keys/${open}`)).body.status).toBe('pending');
    expect(app.engine.status().keysExpired).toBe(2);
    // Past the retention the key is free again: the call runs once more.
    expect((await reserve(done)).body.status).toBe('reserved');
    await settled([app]);
    const rows: { key: string; status: string }[] = await sql.query(`SELECT key, status FROM ${live}.keys ORDER BY status`);
    expect(rows.map((r) => [r.key === app.stored(done) ? 'done' : r.key === app.stored(open) ? 'open' : 'other', r.status]).sort()).toEqual([
      ['done', 'pending'],
      ['open', 'pending'],
    ]);
    // The expiries are on the log: a projection rebuilt from it is the live one.
    const rebuilt = `ledger_retain_rebuilt_${schemaCount}`;
    await rebuildProjection(LEDGER_PROJECTION, { kafka, namespace, database: { url: database.url }, schema: rebuilt });
    const comparison = await compareProjections(LEDGER_PROJECTION, sql.manager, { liveSchema: live, rebuiltSchema: rebuilt, namespace });
    expect(comparison.differences).toEqual([]);
    expect(comparison).toMatchObject({ equal: true, sameOffsets: true, rows: { keys: 2 } });
  });
});
