import { beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import {
  ApprovalRequestedV1,
  createEvent,
  DecisionRecordedV1,
  isDecisionRecorded,
  TOPIC_LIST,
  TOPICS,
  type TopicEvent,
  topicName,
} from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { ConfigResourceTypes, Partitioners } from './kafkajs.js';
import {
  type DecodedRecord,
  EventConsumer,
  EventProducer,
  kafkaGroupId,
  provisionTopics,
  replayTopic,
  topicPartitions,
  topicPartitionsFromEnv,
  TransactionalEventProducer,
} from './index.js';
import { provisionedNamespace, randomNamespace, testKafka, waitFor } from './testing/index.js';

// The audit topic carries producers' checkpoints too; these tests write decisions only.
const codeOf = (event: TopicEvent<'audit'>): string => (isDecisionRecorded(event) ? event.payload.code : event.type);

let kafka: Kafka;

beforeAll(() => {
  kafka = testKafka('kafka-int-spec');
});

function decision(tenant: string, runId: string, code = 'TOOL.ALLOWED') {
  return createEvent(DecisionRecordedV1, { source: 'guard:test', tenant, subject: runId }, {
    decisionId: randomUUID(),
    boundary: 'tool',
    outcome: 'allowed',
    code,
    reason: 'manifest satisfied',
  });
}

function approvalRequest(approvalId: string) {
  return createEvent(ApprovalRequestedV1, { source: 'guard:test', tenant: 'acme', subject: approvalId }, {
    approvalId,
    scope: { tenant: 'acme', connectorId: 'refunds', executionId: 'run-1', argumentsHash: createHash('sha256').update(approvalId).digest('hex') },
    arguments: { amount: 10 },
    requester: { id: 'agent-1', role: 'support', kind: 'agent' },
    reason: 'connector requires approval',
    deadline: '2030-01-01T00:00:00.000Z',
  });
}

async function replayAll<T extends 'audit' | 'approvals' | 'deadLetter'>(topicId: T, namespace: string, fromOffsets?: Record<number, string>) {
  const seen: DecodedRecord<T>[] = [];
  const result = await replayTopic(kafka, topicId, { namespace, fromOffsets, onRecord: (r) => void seen.push(r) });
  return { seen, result };
}

describe('provisioning', () => {
  it('creates the catalog topics with LogAppendTime and is idempotent', async () => {
    const namespace = randomNamespace();
    const first = await provisionTopics(kafka, { namespace });
    expect(first.created).toHaveLength(TOPIC_LIST.length);
    const second = await provisionTopics(kafka, { namespace });
    expect(second).toEqual({ created: [], updated: [], unchanged: first.created });

    const admin = kafka.admin();
    await admin.connect();
    try {
      const configs = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topicName('approvals', namespace) }],
      });
      const entries = new Map(configs.resources[0]?.configEntries.map((e) => [e.configName, e.configValue]));
      expect(entries.get('message.timestamp.type')).toBe('LogAppendTime');
      expect(entries.get('retention.ms')).toBe(TOPICS.approvals.configs['retention.ms']);
      const meta = await admin.fetchTopicMetadata({ topics: [topicName('approvals', namespace)] });
      // The catalog's count, unless this deployment (the test broker) provisions fewer.
      expect(meta.topics[0]?.partitions).toHaveLength(topicPartitions('approvals', topicPartitionsFromEnv()));
      // One broker here: one replica, and an acknowledged write needs that one (the cluster's 3 and 2: test/scale/).
      expect(meta.topics[0]?.partitions.map((p) => p.replicas.length)).toEqual(meta.topics[0]?.partitions.map(() => 1));
      expect(entries.get('min.insync.replicas')).toBe('1');
    } finally {
      await admin.disconnect();
    }
  });

  it('restores a config that drifted', async () => {
    const namespace = await provisionedNamespace(kafka);
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topicName('audit', namespace), configEntries: [{ name: 'message.timestamp.type', value: 'CreateTime' }] }],
      });
    } finally {
      await admin.disconnect();
    }
    const report = await provisionTopics(kafka, { namespace });
    expect(report.updated).toEqual([topicName('audit', namespace)]);
  });
});

