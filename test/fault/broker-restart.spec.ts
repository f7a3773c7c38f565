import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { AGENT_AUDIT_CONTEXT_KEY, AuditLogger, type AuditSink, CONNECTOR_EXECUTION_CONTEXT_KEY, createConnector, invokeConnector, kafkaAuditPublisher, kafkaAuditSink } from '@gatehouse/guard';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from '@gatehouse/guard/approvals';
import { TEST_AGENT_KEY, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';
import { OwnBroker } from './support/own-broker.js';

// The broker stopped and started again under a running agent and a running approval service.
// It is a broker of this spec's own (kafka.sh, own state dir and ports): the suite's shared
// broker and anyone's dev broker are never touched.
const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([{ id: 'user:rita', role: 'payments-approver', tenants: ['acme'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') }]);
const auth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };

let broker: OwnBroker | undefined;
let admin: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let approvals: Started & { url: string };
let producer: EventProducer | undefined;
let gateway: KafkaApprovalGateway | undefined;
let audit: AuditLogger | undefined;

/** Ids of audit events whose required write resolved: the broker acknowledged them. */
const acknowledged: string[] = [];
/** The calls whose side effect ran, by call id, once per run. */
const executed: string[] = [];

beforeAll(async () => {
  broker = await OwnBroker.start('broker-restart');
  admin = broker.kafka('fault-broker-admin');
  namespace = await provisionedNamespace(admin, 'fault');
  database = await throwawayDatabase('gh_fault');
  approvals = await startService('approval', { ...broker.env('svc-approval'), GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_APPROVAL_REVIEWERS: reviewers });

  // The agent process's side, in this process, as the `agent` principal.
  const agentKafka = broker.kafka('fault-agent', 'agent');
  producer = await EventProducer.connect(agentKafka, { namespace });
  // A short delivery deadline keeps each refused call short; the default (5 s) behaves the same.
  const kafkaSink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:fault-agent', defaultTenant: 'acme', deliveryTimeoutMs: 2_000 });
  const recording: AuditSink = {
    required: true,
    write: async (event) => {
      await kafkaSink.write(event);
      acknowledged.push(event.id);
    },
    flush: () => kafkaSink.flush(),
    close: () => kafkaSink.close(),
  };
  audit = new AuditLogger({ sink: recording });
  gateway = createKafkaApprovalGateway({ kafka: agentKafka, keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:fault-agent', replayTimeoutMs: 10_000 });
  await gateway.start();
}, 180_000);

afterAll(async () => {
  try {
    killAll();
    await gateway?.close().catch(() => undefined);
    await audit?.close().catch(() => undefined);
    await producer?.close().catch(() => undefined);
    await database?.drop();
  } finally {
    // Stopped even when a test or the clean-up failed half way, and its data and passwords
    // removed: nothing of this spec outlives it but the jars kept for the next run.
    await broker?.kafkaSh('reset');
  }
}, 60_000);

function context(runId: string): RequestContext {
  const rc = new RequestContext();
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'support', runId });
  return rc;
}

/** A read tool: its decision must be on the audit topic before it runs (required sink). */
function lookupTool() {
  return createConnector({
    id: 'orders.lookup',
    description: 'Look an order up',
    inputSchema: z.object({ call: z.string() }),
    permissions: { sideEffect: 'read' },
    audit,
    execute: async ({ call }) => {
      executed.push(call);
      return { found: call };
    },
  });
}

/**
 * A tool that needs a person. Its audit trail stays in memory so that what refuses it while the
 * broker is down is the approvals log itself, not the audit sink the first tool already proves.
 */
function refundTool() {
  return createConnector({
    id: 'payments.refund',
    description: 'Refund an order',
    inputSchema: z.object({ call: z.string(), amount: z.number().positive() }),
    permissions: { sideEffect: 'write', requiresApproval: true },
    approvals: { gateway: gateway as KafkaApprovalGateway, deadlineMs: 120_000, waitMs: 60_000 },
    audit: new AuditLogger(),
    execute: async ({ call }) => {
      executed.push(call);
      return { refunded: call };
    },
  });
}

interface Outcome {
  readonly call: string;
  readonly ok: boolean;
  readonly code?: string;
}

async function lookup(call: string): Promise<Outcome> {
  try {
    await invokeConnector(lookupTool(), { call }, { requestContext: context(`run-${call}`) });
    return { call, ok: true };
  } catch (error) {
    return { call, ok: false, code: (error as { code?: string }).code ?? 'unknown' };
  }
}

async function auditIdsOnTopic(): Promise<Set<string>> {
  const ids = new Set<string>();
  await replayTopic(admin, 'audit', { namespace, onRecord: (r) => void ids.add(r.event.id) });
  return ids;
}

async function health(): Promise<number> {
  return (await fetch(`${approvals.url}/health`)).status;
}

describe('the broker stopped and restarted mid-run', () => {
  it('fails closed while it is down, loses nothing it acknowledged, and work resumes after the restart', async () => {
    const tool = refundTool();
    // Calls keep flowing the whole time: before, during and after the outage.
    const outcomes: Outcome[] = [];
    let flowing = true;
    let n = 0;
    const traffic = (async () => {
      while (flowing) {
        n += 1;
        outcomes.push(await lookup(`c${n}`));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      await waitFor(() => (outcomes.filter((o) => o.ok).length >= 10 ? true : undefined), { what: '10 calls through', timeoutMs: 30_000 });
      const acknowledgedBeforeStop = [...acknowledged];
      expect(await health()).toBe(200);

      await broker?.stop();
      const downAt = outcomes.length;

      // While it is down: the required audit refuses the read tool, the approvals log refuses the
      // refund; neither runs. Expectations are attached before anything else is awaited.
      const refused = expect(invokeConnector(lookupTool(), { call: 'down-lookup' }, { requestContext: context('run-down') })).rejects.toMatchObject({ code: 'CONNECTOR.AUDIT_UNAVAILABLE', retryable: true });
      const refundRefused = expect(invokeConnector(tool, { call: 'down-refund', amount: 40 }, { requestContext: context('run-down-refund') })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_UNAVAILABLE', retryable: true });
      await refused;
      await refundRefused;
      expect(executed).not.toContain('down-lookup');
      expect(executed).not.toContain('down-refund');
      // The service says so too: its health check is not 200 while the broker is away.
      expect(await health()).not.toBe(200);
      await waitFor(() => (outcomes.slice(downAt).some((o) => !o.ok) ? true : undefined), { what: 'the background traffic refused', timeoutMs: 30_000 });

      await broker?.kafkaSh('start');

      // Nothing acknowledged was lost: every event whose write resolved before the stop is on the topic.
      const onTopic = await auditIdsOnTopic();
      expect(acknowledgedBeforeStop.length).toBeGreaterThanOrEqual(10);
      expect(acknowledgedBeforeStop.filter((id) => !onTopic.has(id))).toEqual([]);

      // Work resumes on the same clients (kafkajs reconnects): the background calls succeed again...
      const restartedAt = outcomes.length;
      await waitFor(() => (outcomes.slice(restartedAt).filter((o) => o.ok).length >= 5 ? true : undefined), { what: 'calls through again after the restart', timeoutMs: 60_000 });
      flowing = false;
      await traffic;
      await waitFor(async () => ((await health()) === 200 ? true : undefined), { what: 'the approval service healthy again', timeoutMs: 60_000 });

      // ...and the approval round trip works end to end: request on the log, listed by the service
      // (its tail came back), decided by a reviewer, seen by the waiting agent, run once. The
      // service's tail rejoins its consumer group only once the broker has expired the member it
      // had before the outage (session timeout, 30 s), so the listing takes about that long.
      const runId = `run-after-${randomUUID().slice(0, 8)}`;
      const refund = invokeConnector(tool, { call: 'after-refund', amount: 25 }, { requestContext: context(runId) });
      const settled = refund.then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      );
      const pending = await waitFor(async () => {
        const res = await fetch(`${approvals.url}/v1/approvals?status=pending`, { headers: auth });
        const page = (await res.json()) as { items?: { approvalId: string; executionId: string }[] };
        return page.items?.find((i) => i.executionId === `support/${runId}`);
      }, { what: 'the request listed by the approval service', timeoutMs: 60_000, intervalMs: 250 });
      const decision = await fetch(`${approvals.url}/v1/approvals/${pending.approvalId}/decision`, { method: 'POST', headers: auth, body: JSON.stringify({ verdict: 'approve' }) });
      expect(decision.status).toBe(200);
      expect(await settled).toEqual({ ok: true, value: { refunded: 'after-refund' } });

      // Every call the agent was told succeeded ran exactly once; every refused call never ran.
      const ok = outcomes.filter((o) => o.ok).map((o) => o.call);
      const failed = outcomes.filter((o) => !o.ok);
      expect(failed.length).toBeGreaterThan(0);
      expect(new Set(failed.map((o) => o.code))).toEqual(new Set(['CONNECTOR.AUDIT_UNAVAILABLE']));
      expect(executed.filter((c) => c.startsWith('c')).sort()).toEqual([...ok].sort());
      expect(executed.filter((c) => c === 'after-refund')).toHaveLength(1);

      // And everything acknowledged over the whole run, outage included, is on the topic (the
      // traffic has stopped: one read sees it all). A write sent as the broker stopped may have
      // landed unacknowledged; the producer then renews its id (ProducerLane), or the broker would
      // take the next write of the same size for a retry of it and acknowledge it unwritten.
      await audit?.flush().catch(() => undefined);
      const finalTopic = await auditIdsOnTopic();
      expect(acknowledged.filter((id) => !finalTopic.has(id))).toEqual([]);
    } finally {
      // A failed step must not leave the traffic loop running into the next spec.
      flowing = false;
      await traffic;
    }
  }, 240_000);
});
