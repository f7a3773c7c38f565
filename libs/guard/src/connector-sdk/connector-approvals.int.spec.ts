import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { ApprovalDecidedV1, createEvent, type DecisionRecorded, isDecisionRecorded, type JsonValue, signEvent, type TopicEvent } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { z } from 'zod';
import { createGuardedAgent } from '../agent/guarded-agent.js';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from '../approvals/kafka-approval-gateway.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { kafkaAuditPublisher, kafkaAuditSink } from '../audit/kafka-sink.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { scriptedModel } from '../testing/scripted-model.js';
import { createConnector, invokeConnector } from './connector.js';
import { CONNECTOR_EXECUTION_CONTEXT_KEY } from './context-keys.js';

let kafka: Kafka;
let namespace: string;
let producer: EventProducer;
const gateways: KafkaApprovalGateway[] = [];

beforeAll(async () => {
  kafka = testKafka('connector-approvals-int');
  namespace = await provisionedNamespace(kafka);
  producer = await EventProducer.connect(kafka, { namespace });
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await producer?.close();
});

const CARD = '4111111111111111';
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const alice = { id: 'user:alice', role: 'approver', kind: 'human' as const };
const inputSchema = z.object({ orderId: z.string(), amount: z.number().positive().max(100), card: z.string() });
type Input = z.infer<typeof inputSchema>;

function context(runId: string): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-7', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId, entryPath: 'int-test', traceparent: TRACEPARENT });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'support', runId });
  return rc;
}

function gateway(): KafkaApprovalGateway {
  const g = createKafkaApprovalGateway({ kafka, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:connector-approvals-int' });
  gateways.push(g);
  return g;
}

function refunds(approvalGateway: KafkaApprovalGateway, audit: AuditLogger, waitMs = 30_000) {
  const executed: Input[] = [];
  const connector = createConnector<Input, { refunded: number }>({
    id: 'payments.refund',
    description: 'Refund an order to the card it was paid with',
    inputSchema,
    permissions: { sideEffect: 'destructive' },
    approvals: { gateway: approvalGateway, waitMs, redactPaths: ['/card'] },
    audit,
    execute: async (i) => {
      executed.push(i);
      return { refunded: i.amount };
    },
  });
  return { connector, executed };
}

async function approvalsLog(): Promise<TopicEvent<'approvals'>[]> {
  const events: TopicEvent<'approvals'>[] = [];
  await replayTopic(kafka, 'approvals', { namespace, onRecord: (r) => void events.push(r.event) });
  return events;
}

/** The test reviewer: waits for the run's request on the log, then decides it as the approval service would. */
async function reviewRun(runId: string, verdict: 'approve' | 'approve-with-edits', editedArguments?: JsonValue): Promise<TopicEvent<'approvals'>> {
  const request = await waitFor(async () => (await approvalsLog()).find((e) => e.type === 'ApprovalRequested' && e.correlationId === runId), { what: `the request of ${runId}` });
  await producer.publish(
    'approvals',
    signEvent(createEvent(ApprovalDecidedV1, { source: 'service:approval', tenant: request.tenant, subject: request.subject }, { approvalId: request.payload.approvalId, verdict, reviewer: alice, ...(editedArguments === undefined ? {} : { editedArguments }) }), TEST_KEYS.approval),
  );
  return request;
}

describe('connector approvals on the real broker', () => {
  it('a guarded agent waits for the reviewer; the tool runs once; the audit topic holds request, decision and execution, correlated', async () => {
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:connector-approvals-int', defaultTenant: 'default' });
    const audit = new AuditLogger({ sink });
    const { connector, executed } = refunds(gateway(), audit);
    const input = { orderId: 'o-1', amount: 40, card: CARD };
    const agent = createGuardedAgent({
      id: 'refund-bot',
      name: 'Refund bot',
      instructions: 'Refund when asked.',
      model: scriptedModel({ steps: [{ toolCall: { toolName: 'payments.refund', toolCallId: 'call-1', args: input } }, { text: 'Refunded.' }] }) as never,
      tools: { 'payments.refund': connector },
      allowedRoles: ['operator'],
      audit,
    });
    const answer = agent.generate('refund order o-1', { requestContext: context('run-agent') });
    const request = await reviewRun('run-agent', 'approve');
    await expect(answer).resolves.toMatchObject({ text: 'Refunded.' });
    expect(executed).toEqual([input]);
    expect(request.payload).toMatchObject({ arguments: { orderId: 'o-1', amount: 40, card: '[REDACTED]' }, redactedPaths: ['/card'], reason: 'destructive calls require approval', requester: { id: TEST_AGENT_KEY.agent.id, kind: 'agent' }, toolCallId: expect.any(String) });
    expect(request.trace?.traceparent).toBe(TRACEPARENT);
    await sink.flush();

    const audited: DecisionRecorded[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && audited.push(r.event)) });
    const tool = audited.filter((e) => e.payload.boundary === 'tool' && e.correlationId === 'run-agent');
    expect(tool.map((e) => `${e.payload.outcome}:${e.payload.code}`)).toEqual(['approval-required:CONNECTOR.APPROVAL_PENDING', 'allowed:CONNECTOR.APPROVAL_GRANTED', 'allowed:CONNECTOR.ALLOWED']);
    for (const e of tool) {
      expect(e.payload.attributes?.['approvalId']).toBe(request.payload.approvalId);
      expect(e.trace?.traceparent).toBe(TRACEPARENT);
      expect(e.tenant).toBe('acme');
    }
    expect(JSON.stringify([audited, await approvalsLog()])).not.toContain(CARD);
    await sink.close();
  });

  it('runs an approved edit with the edited arguments', async () => {
    const { connector, executed } = refunds(gateway(), new AuditLogger());
    const call = invokeConnector(connector, { orderId: 'o-2', amount: 60, card: CARD }, { requestContext: context('run-edit') });
    await reviewRun('run-edit', 'approve-with-edits', { orderId: 'o-2', amount: 30, card: '[REDACTED]' });
    await expect(call).resolves.toEqual({ refunded: 30 });
    expect(executed).toEqual([{ orderId: 'o-2', amount: 30, card: CARD }]);
  });

  it('a new process finds the decision made while no one waited, runs once, and never asks twice', async () => {
    const input = { orderId: 'o-3', amount: 10, card: CARD };
    const first = gateway();
    await first.start();
    const dying = refunds(first, new AuditLogger(), 2_000);
    await expect(invokeConnector(dying.connector, input, { requestContext: context('run-restart') })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_TIMEOUT' });
    await first.close();
    await reviewRun('run-restart', 'approve');
    const audit = new AuditLogger();
    const restarted = refunds(gateway(), audit);
    await expect(invokeConnector(restarted.connector, input, { requestContext: context('run-restart') })).resolves.toEqual({ refunded: 10 });
    expect([...dying.executed, ...restarted.executed]).toHaveLength(1);
    expect((await approvalsLog()).filter((e) => e.type === 'ApprovalRequested' && e.correlationId === 'run-restart')).toHaveLength(1);
    expect(audit.events().at(-1)?.detail).toMatchObject({ approvalPublished: false });
  });
});
