import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { PROJECTION_LOGS, projectionLogChange, type ProjectionLogs, runReplayCli, SERVICES, specLog } from '@gatehouse/service-runtime';
import { replaceTopic } from '@gatehouse/service-runtime/testing';
import { topicName } from '@gatehouse/contracts';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { type Kafka } from 'kafkajs';
import { DataSource } from 'typeorm';
import { ledgerProjection } from '@gatehouse/ledger-projection';
import { type LedgerApp, startLedgerApp } from './testing/ledger-app.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';

// Issue 15, attack 8: a database that outlived its log. The ledger's projection is bound to the
// log it was built from (cluster id, and per partition the anchor of the last record applied):
// on another log a start rebuilds it from offset 0 of that log, and a running service refuses
// every route but /health. A GET never answers a row of the old log.

let kafka: Kafka;
let database: TestDatabase;
let sql: DataSource;
const running: LedgerApp[] = [];
let schemaCount = 0;

beforeAll(async () => {
  kafka = testKafka('ledger-projection-log-int-spec');
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

const newKey = () => createHash('sha256').update(randomUUID()).digest('hex');

async function boot(namespace: string, schema: string): Promise<LedgerApp> {
  const app = await startLedgerApp({ namespace, schema, databaseUrl: database.url });
  running.push(app);
  return app;
}

async function stop(app: LedgerApp): Promise<void> {
  running.splice(running.indexOf(app), 1);
  await app.close();
}

const reserve = (app: LedgerApp, key: string) => app.post<{ status: string; leaseToken?: string }>('/v1/idempotency/reservations', { key, connectorId: 'payments.refund', holder: 'call-1', pendingTtlMs: 60_000 });

/** Reserves and completes `key` with `result`: the GET answers "completed". */
async function complete(app: LedgerApp, key: string, result: Record<string, unknown> = { refunded: 25 }): Promise<void> {
  const won = await reserve(app, key);
  expect(won.body.status).toBe('reserved');
  expect((await app.post('/v1/idempotency/completions', { key, leaseToken: won.body.leaseToken, result })).status).toBe(200);
  expect((await app.get(`/v1/idempotency/keys/${key}`)).body).toMatchObject({ status: 'completed', result });
}

const generation = async (schema: string) => ((await sql.query(`SELECT generation::text AS g FROM ${schema}.projection_logs`)) as { g: string }[]).map((r) => r.g);

describe('a projection kept across a lost log', () => {
  it('is rebuilt from the new log on start when the topic was deleted and recreated: GET and a reservation agree', async () => {
    const namespace = await provisionedNamespace(kafka);
    const schema = SERVICES['idempotency-ledger'].schema; // the live schema `replay --compare` reads
    const key = newKey();
    const first = await boot(namespace, schema);
    await complete(first, key);
    const before = await generation(schema);
    await stop(first);

    await replaceTopic(kafka, 'ledger', namespace);
    // `replay --compare` refuses to call rows of another log equal to anything.
    const printed: Record<string, unknown>[] = [];
    const env = { ...process.env, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_TOPIC_NAMESPACE: namespace };
    expect(await runReplayCli(SERVICES['idempotency-ledger'], ledgerProjection(TEST_KEYRING), { argv: ['--compare'], print: (l) => printed.push(l), env })).toBe(1);
    expect(printed).toEqual([expect.objectContaining({ equal: false, logChange: 'log-shorter' })]);

    const second = await boot(namespace, schema);
    expect((await second.get(`/v1/idempotency/keys/${key}`)).body).toMatchObject({ code: 'LEDGER.KEY_NOT_FOUND' });
    expect((await reserve(second, key)).body.status).toBe('reserved');
    expect((await second.get(`/v1/idempotency/keys/${key}`)).body).toMatchObject({ status: 'pending' });
    expect((await second.get('/health')).body).toMatchObject({ status: 'ok', checks: { projection: { status: 'up' } } });
    expect(await generation(schema)).not.toEqual(before);
    // Rebuilt and bound to the new log, the live projection now equals a replay of it.
    printed.length = 0;
    await waitFor(() => (JSON.stringify(second.engine.status().projectedOffsets) === JSON.stringify(second.engine.status().appliedOffsets) ? true : undefined));
    expect(await runReplayCli(SERVICES['idempotency-ledger'], ledgerProjection(TEST_KEYRING), { argv: ['--compare'], print: (l) => printed.push(l), env })).toBe(0);
    expect(printed).toEqual([expect.objectContaining({ equal: true })]);
  });

  it('is rebuilt when the recreated topic already grew past the stored offsets (the anchors are of another log)', async () => {
    const namespace = await provisionedNamespace(kafka);
    schemaCount += 1;
    const schema = `ledger_log_${schemaCount}`;
    const key = newKey();
    const first = await boot(namespace, schema);
    await complete(first, key, { refunded: 25 });
    await stop(first);

    await replaceTopic(kafka, 'ledger', namespace);
    // Another replica with its own schema fills the new log past where the kept rows end, on the
    // key's own partition too: same offsets, other records.
    const other = await boot(namespace, `${schema}_other`);
    await complete(other, key, { refunded: 99 });
    await complete(other, newKey());
    await stop(other);
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(await projectionLogChange(sql.manager, admin, schema, specLog(ledgerProjection(TEST_KEYRING), topicName('ledger', namespace)))).toBe('anchor-differs');
    } finally {
      await admin.disconnect();
    }

    const second = await boot(namespace, schema);
    expect((await second.get(`/v1/idempotency/keys/${key}`)).body).toMatchObject({ status: 'completed', result: { refunded: 99 } });
    expect((await reserve(second, key)).body).toMatchObject({ status: 'completed', result: { refunded: 99 } });
  });

  it('drops the rows of another namespace kept in the same schema, instead of serving them', async () => {
    schemaCount += 1;
    const schema = `ledger_log_${schemaCount}`;
    const key = newKey();
    const first = await boot(await provisionedNamespace(kafka), schema);
    await complete(first, key);
    await stop(first);

    const second = await boot(await provisionedNamespace(kafka), schema);
    expect((await second.get(`/v1/idempotency/keys/${key}`)).status).toBe(404);
    expect((await reserve(second, key)).body.status).toBe('reserved');
  });

  it('refuses every route but /health while running once its topic is replaced, until a restart rebuilds it', async () => {
    const namespace = await provisionedNamespace(kafka);
    schemaCount += 1;
    const schema = `ledger_log_${schemaCount}`;
    const key = newKey();
    const app = await boot(namespace, schema);
    await complete(app, key);

    await replaceTopic(kafka, 'ledger', namespace);
    const logs = app.app.get<ProjectionLogs>(PROJECTION_LOGS);
    await waitFor(async () => {
      await logs.check();
      return logs.health().status === 'down' ? true : undefined;
    }, { what: 'the replaced log noticed', timeoutMs: 20_000 });
    // Its fold is the old log's: the engine stops deciding and sweeping.
    expect(app.engine.status().phase).toBe('stopped');
    const get = await app.get(`/v1/idempotency/keys/${key}`);
    expect({ status: get.status, body: get.body }).toEqual({ status: 503, body: expect.objectContaining({ code: 'PROJECTION.LOG_CHANGED', details: { projection: 'ledger', change: 'log-shorter' } }) });
    expect((await reserve(app, key)).body).toMatchObject({ code: 'PROJECTION.LOG_CHANGED' });
    const health = await app.get('/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'unavailable', checks: { projection: { status: 'down', code: 'PROJECTION.LOG_CHANGED', projections: [{ projection: 'ledger', state: 'changed', change: 'log-shorter' }] } } });
    await stop(app);

    const restarted = await boot(namespace, schema);
    expect((await restarted.get(`/v1/idempotency/keys/${key}`)).status).toBe(404);
    expect((await reserve(restarted, key)).body.status).toBe('reserved');
  });
});
