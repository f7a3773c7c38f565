import { beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createEvent, DecisionRecordedV1, isDecisionRecorded, type TopicEvent, topicName } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { Partitioners } from './kafkajs.js';
import { type DecodedRecord, EventProducer, replayTopic, tailTopic } from './index.js';
import { provisionedNamespace, testKafka, waitFor } from './testing/index.js';

// The audit topic carries producers' checkpoints too; these tests write decisions only.
const codeOf = (event: TopicEvent<'audit'>): string => (isDecisionRecorded(event) ? event.payload.code : event.type);

let kafka: Kafka;

beforeAll(() => {
  kafka = testKafka('kafka-tail-int-spec');
});

function decision(runId: string, code: string) {
  return createEvent(DecisionRecordedV1, { source: 'guard:test', tenant: 'acme', subject: runId }, {
    decisionId: randomUUID(),
    boundary: 'tool',
    outcome: 'allowed',
    code,
    reason: 'manifest satisfied',
  });
}

describe('tailTopic', () => {
  it('hands over exactly the records after the given offsets, then follows new ones in order', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    const seen: DecodedRecord<'audit'>[] = [];
    const batchEnds: { partition: number; nextOffset: string }[] = [];
    try {
      for (const code of ['old-1', 'old-2']) await producer.publish('audit', decision('run-1', code));
      const { nextOffsets } = await replayTopic(kafka, 'audit', { namespace, onRecord: () => undefined });
      const tail = await tailTopic(kafka, 'audit', {
        namespace,
        fromOffsets: nextOffsets,
        onRecord: (r) => void seen.push(r),
        onBatchEnd: (partition, nextOffset) => void batchEnds.push({ partition, nextOffset }),
      });
      try {
        const appended = [];
        for (const code of ['new-1', 'new-2', 'new-3']) appended.push(await producer.publish('audit', decision('run-1', code)));
        await waitFor(() => (seen.length >= 3 ? true : undefined), { what: 'three tailed records' });
        expect(seen.map((r) => codeOf(r.event))).toEqual(['new-1', 'new-2', 'new-3']);
        expect(seen.map((r) => r.offset)).toEqual(appended.map((a) => a.offset));
        const partition = appended[0]!.partition;
        await waitFor(() => (tail.positions()[partition] === '5' ? true : undefined), { what: 'position after the last record' });
        await waitFor(() => (batchEnds.some((b) => b.partition === partition && b.nextOffset === '5') ? true : undefined), { what: 'batch end at offset 5' });
      } finally {
        await tail.stop();
      }
    } finally {
      await producer.close();
    }
  });

  it('starts from offset 0 on partitions it was given no position for, and moves past poison', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    const raw = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await raw.connect();
    const seen: string[] = [];
    const poison: string[] = [];
    const tail = await tailTopic(kafka, 'audit', {
      namespace,
      fromOffsets: {},
      onRecord: (r) => void seen.push(codeOf(r.event)),
      onPoison: (p) => void poison.push(p.code),
    });
    try {
      await producer.publish('audit', decision('run-2', 'A'));
      await raw.send({ topic: topicName('audit', namespace), messages: [{ key: 'acme/run-2', value: 'not json' }] });
      await producer.publish('audit', decision('run-2', 'B'));
      await waitFor(() => (seen.length === 2 && poison.length === 1 ? true : undefined), { what: 'two records and one poison' });
      expect(seen).toEqual(['A', 'B']);
      expect(poison).toEqual(['CONTRACT.MALFORMED_JSON']);
    } finally {
      await tail.stop();
      await raw.disconnect();
      await producer.close();
    }
  });

  it('calls nothing after stop', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    let calls = 0;
    const tail = await tailTopic(kafka, 'audit', { namespace, fromOffsets: {}, onRecord: () => void (calls += 1) });
    try {
      await producer.publish('audit', decision('run-3', 'before'));
      await waitFor(() => (calls === 1 ? true : undefined), { what: 'first record' });
      await tail.stop();
      await producer.publish('audit', decision('run-3', 'after'));
      // Evidence that the record is on the log and could have been delivered.
      const { result } = await replayAll(namespace);
      expect(result.records).toBe(2);
      expect(calls).toBe(1);
    } finally {
      await producer.close();
    }
  });
});

async function replayAll(namespace: string) {
  const records: DecodedRecord<'audit'>[] = [];
  const result = await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void records.push(r) });
  return { records, result };
}