describe('idempotent producer and replay', () => {
  it('appends with the idempotent producer and replays from offset 0 with the log append time', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    const before = Date.now();
    try {
      const events = [decision('acme', 'run-1', 'A'), decision('acme', 'run-1', 'B'), decision('acme', 'run-1', 'C')];
      const appended = [];
      for (const e of events) appended.push(await producer.publish('audit', e));
      // One key, one partition, consecutive offsets: order is kept.
      expect(new Set(appended.map((a) => a.partition)).size).toBe(1);
      expect(appended.map((a) => Number(a.offset))).toEqual([0, 1, 2]);

      const { seen, result } = await replayAll('audit', namespace);
      expect(seen.map((r) => codeOf(r.event))).toEqual(['A', 'B', 'C']);
      expect(seen[0]?.key).toBe('acme/run-1');
      expect(seen[0]!.logTime.getTime()).toBeGreaterThanOrEqual(before - 1_000);
      expect(result.records).toBe(3);
      expect(result.nextOffsets[appended[0]!.partition]).toBe('3');
    } finally {
      await producer.close();
    }
  });

  it('resumes a replay from stored offsets without re-reading', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      await producer.publish('audit', decision('acme', 'run-2', 'first'));
      const { result: firstPass } = await replayAll('audit', namespace);
      await producer.publish('audit', decision('acme', 'run-2', 'second'));
      const { seen } = await replayAll('audit', namespace, firstPass.nextOffsets);
      expect(seen.map((r) => codeOf(r.event))).toEqual(['second']);
    } finally {
      await producer.close();
    }
  });

  it('appends a batch in one request, in order per key, and sends nothing when one event is invalid', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      const batch = [
        decision('acme', 'run-a', 'A1'),
        decision('acme', 'run-b', 'B1'),
        decision('acme', 'run-a', 'A2'),
        decision('acme', 'run-b', 'B2'),
        decision('acme', 'run-a', 'A3'),
      ];
      const appended = await producer.publishMany('audit', batch);
      expect(appended.length).toBeGreaterThanOrEqual(1);
      expect(appended.every((a) => a.topic === topicName('audit', namespace))).toBe(true);

      const invalid = { ...decision('acme', 'run-a', 'never'), tenant: '' };
      await expect(producer.publishMany('audit', [decision('acme', 'run-a', 'never-either'), invalid])).rejects.toMatchObject({ code: 'CONTRACT.INVALID_EVENT' });
      expect(await producer.publishMany('audit', [])).toEqual([]);

      const { seen } = await replayAll('audit', namespace);
      const codesOf = (key: string) => seen.filter((r) => r.key === key).map((r) => codeOf(r.event));
      expect(codesOf('acme/run-a')).toEqual(['A1', 'A2', 'A3']);
      expect(codesOf('acme/run-b')).toEqual(['B1', 'B2']);
      expect(seen).toHaveLength(5);
    } finally {
      await producer.close();
    }
  });

  it('returns at once for an empty topic', async () => {
    const namespace = await provisionedNamespace(kafka);
    const { seen, result } = await replayAll('approvals', namespace);
    expect(seen).toEqual([]);
    expect(result.records).toBe(0);
  });
});

