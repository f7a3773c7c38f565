import { beforeAll, describe, expect, it } from '@jest/globals';
import { type GatehouseError } from '@gatehouse/contracts';
import { createKafkaClient, type DecodedRecord, EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { AuditLogger, type AuditInput } from './audit-logger.js';
import { kafkaAuditPublisher, kafkaAuditSink } from './kafka-sink.js';
import { REQUIRED_SINK_FAILED } from './sinks.js';
import { toDecisionEvent } from './to-decision-event.js';
import { eventDigest, verifyAuditSources } from '@gatehouse/contracts';
import { testAgentKey, testKeyring } from '@gatehouse/contracts/testing';
import { type AuditEvent } from './types.js';

type Kafka = ReturnType<typeof testKafka>;

const OPTIONS = { source: 'guard:audit-int', defaultTenant: 'acme' };

let kafka: Kafka;

beforeAll(() => {
  kafka = testKafka('guard-audit-int-spec');
});

function decision(index: number): AuditInput {
  const outcomes = ['allowed', 'denied', 'masked', 'approval-required'] as const;
  return {
    boundary: index % 2 === 0 ? 'tool' : 'output',
    action: index % 2 === 0 ? 'tool.execute' : 'agent.output.policy',
    resource: index % 2 === 0 ? 'tool:refunds' : 'agent:support-bot',
    decision: outcomes[index % outcomes.length] ?? 'allowed',
    code: `SPEC.DECISION_${index}`,
    reason: 'static reason chosen by code',
    actor: { id: `user-${index % 3}`, role: 'support', kind: 'human' },
    context: {
      ...(index % 5 === 0 ? {} : { tenant: index % 2 === 0 ? 'acme' : 'globex' }),
      agentId: 'support-bot',
      runId: `run-${index % 3}`,
      entryPath: 'generate',
    },
    ...(index % 2 === 1 ? { policy: { name: 'pii', phase: 'output', channel: 'answer' }, detections: ['email'] } : {}),
    detail: { index, durationSeconds: index / 100 },
  };
}

async function replayAudit(namespace: string): Promise<DecodedRecord<'audit'>[]> {
  const seen: DecodedRecord<'audit'>[] = [];
  await replayTopic(kafka, 'audit', { namespace, onRecord: (record) => void seen.push(record) });
  return seen;
}

describe('kafkaAuditSink on a real broker', () => {
  it('puts every recorded decision on the namespaced audit topic exactly once, with its fields', async () => {
    const namespace = await provisionedNamespace(kafka, 'audit');
    const producer = await EventProducer.connect(kafka, { namespace });
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', ...OPTIONS, maxBatch: 16 });
    const logger = new AuditLogger({ sink });
    const recorded: AuditEvent[] = [];
    try {
      // A burst (batched by the sink), then one by one (each acknowledged before the next).
      recorded.push(...(await Promise.all(Array.from({ length: 40 }, (_, i) => logger.record(decision(i))))));
      for (let i = 40; i < 50; i += 1) recorded.push(await logger.record(decision(i)));
      expect(sink.buffered).toBe(0);
    } finally {
      await logger.close();
      await producer.close();
    }

    const seen = await waitFor(
      async () => {
        const records = await replayAudit(namespace);
        return records.length >= recorded.length ? records : undefined;
      },
      { what: '50 audit records', timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(seen).toHaveLength(50);
    const keyOf = (e: AuditEvent) => `${e.context.tenant ?? 'acme'}/${e.context.runId}`;
    const byId = new Map(seen.map((record) => [record.event.id, record]));
    expect(byId.size).toBe(50);
    for (const event of recorded) {
      const record = byId.get(event.id);
      const { chain, ...rest } = record?.event ?? {};
      expect(rest).toEqual(toDecisionEvent(event, OPTIONS));
      expect(chain?.producer).toMatch(/^guard:/);
      expect(record?.key).toBe(keyOf(event));
    }
    // One producer stream: sequence numbers 1..50, each linked to its predecessor's digest.
    const bySeq = [...seen].sort((a, b) => (a.event.chain?.seq ?? 0) - (b.event.chain?.seq ?? 0));
    expect(bySeq.map((r) => r.event.chain?.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    bySeq.forEach((r, i) => expect(r.event.chain?.prevHash).toBe(i === 0 ? null : eventDigest(bySeq[i - 1]?.event)));
    // Per key (one partition), the decisions recorded one by one are on the log in that order.
    const sequential = recorded.slice(40);
    const logOrder = seen.map((r) => r.event.id);
    for (const key of new Set(sequential.map(keyOf))) {
      const expected = sequential.filter((e) => keyOf(e) === key).map((e) => e.id);
      expect(logOrder.filter((id) => expected.includes(id))).toEqual(expected);
    }
  });

  it('delivers best-effort decisions on close, in batches, without drops', async () => {
    const namespace = await provisionedNamespace(kafka, 'audit');
    const producer = await EventProducer.connect(kafka, { namespace });
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'best-effort', ...OPTIONS, maxBatch: 8, lingerMs: 20 });
    const logger = new AuditLogger({ sink });
    const recorded: AuditEvent[] = [];
    try {
      for (let i = 0; i < 30; i += 1) recorded.push(await logger.record(decision(i)));
      await logger.close();
    } finally {
      await producer.close();
    }
    expect(sink.dropped).toBe(0);
    expect(sink.buffered).toBe(0);
    const seen = await replayAudit(namespace);
    expect(seen.map((r) => r.event.id).sort()).toEqual(recorded.map((e) => e.id).sort());
  });

  it('signs checkpoints with the agent key, as the agent principal: every decision verifies for its tenants', async () => {
    const namespace = await provisionedNamespace(kafka, 'audit');
    const agentKey = testAgentKey('agent:support-bot', ['acme', 'globex']);
    // The least trusted principal writes the records and the checkpoints; the verifier is an operator (admin).
    const producer = await EventProducer.connect(testKafka('guard-audit-int-agent', 'agent'), { namespace });
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', ...OPTIONS, agentKey, checkpointEvery: 10 });
    const logger = new AuditLogger({ sink });
    try {
      for (let i = 0; i < 25; i += 1) await logger.record(decision(i));
      await logger.close();
    } finally {
      await producer.close();
    }
    const seen = await replayAudit(namespace);
    const report = verifyAuditSources(seen.map((r) => ({ event: r.event, position: `${r.partition}/${r.offset}` })), testKeyring(agentKey));
    expect(report).toMatchObject({ ok: true, records: 25, verified: 25, unverified: 0, forbidden: 0 });
    // At least one per 10 decisions (the interval may write them sooner), together over each decision once.
    const lists = seen.flatMap((r) => (r.event.type === 'AuditChainCheckpoint' ? [r.event.payload.digests] : []));
    expect(lists.length).toBeGreaterThanOrEqual(3);
    expect(lists.every((l) => l.length <= 10)).toBe(true);
    expect(lists.flat()).toHaveLength(25);
  });

  it('fails the record closed with AUDIT.REQUIRED_SINK_FAILED when the broker cannot be reached', async () => {
    const dead = createKafkaClient({ brokers: ['127.0.0.1:1'], clientId: 'guard-audit-dead-broker', connectionTimeoutMs: 500 }, () => undefined);
    let connectAttempts = 0;
    const publisher = kafkaAuditPublisher(() => {
      connectAttempts += 1;
      return EventProducer.connect(dead, { namespace: 'never-provisioned' });
    });
    const sink = kafkaAuditSink({ publisher, mode: 'required', ...OPTIONS, deliveryTimeoutMs: 2_000 });
    const sinkErrors: unknown[] = [];
    const logger = new AuditLogger({ sink, onSinkError: (error) => void sinkErrors.push(error) });
    try {
      const started = Date.now();
      let failure: GatehouseError | undefined;
      try {
        await logger.record(decision(1));
      } catch (error) {
        failure = error as GatehouseError;
      }
      expect(failure?.code).toBe(REQUIRED_SINK_FAILED);
      expect(failure?.retryable).toBe(true);
      expect(failure?.message).not.toContain('127.0.0.1');
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(connectAttempts).toBe(1);
      expect((sinkErrors[0] as GatehouseError).code).toBe('AUDIT.KAFKA_UNAVAILABLE');
      // The event stays in memory: the process knows what it decided even though the log does not.
      expect(logger.events()).toHaveLength(1);
    } finally {
      await logger.close().catch(() => undefined);
      // Waits for the pending connect to give up, so no socket outlives the test.
      await publisher.close();
    }
  });
});
