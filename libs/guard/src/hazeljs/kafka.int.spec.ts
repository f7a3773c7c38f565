import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApprovalDecidedV1, createEvent, type DecisionRecorded, isDecisionRecorded, signEvent, type TopicEvent } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { kafkaAuditPublisher } from '../audit/kafka-sink.js';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from '../approvals/kafka-approval-gateway.js';
import { AgentGatekeeper, type AgentGatekeeperPolicy, createKafkaApprovalProvider, createKafkaAuditSink, fromFunction, InMemoryAuditSink, type ToolInvocationContext } from './index.js';
import { context as invocation, refundTool, refusal } from './spec-support.testing.js';

// The seed's "Production (horizontal scale)": replica A asks for approval, the approval service
// decides, replica B resumes the run on the approval token; the audit goes to the shared topic.
let kafka: Kafka;
const open: { close(): Promise<void> }[] = [];
beforeAll(() => {
  kafka = testKafka('hazeljs-facade-int');
});
afterAll(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

type Refund = { amount: number };
const refundPolicy: AgentGatekeeperPolicy<Refund> = { id: 'refunds', version: '1', match: { tools: ['stripe.refund'] }, rules: { allowWhen: ({ input }) => input.amount <= 100, requireApprovalWhen: ({ input }) => input.amount > 50 } };
const context = (amount: number, extra: Partial<ToolInvocationContext<unknown>> = {}) => invocation({ amount }, { tenantId: 'acme', ...extra });

function replica(namespace: string, ran: number[]) {
  const gateway: KafkaApprovalGateway = createKafkaApprovalGateway({ kafka, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:hazeljs-int' });
  open.push(gateway);
  const gk = new AgentGatekeeper({ policies: [refundPolicy], auditSink: new InMemoryAuditSink(), approvalProvider: createKafkaApprovalProvider(gateway, { waitMs: 3_000 }) });
  return { gk, tool: refundTool(ran, {}) }; // no metadata: fromFunction's defaults (read, low)
}

async function decide(namespace: string, approvalId: string, signed: boolean): Promise<void> {
  const producer = await EventProducer.connect(kafka, { namespace });
  try {
    const decision = createEvent(ApprovalDecidedV1, { source: 'service:approval', tenant: 'acme', subject: approvalId }, { approvalId, verdict: 'approve', reviewer: { id: 'user:alice', role: 'approver', kind: 'human' } });
    await producer.publish('approvals', signed ? signEvent(decision, TEST_KEYS.approval) : decision);
  } finally {
    await producer.close();
  }
}

describe('HazelJS approvals across replicas, on the approvals topic (row 6)', () => {
  it('replica A asks, the approval service decides, replica B runs the call once; A cannot run it again', async () => {
    const namespace = await provisionedNamespace(kafka);
    const ran: number[] = [];
    const a = replica(namespace, ran);
    const b = replica(namespace, ran);
    const asked = await refusal(a.gk.execute({ context: context(80), tool: a.tool }));
    expect(asked.code).toBe('HAZELJS.APPROVAL_REQUIRED');
    const approvalId = asked.approvalRequestId!;

    // The agent writing "approved" itself grants nothing: the fold counts the service's signature only.
    await decide(namespace, approvalId, false);
    expect((await refusal(b.gk.execute({ context: context(80, { approvalToken: approvalId }), tool: b.tool }))).code).toBe('HAZELJS.APPROVAL_REQUIRED');

    await decide(namespace, approvalId, true);
    expect((await b.gk.execute({ context: context(80, { approvalToken: approvalId }), tool: b.tool })).output).toEqual({ refunded: 80 });
    const again = await refusal(a.gk.execute({ context: context(80, { approvalToken: approvalId }), tool: a.tool }));
    expect(again).toMatchObject({ code: 'HAZELJS.APPROVAL_INVALID', details: { status: 'consumed' } });
    expect(ran).toEqual([80]);
  });
});

describe('createKafkaAuditSink on the audit topic (row 5)', () => {
  it('records each decision of the facade on gatehouse.audit.v1, awaited in required mode', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    const sink = createKafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:hazeljs-int', defaultTenant: 'acme' });
    const gk = new AgentGatekeeper({ policies: [{ id: 'small', version: '1', rules: { allowWhen: 'input.amount <= 10' } }], auditSink: sink });
    const tool = fromFunction('stripe.refund', async (input: Refund) => input.amount);
    expect((await gk.execute({ context: context(5), tool })).output).toBe(5);
    await refusal(gk.execute({ context: context(50), tool }));
    await sink.close();
    await producer.close();
    const decisions: DecisionRecorded[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: ({ event }: { event: TopicEvent<'audit'> }) => void (isDecisionRecorded(event) && decisions.push(event)) });
    expect(decisions.map((d) => [d.payload.code, d.payload.toolId])).toEqual([
      ['GUARDRAIL.ALLOWED', 'stripe.refund'],
      ['HAZELJS.TOOL_COMPLETED', 'stripe.refund'],
      ['GUARDRAIL.DENIED', 'stripe.refund'],
    ]);
    expect(decisions[2]?.payload.detections).toEqual(expect.arrayContaining(['gatekeeper.deny', 'gatekeeper.policy:small:allow-failed']));
  });
});
