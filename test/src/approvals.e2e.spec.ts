import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApprovalDecidedV1, createEvent, isDecisionRecorded, signEvent, type TopicEvent } from '@gatehouse/contracts';
import { TEST_KEYS, testSigningKey } from '@gatehouse/contracts/testing';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from './support/database.js';
import { agentKafkaEnv } from './support/kafka-auth.js';
import { killAll, ROOT, type Started, startNode, startService } from './support/processes.js';

// Approvals as users meet them: the built approval service as a process, a guarded Mastra agent
// in its own process waiting on the approvals topic, a reviewer speaking REST, the real broker
// and PostgreSQL.
const agentScript = path.join(ROOT, 'test/src/fixtures/approval-agent.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-approvals-e2e-'));
const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([
  { id: 'user:rita', role: 'payments-approver', tenants: ['acme'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') },
]);
const auth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let service: Started & { url: string };

beforeAll(async () => {
  kafka = testKafka('approvals-e2e');
  namespace = await provisionedNamespace(kafka, 'e2e');
  database = await throwawayDatabase();
  service = await startService('approval', { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_APPROVAL_REVIEWERS: reviewers });
}, 120_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

interface Listed {
  readonly approvalId: string;
  readonly executionId: string;
  readonly arguments: Record<string, unknown>;
  readonly toolDescription?: string;
  readonly dryRunPreview?: unknown;
  readonly requester: { id: string };
}

function startAgent(runId: string, out: string, amount = 40): Started {
  return startNode(agentScript, [JSON.stringify({ runId, orderId: `o-${runId}`, amount, out })], { GATEHOUSE_TOPIC_NAMESPACE: namespace, ...agentKafkaEnv() });
}

/** The reviewer polls the REST list until the run's request shows up as pending. */
async function pendingOf(runId: string): Promise<Listed> {
  return waitFor(
    async () => {
      const res = await fetch(`${service.url}/v1/approvals?status=pending&connector=payments.refund`, { headers: auth });
      const page = (await res.json()) as { items: Listed[] };
      return page.items.find((i) => i.executionId === `support/${runId}`);
    },
    { timeoutMs: 60_000, what: `the pending request of ${runId}` },
  );
}

async function decide(approvalId: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${service.url}/v1/approvals/${approvalId}/decision`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function finished(agent: Started): Promise<{ text: string; tripwire: string | null }> {
  const code = await agent.exited();
  const line = agent.output().split('\n').find((l) => l.startsWith('AGENT_RESULT '));
  if (code !== 0 || !line) throw new Error(`agent exited ${code}: ${agent.output().slice(-2000)}`);
  return JSON.parse(line.slice('AGENT_RESULT '.length)) as { text: string; tripwire: string | null };
}

const executions = (out: string) => (existsSync(out) ? readFileSync(out, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { pid: number; amount: number }) : []);

async function topic<T extends 'approvals' | 'audit'>(id: T): Promise<TopicEvent<T>[]> {
  const events: TopicEvent<T>[] = [];
  await replayTopic(kafka, id, { namespace, onRecord: (r) => void events.push(r.event) });
  return events;
}

describe('approvals end to end', () => {
  it('a guarded agent waits; the reviewer edits and approves over REST; the tool runs once with the edits; the trail is correlated', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const out = path.join(dir, `${runId}.jsonl`);
    const agent = startAgent(runId, out, 40);

    const listed = await pendingOf(runId);
    expect(listed).toMatchObject({
      arguments: { orderId: `o-${runId}`, amount: 40 },
      toolDescription: 'Refund an order to the card it was paid with',
      dryRunPreview: { wouldRefund: 40, currency: 'EUR' },
      // The request names the agent its claim key is bound to (the test agent), whatever the context says.
      requester: { id: 'agent:billing' },
    });
    expect(executions(out)).toEqual([]);
    const decided = await decide(listed.approvalId, { verdict: 'approve-with-edits', editedArguments: { orderId: `o-${runId}`, amount: 25 }, comment: 'partial refund only' });
    expect(decided).toMatchObject({ status: 200, body: { status: 'approved-with-edits', reviewer: { id: 'user:rita' } } });

    expect(await finished(agent)).toEqual({ text: 'The refund is done.', tripwire: null });
    expect(executions(out).map((e) => e.amount)).toEqual([25]);

    // The approvals topic: the request and the decision, joined by the run as correlation id.
    const approvals = (await topic('approvals')).filter((e) => e.payload.approvalId === listed.approvalId);
    // The request, the decision, and the agent's one use of the grant, joined by the run.
    expect(approvals.map((e) => [e.type, e.correlationId])).toEqual([
      ['ApprovalRequested', runId],
      ['ApprovalDecided', runId],
      ['ApprovalUsed', runId],
    ]);
    expect(approvals[1]?.causationId).toBe(approvals[0]?.id);
    // The audit topic: request, decision and execution of the same call, with the approval id.
    const audit = (await topic('audit')).filter(isDecisionRecorded).filter((e) => e.correlationId === runId && e.payload.boundary === 'tool');
    expect(audit.map((e) => `${e.payload.outcome}:${e.payload.code}`)).toEqual(['approval-required:CONNECTOR.APPROVAL_PENDING', 'allowed:CONNECTOR.APPROVAL_GRANTED', 'allowed:CONNECTOR.ALLOWED']);
    for (const e of audit) expect(e.payload.attributes?.['approvalId']).toBe(listed.approvalId);
  });

  it('an agent killed while waiting is replaced; the reviewer approves meanwhile; the new process proceeds on the replayed grant without asking again', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const out = path.join(dir, `${runId}.jsonl`);
    const first = startAgent(runId, out);
    const listed = await pendingOf(runId);
    first.child.kill('SIGKILL');
    expect(await first.exited()).toBeNull();

    expect((await decide(listed.approvalId, { verdict: 'approve', comment: 'go ahead' })).status).toBe(200);
    const second = startAgent(runId, out);
    expect(await finished(second)).toEqual({ text: 'The refund is done.', tripwire: null });

    const runs = executions(out);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.pid).toBe(second.child.pid);
    const approvals = (await topic('approvals')).filter((e) => e.payload.approvalId === listed.approvalId);
    // The new process used the grant, once; the killed one never did.
    expect(approvals.map((e) => e.type)).toEqual(['ApprovalRequested', 'ApprovalDecided', 'ApprovalUsed']);
    const audit = (await topic('audit')).filter(isDecisionRecorded).filter((e) => e.correlationId === runId && e.payload.boundary === 'tool');
    // The killed process recorded its request; the new one found the grant on the log and ran.
    expect(audit.map((e) => e.payload.code)).toEqual(['CONNECTOR.APPROVAL_PENDING', 'CONNECTOR.APPROVAL_PENDING', 'CONNECTOR.APPROVAL_GRANTED', 'CONNECTOR.ALLOWED']);
    expect(audit.at(-2)?.payload.attributes?.['approvalPublished']).toBe(false);
  });

  it('a denial reaches the waiting agent as a refusal, and nothing runs', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const out = path.join(dir, `${runId}.jsonl`);
    const agent = startAgent(runId, out);
    const listed = await pendingOf(runId);
    expect((await decide(listed.approvalId, { verdict: 'deny', comment: 'not eligible' })).status).toBe(200);
    const result = await finished(agent);
    expect(result.tripwire).toBeNull();
    expect(executions(out)).toEqual([]);
    const audit = (await topic('audit')).filter(isDecisionRecorded).filter((e) => e.correlationId === runId && e.payload.boundary === 'tool');
    expect(audit.map((e) => `${e.payload.outcome}:${e.payload.code}`)).toEqual(['approval-required:CONNECTOR.APPROVAL_PENDING', 'denied:CONNECTOR.APPROVAL_DENIED']);
  });
});

describe('a forged approval', () => {
  it('an agent that writes "approved" for its own request does not get its tool run; the forgery is reported by the service and the guard', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const out = path.join(dir, `${runId}.jsonl`);
    const agent = startAgent(runId, out);
    const listed = await pendingOf(runId);
    // The forger authenticates as the agent principal: the broker lets it append to the approvals
    // topic (it must, to ask), so only the signature check stands between it and its own grant.
    const producer = await EventProducer.connect(testKafka('approvals-e2e-rogue', 'agent'), { namespace });
    try {
      // Unsigned, and signed with a key the agent made up under the service's key id.
      const forged = createEvent(ApprovalDecidedV1, { source: 'guard:refund-bot', tenant: 'acme', subject: listed.approvalId }, { approvalId: listed.approvalId, verdict: 'approve', reviewer: { id: 'user:rita', role: 'payments-approver', kind: 'human' } });
      await producer.publish('approvals', forged);
      await producer.publish('approvals', signEvent(forged, testSigningKey('approval', TEST_KEYS.approval.keyId)));
    } finally {
      await producer.close();
    }
    const reports = await waitFor(async () => {
      const hits = (await topic('audit')).filter(isDecisionRecorded).filter((e) => e.payload.code === 'SECURITY.UNTRUSTED_GRANT' && e.subject === listed.approvalId);
      return hits.length >= 4 ? hits : undefined;
    }, { timeoutMs: 30_000, what: 'the forgery reported by the service and by the waiting guard' });
    expect(new Set(reports.map((e) => e.source.split(':')[0]))).toEqual(new Set(['service', 'guard']));
    expect(reports.map((e) => e.payload.attributes?.['untrusted']).sort()).toEqual(['bad-signature', 'bad-signature', 'unsigned', 'unsigned']);
    // Still pending for the service; the tool has not run.
    const res = await fetch(`${service.url}/v1/approvals/${listed.approvalId}`, { headers: auth });
    expect(((await res.json()) as { status: string }).status).toBe('pending');
    expect(executions(out)).toEqual([]);
    // The real reviewer denies: the agent gets its refusal, and nothing ever ran.
    expect((await decide(listed.approvalId, { verdict: 'deny' })).status).toBe(200);
    await finished(agent);
    expect(executions(out)).toEqual([]);
  });
});