describe('transactions', () => {
  it('makes committed events visible together and aborted ones never', async () => {
    const namespace = await provisionedNamespace(kafka);
    const tx = await TransactionalEventProducer.connect(kafka, `tx-${namespace}`, { namespace });
    try {
      await tx.run(async (scope) => {
        await scope.publish('approvals', approvalRequest('appr-committed-1'));
        await scope.publish('approvals', approvalRequest('appr-committed-2'));
      });
      await expect(
        tx.run(async (scope) => {
          await scope.publish('approvals', approvalRequest('appr-aborted'));
          throw new Error('business rule failed after the write');
        }),
      ).rejects.toThrow('business rule failed');
    } finally {
      await tx.close();
    }
    // Marker after the aborted transaction, so the replay end lies beyond it.
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      await producer.publish('approvals', approvalRequest('appr-after'));
    } finally {
      await producer.close();
    }
    const { seen } = await replayAll('approvals', namespace);
    const ids = seen.map((r) => (r.event as TopicEvent<'approvals'>).payload.approvalId).sort();
    expect(ids).toEqual(['appr-after', 'appr-committed-1', 'appr-committed-2']);
  });
});

describe('consumer and dead letters', () => {
  it('parks a poison record on the dead-letter topic with its reason and keeps consuming', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    const raw = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await raw.connect();
    const handled: string[] = [];
    const parked: string[] = [];
    const consumer = await EventConsumer.start(kafka, {
      groupId: kafkaGroupId(kafka, `g-${namespace}`),
      topicId: 'approvals',
      namespace,
      deadLetters: producer,
      handle: async (r) => void handled.push(r.event.payload.approvalId),
      onDeadLetter: (code) => void parked.push(code),
    });
    try {
      // All on one key, so one partition and a defined order.
      await producer.publish('approvals', approvalRequest('same'));
      await raw.send({ topic: topicName('approvals', namespace), messages: [{ key: 'same', value: JSON.stringify({ ...approvalRequest('same'), tenant: 42 }) }] });
      await raw.send({ topic: topicName('approvals', namespace), messages: [{ key: 'same', value: 'not json' }] });
      await producer.publish('approvals', approvalRequest('same'));
      await waitFor(() => (handled.length === 2 && parked.length === 2 ? true : undefined), { what: 'two handled and two parked' });
      expect(parked).toEqual(['CONTRACT.INVALID_EVENT', 'CONTRACT.MALFORMED_JSON']);

      const dlq: { code?: string; field?: string }[] = [];
      const dlqConsumer = kafka.consumer({ groupId: kafkaGroupId(kafka, `dlq-${namespace}`) });
      await dlqConsumer.connect();
      await dlqConsumer.subscribe({ topic: topicName('deadLetter', namespace), fromBeginning: true });
      await dlqConsumer.run({
        eachMessage: async ({ message }) => {
          dlq.push({ code: message.headers?.['gatehouse-dlq-code']?.toString(), field: message.headers?.['gatehouse-dlq-reason']?.toString() });
        },
      });
      await waitFor(() => (dlq.length === 2 ? true : undefined), { what: 'dead letters' });
      await dlqConsumer.disconnect();
      expect(dlq[0]?.code).toBe('CONTRACT.INVALID_EVENT');
      expect(dlq[0]?.field).toContain('"tenant"');
    } finally {
      await consumer.stop();
      await raw.disconnect();
      await producer.close();
    }
  });

  it('dead-letters a record whose handler keeps failing, after bounded retries', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    let attempts = 0;
    const parked: string[] = [];
    const handled: string[] = [];
    const consumer = await EventConsumer.start(kafka, {
      groupId: kafkaGroupId(kafka, `g-${namespace}`),
      topicId: 'approvals',
      namespace,
      deadLetters: producer,
      maxAttempts: 3,
      handle: async (r) => {
        if (r.event.payload.approvalId === 'bad') {
          attempts += 1;
          throw new Error('database is down');
        }
        handled.push(r.event.payload.approvalId);
      },
      onDeadLetter: (code) => void parked.push(code),
    });
    try {
      await producer.publish('approvals', approvalRequest('bad'));
      await producer.publish('approvals', approvalRequest('good'));
      await waitFor(() => (parked.length === 1 && handled.length === 1 ? true : undefined), { what: 'parked and handled' });
      expect(attempts).toBe(3);
      expect(parked).toEqual(['CONSUMER.HANDLER_FAILED']);
    } finally {
      await consumer.stop();
      await producer.close();
    }
  });
});
