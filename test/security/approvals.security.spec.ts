import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { approvalIdForCall, commitArguments } from '@gatehouse/approvals';
import { testCancel, testRequest } from '@gatehouse/approvals/testing';
import { ApprovalCancelledV1, ApprovalRequestedV2, createEvent, type DecisionRecorded, isDecisionRecorded, SIGNING_ENV, signClaim, trustedEntryOf, type TopicEvent } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS, testAgentKey } from '@gatehouse/contracts/testing';
import { AGENT_AUDIT_CONTEXT_KEY, AuditLogger, CONNECTOR_EXECUTION_CONTEXT_KEY, createConnector, invokeConnector } from '@gatehouse/guard';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from '@gatehouse/guard/approvals';
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';

// Issue 15, attacks 2, 3 and 7, as an attacker runs them: holding only the `agent` principal's
// Kafka credentials (and, for the insider cases, an agent key the services trust for its own
// agent and tenant), against the built approval service as a process, the real broker and
// PostgreSQL. A reviewer speaks REST; the honest agent asks through the guard's gateway.

const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([
  { id: 'user:rita', role: 'payments-approver', tenants: ['acme', 'globex'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') },
]);
const auth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };
/** Another agent of tenant acme, and an agent of tenant globex: both trusted, each for its own. */
const insider = testAgentKey('agent:other', ['acme']);
const intruder = testAgentKey('agent:intruder', ['globex']);

const GRANT_TTL_MS = 6_000;

let kafka: Kafka;
let attacker: EventProducer;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let service: Started & { url: string };
let gateway: KafkaApprovalGateway;

beforeAll(async () => {
  kafka = testKafka('security-approvals');
  namespace = await provisionedNamespace(kafka, 'sec');
  database = await throwawayDatabase();
  const trusted = [...Object.values(TEST_KEYS), TEST_AGENT_KEY, insider, intruder].map(trustedEntryOf);
  service = await startService('approval', {
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_APPROVAL_REVIEWERS: reviewers,
    [SIGNING_ENV.trustedKeys]: JSON.stringify(trusted),
    // Short, so the use-by attack can wait it out: every other grant here is used within seconds.
    GATEHOUSE_APPROVAL_GRANT_TTL_MS: String(GRANT_TTL_MS),
  });
  attacker = await EventProducer.connect(testKafka('security-attacker', 'agent'), { namespace });
  gateway = createKafkaApprovalGateway({ kafka: testKafka('security-honest-agent', 'agent'), keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:honest' });
  await gateway.start();
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await attacker?.close();
  killAll();
  await database?.drop();
});

async function topic<T extends 'approvals' | 'audit'>(id: T): Promise<TopicEvent<T>[]> {
  const events: TopicEvent<T>[] = [];
  await replayTopic(kafka, id, { namespace, onRecord: (r) => void events.push(r.event) });
  return events;
}

/** The security report the approval service appended for the ignored event `eventId`. */
async function reported(eventId: string): Promise<DecisionRecorded> {
  return waitFor(async () => (await topic('audit')).filter(isDecisionRecorded).find((e) => e.payload.code === 'SECURITY.FORBIDDEN_CLAIM' && e.payload.attributes?.['eventId'] === eventId && e.source === 'service:approval'), {
    timeoutMs: 30_000,
    what: `the security report of ${eventId}`,
  });
}

const get = async (approvalId: string) => (await fetch(`${service.url}/v1/approvals/${approvalId}`, { headers: auth })).status;
const pending = async () => ((await (await fetch(`${service.url}/v1/approvals?status=pending&limit=200`, { headers: auth })).json()) as { items: { approvalId: string; arguments: unknown }[] }).items;
const decide = async (approvalId: string, body: unknown) => {
  const res = await fetch(`${service.url}/v1/approvals/${approvalId}/decision`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

/** The honest agent's call: a refund of `amount` in run `runId`, as the connector would ask. */
function honestCall(runId: string, amount: number) {
  const call = { tenant: 'acme', connectorId: 'payments.refund', executionId: `support/${runId}`, toolCallId: 'call-1' };
  const args = { orderId: `o-${runId}`, amount };
  const committed = commitArguments(args, [], TEST_AGENT_KEY, call);
  const approvalId = approvalIdForCall({ tenant: 'acme', connectorId: call.connectorId, executionId: call.executionId, argumentsHash: committed.argumentsHash }, TEST_AGENT_KEY.agent.id, call.toolCallId);
  const ask = () =>
    gateway.awaitApproval(
      { call, arguments: args, requester: { id: 'agent:refund-bot', role: 'agent', kind: 'agent' }, reason: 'refunds need a person', deadline: new Date(Date.now() + 120_000).toISOString() },
      { timeoutMs: 60_000 },
    );
  return { call, args, committed, approvalId, ask };
}

describe('attack 2: squatting on an approval request', () => {
  it('a request showing amount 1 for a call committed to amount 25 is never shown, never granted, and reported', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const honest = honestCall(runId, 25);
    // The attacker holds the agent's own key (a compromised agent process): it pre-creates the call's
    // request with the real commitment but shows the reviewer amount 1.
    const squat = signClaim(
      createEvent(ApprovalRequestedV2, { source: 'guard:attacker', tenant: 'acme', subject: honest.approvalId }, {
        approvalId: honest.approvalId,
        scope: { tenant: 'acme', connectorId: honest.call.connectorId, executionId: honest.call.executionId, argumentsHash: honest.committed.argumentsHash },
        arguments: { ...honest.args, amount: 1 },
        redactedPaths: [],
        redactionDigests: {},
        toolCallId: honest.call.toolCallId,
        requester: { id: TEST_AGENT_KEY.agent.id, role: 'agent', kind: 'agent' },
        reason: 'refunds need a person',
        // A deadline a second ahead: had it counted, the real call and every retry would expire.
        deadline: new Date(Date.now() + 1_000).toISOString(),
      }),
      TEST_AGENT_KEY,
    );
    await attacker.publish('approvals', squat);
    expect((await reported(squat.id)).payload.attributes).toMatchObject({ claim: 'commitment-mismatch', eventType: 'ApprovalRequested' });
    expect(await get(honest.approvalId)).toBe(404);

    // The real call asks for itself, after the squat's deadline; the reviewer sees amount 25 and approves it.
    await new Promise((r) => setTimeout(r, 1_200));
    const waiting = honest.ask();
    const listed = await waitFor(async () => (await pending()).find((i) => i.approvalId === honest.approvalId), { timeoutMs: 30_000, what: 'the honest request' });
    expect(listed.arguments).toEqual({ orderId: `o-${runId}`, amount: 25 });
    expect((await decide(honest.approvalId, { verdict: 'approve' })).status).toBe(200);
    await expect(waiting).resolves.toMatchObject({ grant: { approvalId: honest.approvalId, scope: { argumentsHash: honest.committed.argumentsHash } } });
  });

  it("another agent of the tenant cannot claim the call's approval id, nor name the requester", async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const honest = honestCall(runId, 25);
    const base = testRequest({ agentKey: insider, arguments: honest.args });
    // Naming the honest agent as requester, for the honest call's id: the signature says who wrote it.
    const squat = signClaim(
      createEvent(ApprovalRequestedV2, { source: 'guard:insider', tenant: 'acme', subject: honest.approvalId }, {
        ...base.event.payload,
        approvalId: honest.approvalId,
        scope: { tenant: 'acme', connectorId: honest.call.connectorId, executionId: honest.call.executionId, argumentsHash: honest.committed.argumentsHash },
        toolCallId: honest.call.toolCallId,
        requester: { id: TEST_AGENT_KEY.agent.id, role: 'agent', kind: 'agent' },
      }),
      insider,
    );
    await attacker.publish('approvals', squat);
    expect((await reported(squat.id)).payload.attributes).toMatchObject({ claim: 'requester-mismatch' });
    expect(await get(honest.approvalId)).toBe(404);
    const waiting = honest.ask();
    await waitFor(async () => (await pending()).find((i) => i.approvalId === honest.approvalId), { timeoutMs: 30_000, what: 'the honest request' });
    expect((await decide(honest.approvalId, { verdict: 'approve' })).status).toBe(200);
    await expect(waiting).resolves.toMatchObject({ published: true });
  });

  it("a tenant-globex agent's request for tenant acme, and an unsigned request, are ignored and reported", async () => {
    const foreign = testRequest({ agentKey: intruder, tenant: 'acme', requester: { id: 'agent:intruder', role: 'agent', kind: 'agent' } });
    const unsigned = testRequest({ unsigned: true });
    await attacker.publish('approvals', foreign.event);
    await attacker.publish('approvals', unsigned.event);
    expect((await reported(foreign.event.id)).payload.attributes).toMatchObject({ claim: 'foreign-tenant' });
    expect((await reported(unsigned.event.id)).payload.attributes).toMatchObject({ claim: 'unsigned' });
    expect(await get(foreign.approvalId)).toBe(404);
    expect(await get(unsigned.approvalId)).toBe(404);
  });
});

describe('attack 3: cancelling another tenant’s or another agent’s pending approval', () => {
  it('unsigned "system", other-tenant and other-agent cancellations are ignored and reported; the reviewer still decides and the guard gets its grant', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const honest = honestCall(runId, 30);
    const waiting = honest.ask();
    await waitFor(async () => (await pending()).find((i) => i.approvalId === honest.approvalId), { timeoutMs: 30_000, what: 'the honest request' });
    const system = createEvent(ApprovalCancelledV1, { source: 'service:approval', tenant: 'acme', subject: honest.approvalId }, { approvalId: honest.approvalId, by: { id: 'system', role: 'system', kind: 'system' }, reason: 'x' });
    const fromGlobex = testCancel(honest.approvalId, { agentKey: intruder, tenant: 'acme', by: { id: TEST_AGENT_KEY.agent.id, role: 'agent', kind: 'agent' } });
    const fromInsider = testCancel(honest.approvalId, { agentKey: insider, by: { id: TEST_AGENT_KEY.agent.id, role: 'agent', kind: 'agent' } });
    for (const forged of [system, fromGlobex, fromInsider]) await attacker.publish('approvals', forged);
    expect((await reported(system.id)).payload.attributes).toMatchObject({ claim: 'unsigned' });
    expect((await reported(fromGlobex.id)).payload.attributes).toMatchObject({ claim: 'foreign-tenant' });
    expect((await reported(fromInsider.id)).payload.attributes).toMatchObject({ claim: 'not-requester' });
    // Still pending for the reviewer, who decides it; the waiting guard is unblocked by the grant, not the forgery.
    expect((await pending()).some((i) => i.approvalId === honest.approvalId)).toBe(true);
    expect((await decide(honest.approvalId, { verdict: 'approve' })).status).toBe(200);
    await expect(waiting).resolves.toMatchObject({ grant: { approvalId: honest.approvalId } });
  });
});

describe('attack 7: oversized agent-written events', () => {
  it('eleven ~900 kB requests are ignored and reported, and the pending list stays small', async () => {
    const before = JSON.stringify(await pending()).length;
    const big = Array.from({ length: 11 }, () => testRequest({ arguments: { orderId: 'o-big', note: 'x'.repeat(900_000) }, deadlineMs: 3_600_000 }));
    for (const r of big) await attacker.publish('approvals', r.event);
    for (const r of big) expect((await reported(r.event.id)).payload.attributes).toMatchObject({ claim: 'too-large' });
    for (const r of big) expect(await get(r.approvalId)).toBe(404);
    expect(JSON.stringify(await pending()).length).toBeLessThanOrEqual(before + 10_000);
  });

  it('the guard refuses to send an oversized request, with a typed error', async () => {
    const call = { tenant: 'acme', connectorId: 'payments.refund', executionId: `support/run-${randomUUID()}`, toolCallId: 'call-1' };
    const request = { call, arguments: { note: 'x'.repeat(70_000) }, requester: { id: 'agent:refund-bot', role: 'agent', kind: 'agent' as const }, reason: 'r', deadline: new Date(Date.now() + 60_000).toISOString() };
    expect(() => gateway.describe(request)).toThrow(expect.objectContaining({ code: 'APPROVAL.REQUEST_INVALID' }));
    await expect(gateway.awaitApproval(request, { timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'APPROVAL.REQUEST_INVALID' });
  });
});

describe('attack 10: grants outlive their call', () => {
  /** The honest agent's refund connector, asking through `via`, counting its executions. */
  function refunds(via: KafkaApprovalGateway) {
    const executed: number[] = [];
    const connector = createConnector<{ orderId: string; amount: number }, { refunded: number }>({
      id: 'payments.refund',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number().positive() }),
      permissions: { sideEffect: 'write', requiresApproval: true },
      approvals: { gateway: via, waitMs: 60_000, deadlineMs: 120_000 },
      audit: new AuditLogger(),
      execute: async ({ amount }) => {
        executed.push(amount);
        return { refunded: amount };
      },
    });
    return { connector, executed };
  }
  const context = (runId: string) => {
    const rc = new RequestContext();
    rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId });
    rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'support', runId });
    return rc;
  };
  const approveWhenListed = async (runId: string) => {
    const listed = await waitFor(async () => (await pending()).find((i) => (i as { executionId?: string }).executionId === `support/${runId}`), { timeoutMs: 30_000, what: `the request of ${runId}` });
    expect((await decide(listed.approvalId, { verdict: 'approve' })).status).toBe(200);
    return listed.approvalId;
  };

  it('one approval runs one call once: the model repeating the tool call, and a second process on the same grant, run nothing', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const { connector, executed } = refunds(gateway);
    const first = invokeConnector(connector, { orderId: 'o-1', amount: 25 }, { requestContext: context(runId), toolCallId: 'call-1' });
    const approvalId = await approveWhenListed(runId);
    await expect(first).resolves.toEqual({ refunded: 25 });
    // The model repeats the same tool call id: the grant is used.
    await expect(invokeConnector(connector, { orderId: 'o-1', amount: 25 }, { requestContext: context(runId), toolCallId: 'call-1' })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_USED' });
    // Another agent process with the same key, after replaying the log, finds the grant used too.
    const other = createKafkaApprovalGateway({ kafka: testKafka('security-second-agent', 'agent'), keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:second' });
    try {
      const second = refunds(other);
      await expect(invokeConnector(second.connector, { orderId: 'o-1', amount: 25 }, { requestContext: context(runId), toolCallId: 'call-1' })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_USED' });
      expect(second.executed).toEqual([]);
    } finally {
      await other.close();
    }
    expect(executed).toEqual([25]);
    // The uses on the log: one accepted; nothing else was appended after the fold showed it used.
    expect((await topic('approvals')).filter((e) => e.type === 'ApprovalUsed' && e.payload.approvalId === approvalId)).toHaveLength(1);
  });

  it('a grant is void after its use-by time: the call days (here seconds) later runs nothing', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const { connector, executed } = refunds(gateway);
    // The first call gives up waiting; the reviewer approves later; the call comes back past the use-by time.
    const impatient = createConnector<{ orderId: string; amount: number }, { refunded: number }>({
      id: 'payments.refund',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number().positive() }),
      permissions: { sideEffect: 'write', requiresApproval: true },
      approvals: { gateway, waitMs: 300, deadlineMs: 120_000 },
      audit: new AuditLogger(),
      execute: async ({ amount }) => ({ refunded: amount }),
    });
    await expect(invokeConnector(impatient, { orderId: 'o-2', amount: 5 }, { requestContext: context(runId), toolCallId: 'call-1' })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_TIMEOUT' });
    await approveWhenListed(runId);
    await new Promise((r) => setTimeout(r, GRANT_TTL_MS + 1_000));
    await expect(invokeConnector(connector, { orderId: 'o-2', amount: 5 }, { requestContext: context(runId), toolCallId: 'call-1' })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_EXPIRED' });
    expect(executed).toEqual([]);
  });
});
