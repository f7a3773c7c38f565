import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { type DecisionRecorded, decodeEvent, encodeEvent, isDecisionRecorded } from '@gatehouse/contracts';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { z } from 'zod';
import { AuditLogger } from '../audit/audit-logger.js';
import { kafkaAuditPublisher, kafkaAuditSink } from '../audit/kafka-sink.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { createConnector } from './connector.js';
import { CONNECTOR_EXECUTION_CONTEXT_KEY, CONNECTOR_GRANTS_CONTEXT_KEY, DRY_RUN_CONTEXT_KEY, IDEMPOTENCY_KEY_CONTEXT_KEY, PRINCIPAL_PERMISSIONS_CONTEXT_KEY } from './context-keys.js';
import { bindGrant } from './trusted-context.js';
import { InMemoryIdempotencyStore } from './stores/in-memory-idempotency-store.js';
import { InMemoryRateLimitStore } from './stores/in-memory-rate-limit-store.js';
import { callThrough } from './testing/entry-points.js';

let kafka: Kafka;
let producer: EventProducer;
let namespace: string;

beforeAll(async () => {
  kafka = testKafka('connector-int');
  namespace = await provisionedNamespace(kafka);
  producer = await EventProducer.connect(kafka, { namespace });
});

afterAll(async () => {
  await producer?.close();
});

const identity = { workflowId: 'wf-1', runId: 'run-int' };

function context(entries: Record<string, unknown>): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-int', entryPath: 'int' });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, identity);
  for (const [k, v] of Object.entries(entries)) rc.set(k, v);
  return rc;
}

describe('tool boundary decisions on the real audit topic', () => {
  it('publishes every allow, deny, dry-run, replay and error decision', async () => {
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:connector-int', defaultTenant: 'default' });
    const audit = new AuditLogger({ sink });
    let fail = false;
    const connector = createConnector({
      id: 'refunds.create',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
      permissions: { sideEffect: 'write', requiresApproval: true, requiredPermissions: ['refunds:create'], dryRun: true, idempotencyKey: true, rateLimit: '3/hour', egress: ['payments.example.com'] },
      dryRunExecute: async (i): Promise<{ refunded?: number; wouldRefund?: number }> => ({ wouldRefund: i.amount }),
      execute: async (i): Promise<{ refunded?: number; wouldRefund?: number }> => {
        if (fail) throw new Error('gateway says card 4111-1111-1111-1111 declined');
        return { refunded: i.amount };
      },
      audit,
      idempotencyStore: new InMemoryIdempotencyStore(),
      rateLimitStore: new InMemoryRateLimitStore(),
    });
    const permitted = { [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: { principalId: 'user-1', permissions: ['refunds:create'] } };
    const input = { orderId: 'o-1', amount: 12 };
    // One grant per approved call (each authorizes one execution), bound to acme and these arguments.
    const grantFor = (approvalId: string) => bindGrant({ scope: 'run', connectorId: 'refunds.create', runId: 'run-int', approvalId } as const, { tenant: 'acme', input });

    await callThrough('direct', connector, input, context({}));
    await callThrough('agent-loop', connector, input, context({ ...permitted }));
    await callThrough('direct', connector, input, context({ ...permitted, [DRY_RUN_CONTEXT_KEY]: true }));
    await callThrough('direct', connector, input, context({ ...permitted, [CONNECTOR_GRANTS_CONTEXT_KEY]: [grantFor('ctx-1')], [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'r-1' }));
    await callThrough('agent-loop', connector, input, context({ ...permitted, [CONNECTOR_GRANTS_CONTEXT_KEY]: [grantFor('ctx-1')], [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'r-1' }));
    fail = true;
    await callThrough('direct', connector, input, context({ ...permitted, [CONNECTOR_GRANTS_CONTEXT_KEY]: [grantFor('ctx-2')], [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'r-2' }));
    fail = false;
    await callThrough('direct', connector, input, context({ ...permitted, [CONNECTOR_GRANTS_CONTEXT_KEY]: [grantFor('ctx-3')], [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'r-3' }));
    await callThrough('direct', connector, input, context({ ...permitted, [CONNECTOR_GRANTS_CONTEXT_KEY]: [grantFor('ctx-4')], [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'r-4' }));
    await callThrough('direct', connector, input, context({ ...permitted, [CONNECTOR_GRANTS_CONTEXT_KEY]: ['refunds.create'] }));
    await callThrough('direct', connector, input, context({ ...permitted, [CONNECTOR_EXECUTION_CONTEXT_KEY]: { runId: 42 } }));
    const fetcher = createConnector({
      id: 'status.fetch',
      description: 'Fetch a status page',
      inputSchema: z.object({ url: z.string() }),
      permissions: { sideEffect: 'read', egress: ['status.example.com'] },
      audit,
      execute: async ({ url }, _c, runtime) => (await runtime.fetch(url)).status,
    });
    await callThrough('agent-loop', fetcher, { url: 'http://169.254.169.254/latest/meta-data' }, context({}));
    await sink.flush();

    const events: DecisionRecorded[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && events.push(r.event)) });
    for (const event of events) expect(decodeEvent('audit', encodeEvent('audit', event))).toEqual(event);
    const decisions = events.filter((e) => e.payload.boundary === 'tool').map((e) => `${e.payload.outcome}:${e.payload.code}`);
    expect(decisions).toEqual([
      'denied:CONNECTOR.PERMISSION_MISSING',
      'denied:CONNECTOR.APPROVAL_REQUIRED',
      'observed:CONNECTOR.DRY_RUN',
      'allowed:CONNECTOR.ALLOWED',
      'allowed:CONNECTOR.REPLAYED',
      'allowed:CONNECTOR.ALLOWED',
      'error:CONNECTOR.EXECUTION_FAILED',
      'allowed:CONNECTOR.ALLOWED',
      'denied:CONNECTOR.RATE_LIMITED',
      'denied:CONNECTOR.GRANT_INVALID',
      'denied:CONNECTOR.CONTEXT_INVALID',
      'allowed:CONNECTOR.ALLOWED',
      'denied:CONNECTOR.EGRESS_HOST_NOT_DECLARED',
    ]);
    const allowed = events.find((e) => e.payload.code === 'CONNECTOR.ALLOWED');
    expect(allowed?.payload.attributes).toMatchObject({ sideEffect: 'write', egressEnforcement: 'enforced', action: 'tool.execute', resource: 'connector:refunds.create' });
    expect(allowed?.tenant).toBe('acme');
    expect(JSON.stringify(events)).not.toContain('4111-1111'); // grouped so that no random id or timestamp can match
    await sink.close();
  });
});
