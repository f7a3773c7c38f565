import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { approvalIdForCall } from '@gatehouse/approvals';
import { ApprovalDecidedV1, ApprovalExpiredV1, canonicalJson, createEvent, type DecisionRecorded, isDecisionRecorded, type JsonValue, type Keyring, type Scope, signEvent, type TopicEvent, verifyAuditSources } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS, testKeyring, testSigningKey } from '@gatehouse/contracts/testing';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, randomNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from './kafka-approval-gateway.js';
import { type ApprovalRequestInput } from './types.js';

let kafka: Kafka;
let reviewer: EventProducer | undefined;
const open: KafkaApprovalGateway[] = [];

beforeAll(() => {
  kafka = testKafka('approvals-gateway-int');
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((g) => g.close()));
  await reviewer?.close();
  reviewer = undefined;
});

afterAll(async () => {
  await Promise.all(open.splice(0).map((g) => g.close()));
});

const hash = (s: string) => createHash('sha256').update(s).digest('hex');
const requester = { id: 'agent:billing', role: 'agent', kind: 'agent' as const };
const alice = { id: 'user:alice', role: 'approver', kind: 'human' as const };

function request(executionId: string, deadlineMs = 60_000): ApprovalRequestInput {
  const call = { tenant: 'acme', connectorId: 'payments.refund', executionId, toolCallId: 'call-1' };
  return { call, arguments: { amount: 5 }, requester, reason: 'refunds need a person', deadline: new Date(Date.now() + deadlineMs).toISOString(), correlationId: executionId };
}
/** Without redactions the arguments hash is the plain sha-256 of their canonical JSON. */
const scopeOf = (r: ApprovalRequestInput): Scope => ({ tenant: r.call.tenant, connectorId: r.call.connectorId, executionId: r.call.executionId, argumentsHash: hash(canonicalJson(r.arguments)) });
const idOf = (r: ApprovalRequestInput) => approvalIdForCall(scopeOf(r), requester.id, r.call.toolCallId);

