import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createEvent, DecisionRecordedV1 } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { EventProducer, OwnedTail, topicPartitions, topicPartitionsFromEnv } from './index.js';
import { provisionedNamespace, testKafka, waitFor } from './testing/index.js';

// Replicas sharing a topic's partitions through one consumer group (OwnedTail): as members come
// and go, every record of every partition is handed over once, to one member at a time, in order.

let kafka: Kafka;
/** The audit topic's partition count in this run (GATEHOUSE_TOPIC_PARTITIONS, or the catalog's). */
const partitionCount = topicPartitions('audit', topicPartitionsFromEnv());
const every = Array.from({ length: partitionCount }, (_, p) => p);
const open: { stop(): Promise<void> }[] = [];

beforeAll(() => {
  kafka = testKafka('owned-tail-int-spec');
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.stop().catch(() => undefined)));
});

/** A member that records every hand-over as `partition/offset`, and the partitions it holds. */
async function member(namespace: string, seen: string[], positions: Map<number, bigint>): Promise<OwnedTail<'audit'>> {
  const tail = await OwnedTail.start({
    kafka,
    topicId: 'audit',
    namespace,
    group: 'owned-tail-test',
    sessionTimeoutMs: 6_000,
    // Each partition is read from the position the last member that held it reached (as a store would keep it).
    take: async (partition) => ({
      from: positions.get(partition) ?? 0n,
      record: (record) => void seen.push(`${record.partition}/${record.offset}`),
      poison: () => undefined,
      batchEnd: async (next) => void positions.set(partition, next),
      stop: async () => undefined,
    }),
  });
  open.push(tail);
  return tail;
}

function decision(run: number) {
  return createEvent(DecisionRecordedV1, { source: 'guard:test', tenant: 'acme', subject: `run-${run}` }, { decisionId: randomUUID(), boundary: 'tool', outcome: 'allowed', code: 'TOOL.ALLOWED', reason: 'manifest satisfied' });
}

describe('OwnedTail', () => {
  it('hands every record over once across members joining and leaving, kept partitions included', async () => {
    const namespace = await provisionedNamespace(kafka, 'owned');
    const producer = await EventProducer.connect(kafka, { namespace });
    const seen: string[] = [];
    const positions = new Map<number, bigint>();
    const written: string[] = [];
    const write = async (n: number) => {
      for (let i = 0; i < n; i += 1) {
        const landed = await producer.publish('audit', decision(written.length % 9));
        written.push(`${landed.partition}/${landed.offset}`);
      }
    };
    try {
      const first = await member(namespace, seen, positions);
      await waitFor(() => (first.partitions().length === partitionCount ? true : undefined), { what: 'the first member holding every partition', timeoutMs: 30_000 });
      await write(30);
      await waitFor(() => (seen.length >= 30 ? true : undefined), { what: 'the first records handed over', timeoutMs: 30_000 });
      // A second member joins (the first keeps some partitions through the rebalance), records go on...
      const second = await member(namespace, seen, positions);
      await waitFor(() => (second.partitions().length > 0 && first.partitions().length + second.partitions().length === partitionCount ? true : undefined), { what: 'the partitions split', timeoutMs: 30_000 });
      await write(30);
      // ...and it leaves again: the first takes its partitions back and keeps its own.
      await second.stop();
      await waitFor(() => (first.partitions().length === partitionCount ? true : undefined), { what: 'the first member holding every partition again', timeoutMs: 30_000 });
      await write(30);
      await waitFor(() => (seen.length >= written.length ? true : undefined), { what: 'every record handed over', timeoutMs: 30_000 });
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      await producer.close();
    }
    expect(seen.length).toBe(written.length);
    expect(new Set(seen)).toEqual(new Set(written));
  }, 120_000);

  it('sets a partition up again while its setup fails (a broker or database away), and then hands its records over from its position', async () => {
    const namespace = await provisionedNamespace(kafka, 'owned');
    const producer = await EventProducer.connect(kafka, { namespace });
    const seen: string[] = [];
    const failures = new Map<number, number>();
    const written: string[] = [];
    try {
      for (let i = 0; i < 9; i += 1) {
        const landed = await producer.publish('audit', decision(i));
        written.push(`${landed.partition}/${landed.offset}`);
      }
    } finally {
      await producer.close();
    }
    const tail = await OwnedTail.start({
      kafka,
      topicId: 'audit',
      namespace,
      group: 'owned-tail-retry',
      take: async (partition) => {
        // Each partition's first two setups fail, as a claim would while the database restarts.
        const failed = failures.get(partition) ?? 0;
        if (failed < 2) {
          failures.set(partition, failed + 1);
          throw new Error('the database is away');
        }
        return { from: 0n, record: (record) => void seen.push(`${record.partition}/${record.offset}`), poison: () => undefined, batchEnd: async () => undefined, stop: async () => undefined };
      },
      onTakeFailed: () => undefined,
    });
    open.push(tail);
    await waitFor(() => (seen.length >= written.length && tail.partitions().length === partitionCount ? true : undefined), { what: 'every partition set up and every record handed over after the retried setups', timeoutMs: 45_000 });
    expect(new Set(seen)).toEqual(new Set(written));
    // Every partition failed twice before it was set up, and the tail holds them all.
    expect([...failures.keys()].sort((a, b) => a - b)).toEqual(every);
    expect([...failures.values()].every((n) => n === 2)).toBe(true);
    expect(tail.partitions()).toEqual(every);
  }, 60_000);
});
