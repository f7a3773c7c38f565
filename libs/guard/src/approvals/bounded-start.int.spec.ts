// Bounded history (issue 17), on the real broker with the agent principal's credentials: the
// gateway reads the approvals topic from the log time before which nothing can still grant, not
// from offset 0, and an agent that exploits the shorter read (asking again for an old call and
// copying its old signed decision back onto the log) obtains nothing.
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { approvalIdForCall } from '@gatehouse/approvals';
import { ApprovalDecidedV2, canonicalJson, createEvent, type Scope, signEvent, type TopicEvent } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { DEFAULT_KAFKA_PRINCIPALS, EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from './kafka-approval-gateway.js';
import { type ApprovalRequestInput } from './types.js';

// Short limits so the test can wait past them: a request pends at most 1.5 s, a grant lives 1.5 s.
const LIMITS = { maxApprovalWaitMs: 1_500, grantTtlMs: 1_500 };
const WINDOW_MS = LIMITS.maxApprovalWaitMs + LIMITS.grantTtlMs;

let admin: Kafka;
let agent: Kafka;
const open: { close(): Promise<void> }[] = [];

beforeAll(() => {
  admin = testKafka('bounded-start-int');
  agent = testKafka('bounded-start-agent', DEFAULT_KAFKA_PRINCIPALS.agent);
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

const hash = (s: string) => createHash('sha256').update(s).digest('hex');
const requester = { id: 'agent:billing', role: 'agent', kind: 'agent' as const };
const alice = { id: 'user:alice', role: 'approver', kind: 'human' as const };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function request(executionId: string, deadlineMs = 1_400): ApprovalRequestInput {
  const call = { tenant: 'acme', connectorId: 'payments.refund', executionId, toolCallId: 'call-1' };
  return { call, arguments: { amount: 5 }, requester, reason: 'refunds need a person', deadline: new Date(Date.now() + deadlineMs).toISOString() };
}
const scopeOf = (r: ApprovalRequestInput): Scope => ({ tenant: r.call.tenant, connectorId: r.call.connectorId, executionId: r.call.executionId, argumentsHash: hash(canonicalJson(r.arguments)) });
const idOf = (r: ApprovalRequestInput) => approvalIdForCall(scopeOf(r), requester.id, r.call.toolCallId);

function gateway(namespace: string): KafkaApprovalGateway {
  const g = createKafkaApprovalGateway({ kafka: agent, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:bounded-start', ...LIMITS });
  open.push(g);
  return g;
}

async function producer(kafka: Kafka, namespace: string): Promise<EventProducer> {
  const p = await EventProducer.connect(kafka, { namespace });
  open.push(p);
  return p;
}

async function log(namespace: string): Promise<{ event: TopicEvent<'approvals'>; logTime: number }[]> {
  const records: { event: TopicEvent<'approvals'>; logTime: number }[] = [];
  await replayTopic(admin, 'approvals', { namespace, onRecord: (r) => void records.push({ event: r.event, logTime: r.logTime.getTime() }) });
  return records;
}

/** The approval service's decision on the request for `approvalId` on the log: signed, naming that request. */
async function approve(namespace: string, service: EventProducer, approvalId: string) {
  const asked = await waitFor(async () => (await log(namespace)).find((r) => r.event.type === 'ApprovalRequested' && r.event.payload.approvalId === approvalId), { what: 'the request on the log' });
  const decision = signEvent(
    createEvent(ApprovalDecidedV2, { source: 'service:approval', tenant: 'acme', subject: approvalId, causationId: asked.event.id }, { approvalId, verdict: 'approve', reviewer: alice, useBy: new Date(Date.now() + 1_000).toISOString() }),
    TEST_KEYS.approval,
  );
  await service.publish('approvals', decision);
  return decision;
}

describe('the agent gateway starts at the grant horizon', () => {
  it('reads only what was logged since the horizon, and still finds a live approval', async () => {
    const namespace = await provisionedNamespace(admin);
    const service = await producer(admin, namespace);
    const first = gateway(namespace);
    // History: 20 approvals asked for and approved, all settled by the time the next gateway starts.
    for (let i = 0; i < 20; i += 1) {
      const r = request(`run-old-${i}`);
      const waiting = first.awaitApproval(r, { timeoutMs: 5_000 });
      await approve(namespace, service, idOf(r));
      await expect(waiting).resolves.toMatchObject({ grant: { approvalId: idOf(r) } });
    }
    await first.close();
    await sleep(WINDOW_MS + 500);
    // A live one: asked for now, decided after the next gateway has started.
    const live = request('run-live');
    const second = gateway(namespace);
    await second.start();
    const before = second.stats();
    expect(before.records).toBe(0);
    expect(Date.parse(before.readFrom ?? '')).toBeGreaterThan((await log(namespace))[39]?.logTime ?? Number.NaN);
    const waiting = second.awaitApproval(live, { timeoutMs: 5_000 });
    await approve(namespace, service, idOf(live));
    await expect(waiting).resolves.toMatchObject({ grant: { approvalId: idOf(live) } });
    expect(second.stats().records).toBe(2);
    expect((await log(namespace)).length).toBe(42);
  });

  it('attack: asking again for an old call and copying its signed decision back onto the log grants nothing', async () => {
    const namespace = await provisionedNamespace(admin);
    const service = await producer(admin, namespace);
    const first = gateway(namespace);
    const old = request('run-replayed');
    const waiting = first.awaitApproval(old, { timeoutMs: 5_000 });
    const decision = await approve(namespace, service, idOf(old));
    await expect(waiting).resolves.toMatchObject({ grant: { approvalId: idOf(old) } });
    await first.close();
    await sleep(WINDOW_MS + 500);

    // The agent starts again past the horizon: it holds no approval for the call and asks anew.
    const second = gateway(namespace);
    const again = second.awaitApproval(request('run-replayed'), { timeoutMs: 2_500 });
    await waitFor(async () => ((await log(namespace)).filter((r) => r.event.type === 'ApprovalRequested').length === 2 ? true : undefined), { what: 'the second request' });
    // With only its own credentials it copies the old decision (a valid service signature) back.
    const attacker = await producer(agent, namespace);
    await attacker.publish('approvals', decision);
    await expect(again).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
    const copies = (await log(namespace)).filter((r) => r.event.id === decision.id);
    expect(copies).toHaveLength(2);
    expect(second.stats().records).toBe(2);
  }, 30_000);
});

describe('a long-running agent gateway', () => {
  it('forgets settled approvals as the service does, so its memory follows the retention window, and a forgotten grant cannot be copied back', async () => {
    const namespace = await provisionedNamespace(admin);
    const service = await producer(admin, namespace);
    const g = createKafkaApprovalGateway({ kafka: agent, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:long-running', ...LIMITS, retainMs: 1_000 });
    open.push(g);
    // Each request is made when it is asked: its deadline runs from then, not from before the
    // eleven before it were decided (a slow machine let the last ones expire: CI saw it).
    const settled: ApprovalRequestInput[] = [];
    const decisions = [];
    for (let i = 0; i < 12; i += 1) {
      const r = request(`run-settled-${i}`);
      settled.push(r);
      const waiting = g.awaitApproval(r, { timeoutMs: 5_000 });
      decisions.push(await approve(namespace, service, idOf(r)));
      await expect(waiting).resolves.toMatchObject({ grant: { approvalId: idOf(r) } });
    }
    expect(g.stats().approvalsHeld).toBe(12);
    // Past the retention (and the grants' use-by), the log moves on: new requests on every partition
    // advance their partitions' log time, and the settled ones are let go of; the pending stay.
    await sleep(2_000);
    const pending = Array.from({ length: 12 }, (_, i) => request(`run-pending-${i}`, 1_400));
    const asked = pending.map((r) => g.awaitApproval(r, { timeoutMs: 1_200 }).catch((e: { code?: string }) => e.code));
    await waitFor(async () => ((await log(namespace)).filter((r) => r.event.type === 'ApprovalRequested').length === 24 ? true : undefined), { what: 'the new requests' });
    await sleep(1_100);
    // One more record after the sweep interval lets the sweep run.
    const late = g.awaitApproval(request('run-late', 1_400), { timeoutMs: 1_000 }).catch((e: { code?: string }) => e.code);
    expect(await Promise.all(asked)).toEqual(pending.map(() => 'APPROVAL.TIMEOUT'));
    expect(await late).toBe('APPROVAL.TIMEOUT');
    const held = await waitFor(() => (g.stats().approvalsHeld <= 13 ? g.stats().approvalsHeld : undefined), { what: 'the settled approvals forgotten', timeoutMs: 5_000 });
    expect(held).toBeLessThanOrEqual(13);
    // With only its credentials the agent asks again for a forgotten call and copies its old decision back: no grant.
    const again = g.awaitApproval(settled[0] as ApprovalRequestInput, { timeoutMs: 2_000 });
    const attacker = await producer(agent, namespace);
    await waitFor(async () => ((await log(namespace)).filter((r) => r.event.type === 'ApprovalRequested' && r.event.payload.approvalId === idOf(settled[0] as ApprovalRequestInput)).length === 2 ? true : undefined), { what: 'the request asked again' });
    await attacker.publish('approvals', decisions[0] as TopicEvent<'approvals'>);
    await expect(again).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
  }, 45_000);
});

describe('the limits that bound the start', () => {
  const base = () => ({ kafka: agent, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace: 'never-used' });

  it('are refused when out of range, with a typed error and nothing started', () => {
    for (const bad of [{ maxApprovalWaitMs: 0 }, { maxApprovalWaitMs: 31 * 24 * 3600 * 1000 }, { maxApprovalWaitMs: 1.5 }, { grantTtlMs: -1 }, { grantTtlMs: 8 * 24 * 3600 * 1000 }, { grantTtlMs: '60000' }, { retainMs: 999 }, { retainMs: 1.5 }, { retainMs: '60000' }]) {
      expect(() => createKafkaApprovalGateway({ ...base(), ...(bad as object) })).toThrow(TypeError);
    }
  });

  it('refuse a request whose deadline is further away than the longest wait, before anything is sent', async () => {
    const g = createKafkaApprovalGateway({ ...base(), maxApprovalWaitMs: 60_000 });
    open.push(g);
    await expect(g.awaitApproval(request('run-too-far', 120_000), { timeoutMs: 1_000 })).rejects.toMatchObject({ code: 'APPROVAL.REQUEST_INVALID' });
    expect(g.stats().readersStarted).toBe(0);
  });
});
