import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { type DecisionRecorded, decodeEvent, encodeEvent, isDecisionRecorded } from '@gatehouse/contracts';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { AuditLogger } from '../audit/audit-logger.js';
import { kafkaAuditPublisher, kafkaAuditSink } from '../audit/kafka-sink.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { denyPatterns } from '../policy-engine/policies/deny-patterns.js';
import { piiSecrets } from '../policy-engine/policies/pii-secrets.js';
import { collectStreamText, scriptedModel } from '../testing/scripted-model.js';
import { createGuardedAgent } from './guarded-agent.js';

let kafka: Kafka;
let producer: EventProducer;
let namespace: string;

beforeAll(async () => {
  kafka = testKafka('guard-agent-int');
  namespace = await provisionedNamespace(kafka);
  producer = await EventProducer.connect(kafka, { namespace });
});

afterAll(async () => {
  await producer?.close();
});

const SECRET = 'AKIAIOSFODNN7EXAMPLE';
const PROMPT_SECRET = 'my password is hunter2-very-secret';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function context(runId: string): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-7', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'support', runId, threadId: 'thread-1', entryPath: 'int-test', traceparent: TRACEPARENT });
  return rc;
}

describe('guarded agent decisions on the real audit topic', () => {
  it('publishes every allow, deny and error decision as a valid DecisionRecorded event without inspected content', async () => {
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:int-test', defaultTenant: 'default' });
    const audit = new AuditLogger({ sink });
    const agentWith = (text: string, chunks?: string[]) =>
      createGuardedAgent({
        id: 'support',
        name: 'Support',
        instructions: 'Answer briefly.',
        model: scriptedModel({ text, ...(chunks ? { chunks } : {}) }) as never,
        allowedRoles: ['operator'],
        policies: [denyPatterns(['hunter2']), piiSecrets({ detectors: ['awsAccessKey'] })],
        audit,
      });

    const allowed = await agentWith('Your order shipped.').generate('where is my order?', { requestContext: context('run-allowed') });
    expect(allowed.text).toBe('Your order shipped.');
    const deniedInput = await agentWith('never').generate(PROMPT_SECRET, { requestContext: context('run-denied-input') });
    expect(deniedInput.tripwire?.code).toBe('POLICY.DENIED');
    const stream = await agentWith('', ['key: AKIA', 'IOSFODNN7', 'EXAMPLE']).stream('key?', { requestContext: context('run-denied-stream') });
    const { text } = await collectStreamText(stream.fullStream);
    expect(text).not.toContain('AKIA');
    const noActor = new RequestContext();
    const unauthorized = await agentWith('never').generate('hi', { requestContext: noActor });
    expect(unauthorized.tripwire?.code).toBe('RBAC.NO_ACTOR');
    await sink.flush();

    const events: DecisionRecorded[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && events.push(r.event)) });
    expect(events).toHaveLength(audit.events().length);
    for (const event of events) {
      // Valid against the contract, byte for byte through the codec.
      expect(decodeEvent('audit', encodeEvent('audit', event))).toEqual(event);
      expect(event.source).toBe('guard:int-test');
    }
    const serialized = JSON.stringify(events);
    for (const content of [SECRET, 'AKIA', 'hunter2', PROMPT_SECRET, 'where is my order']) expect(serialized).not.toContain(content);

    const byRun = (runId: string) => events.filter((e) => e.payload.runId === runId).map((e) => `${e.payload.boundary}:${e.payload.outcome}:${e.payload.code}`);
    expect(byRun('run-allowed')).toEqual(['agent-entry:allowed:RBAC.ALLOWED', 'input:allowed:POLICY.ALLOWED', 'output:allowed:POLICY.ALLOWED']);
    expect(byRun('run-denied-input')).toEqual(['agent-entry:allowed:RBAC.ALLOWED', 'input:denied:POLICY.DENIED']);
    expect(byRun('run-denied-stream')).toContain('stream:denied:POLICY.DENIED');
    const denial = events.find((e) => e.payload.runId === 'run-denied-stream' && e.payload.outcome === 'denied');
    expect(denial?.payload).toMatchObject({
      reason: 'Content blocked by policy "pii-secrets" (output)',
      detections: ['awsAccessKey'],
      actor: { id: 'user-7', role: 'operator', kind: 'human' },
      agentId: 'support',
      threadId: 'thread-1',
      entryPath: 'int-test',
    });
    expect(denial?.tenant).toBe('acme');
    // The request's trace context travels in the envelope to every Kafka consumer.
    expect(denial?.trace).toEqual({ traceparent: TRACEPARENT });
    expect(events.find((e) => e.payload.code === 'RBAC.NO_ACTOR')?.tenant).toBe('default');
    await sink.close();
  });
});
