import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { replaceTopic } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import { DataSource } from 'typeorm';
import { type AuditApp, startAuditApp } from '../testing/audit-app.js';
import { decision } from '../testing/decisions.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

// Issue 15, attack 8, for the audit trail: on a log that is not the one its rows came from the
// service refuses (it does not rebuild: the rows may be the only copy left of what the broker
// lost), serves none of it, keeps the rows, and /health says why.

let kafka: Kafka;
let db: TestDatabase;
let sql: DataSource;
const running: AuditApp[] = [];
let schemaCount = 0;

beforeAll(async () => {
  kafka = testKafka('audit-projection-log-it');
  db = await createTestDatabase();
  sql = new DataSource({ type: 'postgres', url: db.url, logging: ['error'] });
  await sql.initialize();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
});

afterAll(async () => {
  if (sql?.isInitialized) await sql.destroy();
  await db?.drop();
});

async function boot(namespace: string, schema: string): Promise<AuditApp> {
  const app = await startAuditApp({ namespace, databaseUrl: db.url, schema, export: { name: 'siem', from: { kind: 'earliest' } } });
  running.push(app);
  return app;
}

async function stop(app: AuditApp): Promise<void> {
  running.splice(running.indexOf(app), 1);
  await app.close();
}

/** Publishes a decision of `runId` and waits until the app's query API has it. */
async function project(app: AuditApp, namespace: string, runId: string): Promise<string> {
  const producer = await EventProducer.connect(kafka, { namespace });
  const event = decision({ runId });
  try {
    await producer.publish('audit', event);
  } finally {
    await producer.close();
  }
  await waitFor(async () => ((await app.get(`/v1/decisions/${event.id}`)).status === 200 ? true : undefined), { what: 'the decision projected' });
  return event.id;
}

const rows = async (schema: string) => Number(((await sql.query(`SELECT count(*) AS n FROM ${schema}.decisions`)) as { n: string }[])[0]?.n);

describe('the decisions projection on another log', () => {
  it('refuses to serve rows of a replaced audit topic, keeps them, and says so on /health', async () => {
    const namespace = await provisionedNamespace(kafka);
    schemaCount += 1;
    const schema = `audit_log_${schemaCount}`;
    const first = await boot(namespace, schema);
    const id = await project(first, namespace, 'run-old');
    await stop(first);

    await replaceTopic(kafka, 'audit', namespace);
    const second = await boot(namespace, schema);
    expect(await second.runtime.bound()).toBe(false);
    for (const path of [`/v1/decisions/${id}`, '/v1/decisions?limit=10', '/v1/runs/run-old/timeline']) {
      const answer = await second.get(path);
      expect({ path, status: answer.status, code: answer.body['code'] }).toEqual({ path, status: 503, code: 'PROJECTION.LOG_CHANGED' });
    }
    const health = await second.get('/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ checks: { projection: { status: 'down', code: 'PROJECTION.LOG_CHANGED', projections: [{ projection: 'decisions', state: 'changed', change: 'log-shorter' }] } } });
    // Nothing was dropped, projected or exported: the evidence is kept for the operator.
    expect(await rows(schema)).toBe(1);
    expect(second.runtime.exportStatus()).toBeUndefined();
  });

  it('adopts positions stored before identities were kept when their anchors match the log', async () => {
    const namespace = await provisionedNamespace(kafka);
    schemaCount += 1;
    const schema = `audit_log_${schemaCount}`;
    const first = await boot(namespace, schema);
    const id = await project(first, namespace, 'run-kept');
    await stop(first);

    // As a schema of before: no identity and no anchors, the anchors' migration not yet run.
    await sql.query(`DELETE FROM ${schema}.projection_logs`);
    await sql.query(`UPDATE ${schema}.projection_offsets SET anchor_offset = NULL, anchor_time_ms = NULL`);
    await sql.query(`DELETE FROM ${schema}.typeorm_migrations WHERE name = 'DecisionsLogAnchors1765300000000'`);
    const second = await boot(namespace, schema);
    expect(await second.runtime.bound()).toBe(true);
    expect((await second.get(`/v1/decisions/${id}`)).status).toBe(200);
    const another = await project(second, namespace, 'run-next');
    expect((await second.get(`/v1/decisions/${another}`)).status).toBe(200);
  });
});
