import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { applyLedgerEvent, createLedgerState, ledgerBudgetKeyOf } from '@gatehouse/ledger';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from './support/database.js';
import { agentKafkaEnv } from './support/kafka-auth.js';
import { ledgerAgent, ledgerAgentsEnv } from './support/ledger-agent.js';
import { killAll, ROOT, type Started, startNode, startService } from './support/processes.js';

// The idempotency ledger as users meet it: the built service as a process, agent processes
// as real child processes, the real broker and PostgreSQL.
const worker = path.join(ROOT, 'test/src/fixtures/ledger-worker.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-ledger-e2e-'));
let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let ledger: Started & { url: string };
// The agent processes' identity at the ledger: one agent key of the tenant their calls are in.
const agent = ledgerAgent();

beforeAll(async () => {
  kafka = testKafka('ledger-e2e');
  namespace = await provisionedNamespace(kafka, 'e2e');
  database = await throwawayDatabase();
  ledger = await startService('idempotency-ledger', { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, ...ledgerAgentsEnv(agent) });
}, 120_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

function runWorker(mode: string, args: Record<string, unknown>): Started {
  // An agent process: it reaches the ledger over REST only, with its agent key, and runs as the `agent` principal.
  return startNode(worker, [mode, JSON.stringify({ baseUrl: ledger.url, ...args })], { ...agentKafkaEnv(), ...agent.agentEnv });
}

async function finished(started: Started): Promise<string> {
  const code = await started.exited();
  if (code !== 0) throw new Error(`worker exited ${code}: ${started.output().slice(-2000)}`);
  return started.output().trim().split('\n').filter((l) => l.startsWith('{')).at(-1) ?? '';
}

const hex = (s: string) => createHash('sha256').update(s).digest('hex');

describe('exactly-once tool execution across processes', () => {
  it('executes each of 1,000 keys exactly once while 8 processes race on all of them, and every caller gets the same result', async () => {
    const effects = path.join(dir, 'effects.log');
    writeFileSync(effects, '');
    const workers = Array.from({ length: 8 }, () => runWorker('idempotency', { keys: 1_000, effects, concurrency: 8 }));
    const outputs = await Promise.all(workers.map(finished));
    const lines = readFileSync(effects, 'utf8').trim().split('\n');
    const orders = lines.map((l) => l.split(' ')[0]);
    expect(lines).toHaveLength(1_000);
    expect(new Set(orders).size).toBe(1_000);
    const results = outputs.map((o) => JSON.parse(o) as Record<string, { shipped: string; by: number }>);
    for (const r of results) expect(Object.keys(r)).toHaveLength(1_000);
    for (const r of results.slice(1)) expect(r).toEqual(results[0]);
    // The recorded executor of each key is the process that appended its line.
    const executor = new Map(lines.map((l) => [l.split(' ')[0], Number(l.split(' ')[1])]));
    for (const [order, result] of Object.entries(results[0] ?? {})) expect(result.by).toBe(executor.get(order));
  }, 300_000);
});

describe('a holder that dies mid-execution', () => {
  it('is taken over after the TTL, and its late completion is refused', async () => {
    const key = hex('crash-test-key');
    const holder = runWorker('hold', { key, pendingTtlMs: 1_500 });
    const reservation = await waitFor(() => {
      const line = holder.output().trim().split('\n')[0];
      return line ? (JSON.parse(line) as { status: string; leaseToken: string }) : undefined;
    }, { what: 'the holder to reserve' });
    expect(reservation.status).toBe('reserved');
    holder.child.kill('SIGKILL');
    await holder.exited();

    const post = async (route: string, body: unknown) => {
      const res = await fetch(`${ledger.url}${route}`, { method: 'POST', headers: agent.headers, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const early = await post('/v1/idempotency/reservations', { key, connectorId: 'orders.ship', holder: 'second', pendingTtlMs: 1_500 });
    expect(early.body['status']).toBe('pending');
    const takeover = await waitFor(async () => {
      const r = await post('/v1/idempotency/reservations', { key, connectorId: 'orders.ship', holder: 'second', pendingTtlMs: 1_500 });
      return r.body['status'] === 'reserved' ? r.body : undefined;
    }, { what: 'the takeover', timeoutMs: 20_000, intervalMs: 200 });
    expect(takeover['takenOver']).toBe(true);

    const late = await post('/v1/idempotency/completions', { key, leaseToken: reservation.leaseToken, result: { shipped: 'late' } });
    expect(late.status).toBe(409);
    const reconciled = await post('/v1/idempotency/reconciliations', { key, leaseToken: takeover['leaseToken'], outcome: 'not-applied' });
    expect(reconciled.status).toBe(200);
    const done = await post('/v1/idempotency/completions', { key, leaseToken: takeover['leaseToken'], result: { shipped: 'second' } });
    expect(done.status).toBe(200);
    expect((await post('/v1/idempotency/reservations', { key, connectorId: 'orders.ship', holder: 'third', pendingTtlMs: 1_500 })).body).toMatchObject({ status: 'completed', result: { shipped: 'second' } });
  }, 60_000);
});

describe('shared rate limits across processes', () => {
  async function admittedTimes(budgetKey: string): Promise<number[]> {
    const state = createLedgerState(TEST_KEYRING);
    const times: number[] = [];
    await replayTopic(kafka, 'ledger', {
      namespace,
      onRecord: ({ event, logTime }) => {
        const verdict = applyLedgerEvent(state, event, logTime.getTime());
        // The ledger stores the agents' budget key scoped by their tenant.
        if (event.type === 'LedgerRateConsumed' && event.payload.budgetKey === ledgerBudgetKeyOf('default', budgetKey) && verdict.kind === 'admitted') times.push(logTime.getTime());
      },
    });
    return times;
  }

  it('never admits more than the budget in a window, counted over 4 processes', async () => {
    const budgetKey = hex('fixed-budget');
    const args = { budgetKey, count: 25, windowMs: 3_600_000, algorithm: 'fixed-window', durationMs: 3_000, pauseMs: 5 };
    const started = Date.now();
    const outputs = (await Promise.all(Array.from({ length: 4 }, () => finished(runWorker('rate', args))))).map((o) => JSON.parse(o) as { admitted: number; refused: number });
    const windows = Math.floor(Date.now() / 3_600_000) - Math.floor(started / 3_600_000) + 1;
    const admitted = outputs.reduce((n, o) => n + o.admitted, 0);
    expect(outputs.reduce((n, o) => n + o.refused, 0)).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(25 * windows);
    expect(admitted).toBeGreaterThanOrEqual(25);
    expect(await admittedTimes(budgetKey)).toHaveLength(admitted);
  }, 60_000);

  it('with a sliding window never admits more than the budget in any window-length interval, across boundaries', async () => {
    const budgetKey = hex('sliding-budget');
    const args = { budgetKey, count: 5, windowMs: 1_000, algorithm: 'sliding-window', durationMs: 4_000, pauseMs: 20 };
    const outputs = (await Promise.all(Array.from({ length: 4 }, () => finished(runWorker('rate', args))))).map((o) => JSON.parse(o) as { admitted: number });
    const times = await admittedTimes(budgetKey);
    expect(times).toHaveLength(outputs.reduce((n, o) => n + o.admitted, 0));
    for (const start of times) expect(times.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(5);
    expect(times.length).toBeGreaterThanOrEqual(15);
  }, 60_000);
});
