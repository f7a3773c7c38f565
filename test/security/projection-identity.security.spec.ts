import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { topicName } from '@gatehouse/contracts';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { replaceTopic } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';

// Issue 15, attack 8: "projections are not tied to the log they came from: a database that
// outlived its broker keeps serving rows (a key answers "completed" on GET while a reservation of
// it answers "reserved")". Run as it happens: an agent, over plain HTTP with its own ledger key,
// completes a key; the broker's ledger log is lost under the kept database (the topic deleted and
// recreated as admin, which is what an operator's broker loss looks like to the database); the
// built idempotency-ledger service, started as a process, must never answer a row of the dead
// log. On start it rebuilds the projection from offset 0 of the new log and says so in its log
// (a stable code, no data); while running, it refuses every route but /health until restarted.

const AGENT_KEY = `lk_${randomUUID()}`;
const AGENTS = JSON.stringify([{ id: 'agent:acme', apiKeySha256: createHash('sha256').update(AGENT_KEY).digest('hex'), tenants: ['acme'] }]);

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let ledger: Started & { url: string; port: number };

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** The agent's HTTP: its ledger key and nothing else. */
async function call(method: 'GET' | 'POST', route: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${ledger.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${AGENT_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const reserve = (key: string) => call('POST', '/v1/idempotency/reservations', { key, connectorId: 'payments.refund', holder: 'call-1', pendingTtlMs: 60_000 });
const getKey = (key: string) => call('GET', `/v1/idempotency/keys/${key}`);

async function complete(key: string, result: Record<string, unknown>): Promise<void> {
  const won = await reserve(key);
  expect(won.body['status']).toBe('reserved');
  expect((await call('POST', '/v1/idempotency/completions', { key, leaseToken: won.body['leaseToken'], result })).status).toBe(200);
  expect((await getKey(key)).body).toMatchObject({ status: 'completed', result });
}

const start = (port?: number) =>
  startService('idempotency-ledger', {
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database?.url ?? '',
    GATEHOUSE_LEDGER_AGENTS: AGENTS,
    ...(port === undefined ? {} : { GATEHOUSE_PORT: String(port) }),
  });

async function restart(): Promise<void> {
  ledger.child.kill('SIGTERM');
  expect(await ledger.exited()).toBe(0);
  ledger = await start(ledger.port);
}

/** Records on the ledger log now: a refused request must not move it. */
async function ledgerRecords(): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return (await admin.fetchTopicOffsets(topicName('ledger', namespace))).reduce((n, o) => n + Number(o.high), 0);
  } finally {
    await admin.disconnect();
  }
}

const keyOf = () => createHash('sha256').update(randomUUID()).digest('hex');

beforeAll(async () => {
  kafka = testKafka('security-projection-identity');
  namespace = await provisionedNamespace(kafka, 'sec');
  database = await throwawayDatabase('gh_sec');
  ledger = await start();
}, 120_000);

afterAll(async () => {
  killAll();
  await database?.drop();
});

describe('a ledger database that outlived its log', () => {
  it('never answers "completed" from the dead log after a restart: GET and a reservation agree, and the rebuild is reported', async () => {
    const key = keyOf();
    await complete(key, { refunded: 25, order: 'A-1' });

    await replaceTopic(kafka, 'ledger', namespace);
    await restart();

    const got = await getKey(key);
    expect({ status: got.status, code: got.body['code'] }).toEqual({ status: 404, code: 'LEDGER.KEY_NOT_FOUND' });
    const reservation = await reserve(key);
    expect(reservation.body['status']).toBe('reserved');
    expect((await getKey(key)).body).toMatchObject({ status: 'pending' });
    // Reported: the stable code and the reason, never the key or the result of the dead log.
    const line = ledger.output().split('\n').find((l) => l.includes('PROJECTION.LOG_CHANGED')) ?? '';
    expect(line).toContain('log-shorter');
    expect(line).toContain('rebuilt it from offset 0');
    expect(ledger.output()).not.toContain(key);
    expect(ledger.output()).not.toContain('A-1');
    // The positive path on the new log: the key completes once and replays its result.
    expect((await call('POST', '/v1/idempotency/completions', { key, leaseToken: reservation.body['leaseToken'], result: { refunded: 25, order: 'A-2' } })).status).toBe(200);
    expect((await reserve(key)).body).toMatchObject({ status: 'completed', result: { refunded: 25, order: 'A-2' } });
    const health = await call('GET', '/health');
    expect(health).toMatchObject({ status: 200, body: { status: 'ok', checks: { projection: { status: 'up' } } } });
  }, 120_000);

  it('refuses every route but /health while running once its log is replaced, changing nothing, until a restart rebuilds it', async () => {
    const key = keyOf();
    await complete(key, { refunded: 40 });

    await replaceTopic(kafka, 'ledger', namespace);
    const health = await waitFor(async () => {
      const answer = await call('GET', '/health');
      return answer.status === 503 ? answer : undefined;
    }, { what: 'the running service to notice its log was replaced', timeoutMs: 40_000, intervalMs: 500 });
    expect(health.body).toMatchObject({ checks: { projection: { status: 'down', code: 'PROJECTION.LOG_CHANGED', projections: [{ projection: 'ledger', state: 'changed', change: 'log-shorter' }] } } });
    const before = await ledgerRecords();
    const got = await getKey(key);
    expect({ status: got.status, code: got.body['code'] }).toEqual({ status: 503, code: 'PROJECTION.LOG_CHANGED' });
    const refused = await reserve(key);
    expect({ status: refused.status, code: refused.body['code'] }).toEqual({ status: 503, code: 'PROJECTION.LOG_CHANGED' });
    expect(await ledgerRecords()).toBe(before);

    await restart();
    expect((await getKey(key)).status).toBe(404);
    expect((await reserve(key)).body['status']).toBe('reserved');
  }, 120_000);
});
