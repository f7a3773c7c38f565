import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { RequestContext } from '@mastra/core/request-context';
import { topicName } from '@gatehouse/contracts';
import { AGENT_AUDIT_CONTEXT_KEY, AuditLogger } from '@gatehouse/guard';
import {
  CONNECTOR_EXECUTION_CONTEXT_KEY,
  createConnector,
  createLedgerStores,
  IDEMPOTENCY_KEY_CONTEXT_KEY,
  idempotencyStorageKey,
  invokeConnector,
  type PermissionManifest,
  rateLimitStorageKey,
} from '@gatehouse/guard/connector-sdk';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { ledgerKeyOf } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import { z } from 'zod';
import { throwawayDatabase } from '../src/support/database.js';
import { ledgerAgent, ledgerAgentsEnv } from '../src/support/ledger-agent.js';
import { killAll, type Started, startService } from '../src/support/processes.js';

// Issue 15, attack 1, as an attacker runs it: plain HTTP on loopback to the idempotency ledger (the
// built service as a process, the real broker and PostgreSQL), holding either no credential at all
// or the API key of another tenant's agent (globex). The victim is tenant acme's guarded agent: a
// refund connector with an idempotency key, through createLedgerStores and its own key. The attacker
// knows all an approval request shows — the run id, so the business key, so the key the guard
// computes, and even the key the ledger stores. Every attempt is refused with a typed code, counted
// on the ledger's status, and leaves acme's keys and budgets as they were.

const victim = ledgerAgent(['acme'], 'agent:acme-bot');
const intruder = ledgerAgent(['globex'], 'agent:globex-bot');
const MAX_PENDING = 40;
const ANONYMOUS = { 'content-type': 'application/json' };
const HOLD_A_WEEK = 7 * 24 * 60 * 60 * 1000;

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let ledger: Started & { url: string };

beforeAll(async () => {
  kafka = testKafka('security-ledger');
  namespace = await provisionedNamespace(kafka, 'sec');
  database = await throwawayDatabase();
  ledger = await startService('idempotency-ledger', {
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_LEDGER_MAX_PENDING_KEYS: String(MAX_PENDING),
    ...ledgerAgentsEnv(victim, intruder),
  });
}, 120_000);

afterAll(async () => {
  killAll();
  await database?.drop();
});

/** Records on the ledger topic: a refused request must not add one. */
async function ledgerEnd(): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return (await admin.fetchTopicOffsets(topicName('ledger', namespace))).reduce((n, p) => n + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}

interface Answer {
  readonly status: number;
  readonly code: unknown;
  readonly text: string;
  readonly body: Record<string, unknown>;
}