function gateway(namespace: string, client: Kafka = kafka, extra: { replayTimeoutMs?: number; keyring?: Keyring } = {}): KafkaApprovalGateway {
  const g = createKafkaApprovalGateway({ kafka: client, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:int-test', ...extra });
  open.push(g);
  return g;
}

async function review(namespace: string, approvalId: string, verdict: 'approve' | 'deny' | 'approve-with-edits', editedArguments?: JsonValue): Promise<void> {
  reviewer ??= await EventProducer.connect(kafka, { namespace });
  await reviewer.publish('approvals', signEvent(createEvent(ApprovalDecidedV1, { source: 'service:approval', tenant: 'acme', subject: approvalId }, { approvalId, verdict, reviewer: alice, ...(editedArguments === undefined ? {} : { editedArguments }) }), TEST_KEYS.approval));
}

async function log(namespace: string): Promise<TopicEvent<'approvals'>[]> {
  const events: TopicEvent<'approvals'>[] = [];
  await replayTopic(kafka, 'approvals', { namespace, onRecord: (r) => void events.push(r.event) });
  return events;
}

/** Polls the topic until `approvalId` has a request on it. */
async function requested(namespace: string, approvalId: string): Promise<void> {
  await waitFor(async () => ((await log(namespace)).some((e) => e.type === 'ApprovalRequested' && e.payload.approvalId === approvalId) ? true : undefined), { what: 'the approval request on the log' });
}

describe('Kafka approval gateway on the real broker', () => {
  it('asks once, waits, and resolves with the grant when a reviewer approves', async () => {
    const namespace = await provisionedNamespace(kafka);
    const g = gateway(namespace);
    const r = request('wf/run-approve');
    const waiting = g.awaitApproval(r, { timeoutMs: 30_000 });
    await requested(namespace, idOf(r));
    await review(namespace, idOf(r), 'approve');
    await expect(waiting).resolves.toMatchObject({ published: true, grant: { approvalId: idOf(r), scope: scopeOf(r), reviewer: alice } });
    const events = await log(namespace);
    expect(events.map((e) => e.type)).toEqual(['ApprovalRequested', 'ApprovalDecided']);
    expect(events[0]).toMatchObject({ subject: idOf(r), tenant: 'acme', correlationId: 'wf/run-approve', source: 'guard:int-test' });
    expect(g.stats()).toMatchObject({ readersStarted: 1, poison: 0 });
  });

  it('hands over edited arguments, and fails closed on a denial', async () => {
    const namespace = await provisionedNamespace(kafka);
    const g = gateway(namespace);
    const edited = request('wf/run-edit');
    const denied = request('wf/run-deny');
    // The expectations are attached at once: the denial may settle before the last publication below returns,
    // and a rejection nobody handles yet fails the run.
    const editing = expect(g.awaitApproval(edited, { timeoutMs: 30_000 })).resolves.toMatchObject({ grant: { editedArguments: { amount: 2 } } });
    const denying = expect(g.awaitApproval(denied, { timeoutMs: 30_000 })).rejects.toMatchObject({ code: 'APPROVAL.DENIED', details: { approvalId: idOf(denied) } });
    await requested(namespace, idOf(edited));
    await requested(namespace, idOf(denied));
    await review(namespace, idOf(edited), 'approve-with-edits', { amount: 2 });
    await review(namespace, idOf(denied), 'deny');
    await Promise.all([editing, denying]);
  });

  it('fails closed when the approval expires on the log', async () => {
    const namespace = await provisionedNamespace(kafka);
    const g = gateway(namespace);
    const r = request('wf/run-expire', 1_500);
    // The expectation is attached at once: the rejection may come before the publication below returns.
    const waiting = expect(g.awaitApproval(r, { timeoutMs: 30_000 })).rejects.toMatchObject({ code: 'APPROVAL.EXPIRED' });
    await requested(namespace, idOf(r));
    const deadline = Date.parse(r.deadline);
    await waitFor(() => (Date.now() > deadline + 100 ? true : undefined), { what: 'the deadline to pass' });
    reviewer = await EventProducer.connect(kafka, { namespace });
    await reviewer.publish('approvals', signEvent(createEvent(ApprovalExpiredV1, { source: 'service:approval', tenant: 'acme', subject: idOf(r) }, { approvalId: idOf(r), deadline: r.deadline }), TEST_KEYS.approval));
    await waiting;
  });

  it('times out without withdrawing the request, and withdraws it when the caller aborts', async () => {
    const namespace = await provisionedNamespace(kafka);
    const g = gateway(namespace);
    await g.start(); // the wait below then measures waiting, not the first replay
    const slow = request('wf/run-timeout');
    await expect(g.awaitApproval(slow, { timeoutMs: 3_000 })).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
    const aborted = request('wf/run-abort');
    const controller = new AbortController();
    const waiting = g.awaitApproval(aborted, { timeoutMs: 30_000, signal: controller.signal });
    await requested(namespace, idOf(aborted));
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'APPROVAL.ABORTED' });
    const events = await log(namespace);
    // The two approvals may sit on different partitions: order is promised per approval only.
    const named = (e: TopicEvent<'approvals'>) => `${e.type}:${e.payload.approvalId === idOf(slow) ? 'slow' : 'aborted'}`;
    expect(events.filter((e) => e.payload.approvalId !== idOf(slow)).map(named)).toEqual(['ApprovalRequested:aborted', 'ApprovalCancelled:aborted']);
    expect(events.filter((e) => e.payload.approvalId === idOf(slow)).map(named)).toEqual(['ApprovalRequested:slow']);
    expect(events.find((e) => e.type === 'ApprovalCancelled')?.payload).toMatchObject({ by: requester });
  });

  it('serves two gateways (two processes) and several waiters in one gateway at once', async () => {
    const namespace = await provisionedNamespace(kafka);
    const a = gateway(namespace, testKafka('approvals-process-a'));
    const b = gateway(namespace, testKafka('approvals-process-b'));
    const forA = [1, 2, 3, 4].map((i) => request(`wf/run-a${i}`));
    const forB = [1, 2].map((i) => request(`wf/run-b${i}`));
    // Outcomes are observed at once: a denial may settle before the others are decided.
    const outcome = (p: Promise<unknown>) => p.then(() => 'granted', (e: { code?: string }) => e.code);
    const waits = [...forA.map((r) => outcome(a.awaitApproval(r, { timeoutMs: 45_000 }))), ...forB.map((r) => outcome(b.awaitApproval(r, { timeoutMs: 45_000 })))];
    for (const r of [...forA, ...forB]) await requested(namespace, idOf(r));
    // Decisions in reverse order of the requests, one denial among them.
    const all = [...forA, ...forB].reverse();
    for (const r of all) await review(namespace, idOf(r), r === forA[1] ? 'deny' : 'approve');
    expect(await Promise.all(waits)).toEqual(['granted', 'APPROVAL.DENIED', 'granted', 'granted', 'granted', 'granted']);
    expect(a.stats().readersStarted).toBe(1);
    expect(b.stats().readersStarted).toBe(1);
  });

  it('a restarted process finds the decision by replay and never asks twice', async () => {
    const namespace = await provisionedNamespace(kafka);
    const r = request('wf/run-restart');
    const first = gateway(namespace);
    await first.start();
    await expect(first.awaitApproval(r, { timeoutMs: 3_000 })).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
    await first.close(); // the process dies while waiting
    const second = gateway(namespace);
    const waiting = second.awaitApproval(r, { timeoutMs: 30_000 }); // still pending: it just waits
    await review(namespace, idOf(r), 'approve');
    await expect(waiting).resolves.toMatchObject({ published: false, grant: { approvalId: idOf(r) } });
    const third = gateway(namespace); // started after the decision
    await expect(third.awaitApproval(r, { timeoutMs: 30_000 })).resolves.toMatchObject({ published: false });
    const requests = (await log(namespace)).filter((e) => e.type === 'ApprovalRequested');
    expect(requests).toHaveLength(1);
  });

  it('fails closed when the broker cannot be reached', async () => {
    const unreachable = createKafkaClient({ brokers: ['127.0.0.1:1'], clientId: 'approvals-unreachable', connectionTimeoutMs: 500 }, () => undefined);
    const g = gateway(randomNamespace(), unreachable, { replayTimeoutMs: 2_000 });
    await expect(g.start()).rejects.toMatchObject({ code: 'APPROVAL.UNAVAILABLE' });
    const started = Date.now();
    await expect(g.awaitApproval(request('wf/run-down'), { timeoutMs: 2_000 })).rejects.toMatchObject({ code: 'APPROVAL.UNAVAILABLE', retryable: true });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('fails closed when the approvals topic does not exist', async () => {
    const quiet = createKafkaClient(kafkaConfigFromEnv('approvals-no-topic'), () => undefined);
    const g = gateway(randomNamespace(), quiet, { replayTimeoutMs: 3_000 });
    await expect(g.awaitApproval(request('wf/run-no-topic'), { timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'APPROVAL.UNAVAILABLE' });
  });

  it('never grants on a decision the approval service did not sign, and reports it on the audit topic', async () => {
    const namespace = await provisionedNamespace(kafka);
    const g = gateway(namespace);
    await g.start();
    const r = request('wf/run-forged');
    const waiting = expect(g.awaitApproval(r, { timeoutMs: 6_000 })).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
    await requested(namespace, idOf(r));
    // The agent itself (its own Kafka principal) writes "approved" to the topic: unsigned, then with a key of its own making.
    reviewer = await EventProducer.connect(testKafka('approvals-rogue', 'agent'), { namespace });
    const forged = createEvent(ApprovalDecidedV1, { source: 'guard:rogue', tenant: 'acme', subject: idOf(r) }, { approvalId: idOf(r), verdict: 'approve', reviewer: alice });
    await reviewer.publish('approvals', forged);
    await reviewer.publish('approvals', signEvent(forged, testSigningKey('approval', 'rogue-key')));
    await waiting;
    expect(g.stats().untrusted).toBe(2);
    const reports = await waitFor(async () => {
      const audit: DecisionRecorded[] = [];
      await replayTopic(kafka, 'audit', { namespace, onRecord: (rec) => void (isDecisionRecorded(rec.event) && audit.push(rec.event)) });
      const hits = audit.filter((e) => e.payload.code === 'SECURITY.UNTRUSTED_GRANT');
      return hits.length === 2 ? hits : undefined;
    }, { what: 'the security events' });
    // Reported as they were ignored (best effort, so in no promised order).
    expect(reports.map((e) => `${e.source}:${String(e.payload.attributes?.['untrusted'])}`).sort()).toEqual(['guard:int-test:unknown-key', 'guard:int-test:unsigned']);
    // A checkpoint signed with the gateway's claim key vouches for both (attack 6): they verify as this agent's.
    await waitFor(async () => {
      const log: { event: unknown; position: string }[] = [];
      await replayTopic(kafka, 'audit', { namespace, onRecord: (rec) => void log.push({ event: rec.event, position: rec.offset }) });
      return verifyAuditSources(log, TEST_KEYRING).verified === 2 ? true : undefined;
    }, { what: 'the reports covered by a checkpoint' });
  });

  it('trusts old and new approval keys during a rotation, and only the new one after the old is removed', async () => {
    const namespace = await provisionedNamespace(kafka);
    const oldKey = testSigningKey('approval', 'approval-2026-10');
    const newKey = testSigningKey('approval', 'approval-2026-11');
    const byOld = request('wf/run-rotate-old');
    const byNew = request('wf/run-rotate-new');
    const during = gateway(namespace, kafka, { keyring: testKeyring(oldKey, newKey, TEST_AGENT_KEY) });
    const waits = [during.awaitApproval(byOld, { timeoutMs: 30_000 }), during.awaitApproval(byNew, { timeoutMs: 30_000 })];
    await requested(namespace, idOf(byOld));
    await requested(namespace, idOf(byNew));
    reviewer = await EventProducer.connect(kafka, { namespace });
    const decision = (r: ApprovalRequestInput) => createEvent(ApprovalDecidedV1, { source: 'service:approval', tenant: 'acme', subject: idOf(r) }, { approvalId: idOf(r), verdict: 'approve', reviewer: alice });
    await reviewer.publish('approvals', signEvent(decision(byOld), oldKey));
    await reviewer.publish('approvals', signEvent(decision(byNew), newKey));
    await expect(Promise.all(waits)).resolves.toHaveLength(2);
    // After the rotation, a process that trusts only the new key replays the same log.
    const after = gateway(namespace, kafka, { keyring: testKeyring(newKey, TEST_AGENT_KEY) });
    await expect(after.awaitApproval(byNew, { timeoutMs: 10_000 })).resolves.toMatchObject({ published: false });
    await expect(after.awaitApproval(byOld, { timeoutMs: 3_000 })).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
  });

  it('lets exactly one of two processes racing to use a grant win; the other is refused as used', async () => {
    const namespace = await provisionedNamespace(kafka);
    const r = request('wf/run-race');
    const [a, b] = [gateway(namespace, testKafka('approvals-race-a', 'agent')), gateway(namespace, testKafka('approvals-race-b', 'agent'))];
    const waiting = a.awaitApproval(r, { timeoutMs: 30_000 });
    await requested(namespace, idOf(r));
    await review(namespace, idOf(r), 'approve');
    const granted = await waiting;
    const found = await b.awaitApproval(r, { timeoutMs: 30_000 });
    expect(found.published).toBe(false);
    const uses = await Promise.allSettled([a.useGrant(granted.grant, r), b.useGrant(found.grant, r)]);
    expect(uses.filter((u) => u.status === 'fulfilled')).toHaveLength(1);
    expect(uses.filter((u) => u.status === 'rejected').map((u) => (u as PromiseRejectedResult).reason)).toEqual([expect.objectContaining({ code: 'APPROVAL.USED' })]);
    // A third process replaying the log agrees: used once, by the first use on the log.
    const late = gateway(namespace);
    const again = await late.awaitApproval(r, { timeoutMs: 10_000 });
    expect(again.grant.usedAt).toEqual(expect.any(Number));
    await expect(late.useGrant(again.grant, r)).rejects.toMatchObject({ code: 'APPROVAL.USED' });
    expect((await log(namespace)).filter((e) => e.type === 'ApprovalUsed').length).toBeGreaterThanOrEqual(1);
  });
});