async function send(headers: Record<string, string>, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${ledger.url}${path}`, body === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  const parsed = JSON.parse(text) as Record<string, unknown>;
  return { status: res.status, code: parsed['code'], text, body: parsed };
}

const refusals = async () => (await send(ANONYMOUS, '/v1/ledger/status')).body['refusals'] as Record<string, number>;

/** What the attacker computes for `business` in acme: the guard's key, and the key the ledger stores. */
function keysOf(business: string): { client: string; stored: string } {
  const client = idempotencyStorageKey({ tenant: 'acme', connectorId: 'payments.refund', key: business });
  return { client, stored: ledgerKeyOf('acme', client) };
}

/** Acme's guarded refund connector, its own agent key, a counting execute and the decisions it recorded. */
function victimGuard(permissions: Partial<PermissionManifest> = {}) {
  const { idempotencyStore, rateLimitStore } = createLedgerStores({ baseUrl: ledger.url, apiKey: victim.apiKey, connectorId: 'payments.refund' });
  const audit = new AuditLogger();
  const executed: unknown[] = [];
  const connector = createConnector({
    id: 'payments.refund',
    description: 'Refund an order',
    inputSchema: z.object({ orderId: z.string(), amount: z.number().positive() }),
    permissions: { sideEffect: 'write', idempotencyKey: true, ...permissions },
    idempotencyStore,
    rateLimitStore,
    audit,
    execute: async ({ orderId, amount }) => {
      executed.push(orderId);
      return { refundId: `rf-${orderId}-${randomUUID().slice(0, 8)}`, amount };
    },
  });
  const call = (runId: string, orderId: string, amount = 25) => {
    const rc = new RequestContext();
    rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'acme-bot', runId, entryPath: 'security-test' });
    rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'refund', runId });
    rc.set(IDEMPOTENCY_KEY_CONTEXT_KEY, `refund-${runId}-${orderId}`);
    return invokeConnector(connector, { orderId, amount }, { requestContext: rc }) as Promise<{ refundId: string; amount: number }>;
  };
  return { call, executed, codes: () => audit.events().map((e) => e.code) };
}

/** The attacker's attempts with no credential and as globex's agent naming acme: refused, typed, and nothing on the log. */
async function refusedEverywhere(attempts: readonly { path: string; body?: Record<string, unknown> }[]): Promise<void> {
  const before = await ledgerEnd();
  const counted = await refusals();
  for (const { path, body } of attempts) {
    const anonymous = await send(ANONYMOUS, path, body);
    expect({ path, status: anonymous.status, code: anonymous.code }).toEqual({ path, status: 401, code: 'LEDGER.UNAUTHENTICATED' });
    const asAcme = await send(intruder.headers, body === undefined ? `${path}?tenant=acme` : path, body === undefined ? undefined : { ...body, tenant: 'acme' });
    expect({ path, status: asAcme.status, code: asAcme.code }).toEqual({ path, status: 403, code: 'LEDGER.FORBIDDEN' });
  }
  expect(await ledgerEnd()).toBe(before);
  const now = await refusals();
  expect(now['LEDGER.UNAUTHENTICATED']).toBe((counted['LEDGER.UNAUTHENTICATED'] ?? 0) + attempts.length);
  expect(now['LEDGER.FORBIDDEN']).toBe((counted['LEDGER.FORBIDDEN'] ?? 0) + attempts.length);
}

describe('the idempotency ledger against an outsider', () => {
  it("cannot read a run's recorded result", async () => {
    const guard = victimGuard();
    const runId = `run-${randomUUID()}`;
    const recorded = await guard.call(runId, 'o-1042');
    const { client, stored } = keysOf(`refund-${runId}-o-1042`);
    await refusedEverywhere([{ path: `/v1/idempotency/keys/${client}` }, { path: `/v1/idempotency/keys/${stored}` }]);
    // In its own tenant the intruder finds nothing under either key, and never the refund.
    for (const asked of [client, stored]) {
      const own = await send(intruder.headers, `/v1/idempotency/keys/${asked}`);
      expect({ status: own.status, code: own.code }).toEqual({ status: 404, code: 'LEDGER.KEY_NOT_FOUND' });
      expect(own.text).not.toContain(recorded.refundId);
    }
    // The owner reads it.
    expect((await send(victim.headers, `/v1/idempotency/keys/${client}`)).body).toMatchObject({ status: 'completed', result: recorded });
  });

  it('cannot plant a forged result for the real guard to replay: the real call runs once and returns its own result', async () => {
    const guard = victimGuard();
    const runId = `run-${randomUUID()}`;
    const { client, stored } = keysOf(`refund-${runId}-o-7`);
    const forged = { refundId: 'rf-forged', amount: 0.01 };
    const attempts = [client, stored].flatMap((key) => [
      { path: '/v1/idempotency/reservations', body: { key, connectorId: 'payments.refund', holder: 'attacker', pendingTtlMs: 60_000 } },
      { path: '/v1/idempotency/completions', body: { key, leaseToken: randomUUID(), result: forged } },
      { path: '/v1/idempotency/reconciliations', body: { key, leaseToken: randomUUID(), outcome: 'already-applied', result: forged } },
    ]);
    await refusedEverywhere(attempts);
    // What the intruder can do is reserve and complete those keys in its own tenant: no key of acme's.
    for (const key of [client, stored]) {
      const won = await send(intruder.headers, '/v1/idempotency/reservations', { key, connectorId: 'payments.refund', holder: 'attacker', pendingTtlMs: 60_000 });
      expect(won.body).toMatchObject({ status: 'reserved' });
      expect((await send(intruder.headers, '/v1/idempotency/completions', { key, leaseToken: won.body['leaseToken'], result: forged })).status).toBe(200);
    }
    expect((await send(victim.headers, `/v1/idempotency/keys/${client}`)).status).toBe(404);

    const first = await guard.call(runId, 'o-7');
    expect(guard.executed).toEqual(['o-7']);
    expect(first).toEqual({ refundId: expect.stringMatching(/^rf-o-7-/), amount: 25 });
    expect(guard.codes()).toContain('CONNECTOR.ALLOWED');
    expect(guard.codes()).not.toContain('CONNECTOR.REPLAYED');
    // The retry replays the call's own result, and it still ran once.
    expect(await guard.call(runId, 'o-7')).toEqual(first);
    expect(guard.executed).toEqual(['o-7']);
    expect(guard.codes().filter((c) => c === 'CONNECTOR.REPLAYED')).toHaveLength(1);
  });

  it('cannot block a key: the real call runs at once', async () => {
    const guard = victimGuard();
    const runId = `run-${randomUUID()}`;
    const { client, stored } = keysOf(`refund-${runId}-o-9`);
    await refusedEverywhere([client, stored].map((key) => ({ path: '/v1/idempotency/reservations', body: { key, connectorId: 'payments.refund', holder: 'attacker', pendingTtlMs: HOLD_A_WEEK } })));
    // Held for a week in globex, it holds nothing of acme's.
    expect((await send(intruder.headers, '/v1/idempotency/reservations', { key: client, connectorId: 'payments.refund', holder: 'attacker', pendingTtlMs: HOLD_A_WEEK })).body).toMatchObject({ status: 'reserved' });
    await guard.call(runId, 'o-9');
    expect(guard.executed).toEqual(['o-9']);
    expect(guard.codes()).not.toContain('CONNECTOR.IDEMPOTENCY_PENDING');
  });

  it("cannot drain a tenant's budget", async () => {
    const guard = victimGuard({ rateLimit: '3/hour' });
    const budgetKey = rateLimitStorageKey({ tenant: 'acme', connectorId: 'payments.refund' });
    const spend = { path: '/v1/rate/consumptions', body: { budgetKey, algorithm: 'fixed-window', count: 3, windowMs: 3_600_000 } };
    await refusedEverywhere(Array.from({ length: 10 }, () => spend));
    // The intruder spends its own tenant's budget of that name, not acme's.
    const own = await Promise.all(Array.from({ length: 5 }, () => send(intruder.headers, spend.path, spend.body)));
    expect(own.map((a) => a.body['allowed'])).toEqual(expect.arrayContaining([true, false]));
    // Acme's agent still has its whole budget: three refunds run, the fourth is refused by the limit.
    const runId = `run-${randomUUID()}`;
    for (const order of ['o-1', 'o-2', 'o-3']) await guard.call(runId, order);
    await expect(guard.call(runId, 'o-4')).rejects.toMatchObject({ code: 'CONNECTOR.RATE_LIMITED' });
    expect(guard.executed).toEqual(['o-1', 'o-2', 'o-3']);
  });

  it('cannot flood the ledger with pending keys', async () => {
    const fresh = () => ({ path: '/v1/idempotency/reservations', body: { key: keysOf(randomUUID()).client, connectorId: 'payments.refund', holder: 'attacker', pendingTtlMs: HOLD_A_WEEK } });
    await refusedEverywhere(Array.from({ length: 50 }, fresh));
    // In its own tenant the intruder's pending keys stop at its bound; the rest are refused, typed.
    const before = await ledgerEnd();
    const counted = await refusals();
    const flood = await Promise.all(Array.from({ length: MAX_PENDING + 20 }, () => fresh()).map((a) => send(intruder.headers, a.path, a.body)));
    const reserved = flood.filter((a) => a.body['status'] === 'reserved').length;
    const limited = flood.filter((a) => a.status === 429 && a.code === 'LEDGER.PENDING_LIMIT').length;
    expect(reserved + limited).toBe(flood.length);
    expect(reserved).toBeLessThanOrEqual(MAX_PENDING);
    expect(limited).toBeGreaterThanOrEqual(20);
    expect(await ledgerEnd()).toBe(before + reserved);
    expect((await refusals())['LEDGER.PENDING_LIMIT']).toBe((counted['LEDGER.PENDING_LIMIT'] ?? 0) + limited);
    expect((await send(intruder.headers, fresh().path, fresh().body)).status).toBe(429);
    // Acme's agent is not held back by globex's keys.
    const guard = victimGuard();
    await guard.call(`run-${randomUUID()}`, 'o-5');
    expect(guard.executed).toEqual(['o-5']);
  });
});
