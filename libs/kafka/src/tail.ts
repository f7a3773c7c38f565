import { type TopicId, topicName } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { decodeRecord } from './decode-record.js';
import { throwawayGroupId } from './groups.js';
import { type DecodedRecord, type PoisonRecord } from './records.js';
import { handOver, LagReport } from './telemetry/kafka-telemetry.js';

export interface TailOptions<T extends TopicId> {
  /** Per partition, the next offset to read (e.g. a replay's `nextOffsets`); partitions not listed start at offset 0. */
  readonly fromOffsets: Readonly<Record<number, string>>;
  /** Called once per record, in offset order within each partition. */
  readonly onRecord: (record: DecodedRecord<T>) => void | Promise<void>;
  /** Records that fail their contract; the tail moves on past them. */
  readonly onPoison?: (poison: PoisonRecord) => void | Promise<void>;
  /**
   * Called after each fetched batch of one partition was handed over, with the next offset to
   * read on it (past trailing transaction markers too): the place to commit a batch's work.
   */
  readonly onBatchEnd?: (partition: number, nextOffset: string) => void | Promise<void>;
  /** The consumer stopped for good (a non-retriable error); the tail delivers nothing more. */
  readonly onCrash?: (error: unknown) => void;
  /** Topic namespace (see `topicName`). */
  readonly namespace?: string;
  /** Longest a fetch waits for new records, ms (default 100): the tail's idle latency bound. */
  readonly maxWaitTimeInMs?: number;
  /**
   * Names the consumer span each record carrying a trace context is handed over in (`<topic>.apply`
   * for a fold): the reader continues the producer's trace. None: no span.
   */
  readonly recordSpan?: string;
}

/** A running tail. */
export interface TailHandle {
  /** Per partition, the next offset the tail will hand over. */
  positions(): Record<number, string>;
  /** Disconnects; no callback runs after it resolves. */
  stop(): Promise<void>;
}

/**
 * Follows a topic live from given offsets, handing over every record once, in offset order
 * per partition. kafkajs has no manual assignment: a throwaway group that never commits
 * stands in for it, and the tail seeks to its own positions after `run` and after every
 * rebalance, skipping anything below them, so a re-join neither repeats nor loses a record.
 */
export async function tailTopic<T extends TopicId>(kafka: Kafka, topicId: T, options: TailOptions<T>): Promise<TailHandle> {
  const topic = topicName(topicId, options.namespace);
  const next = new Map<number, bigint>(Object.entries(options.fromOffsets).map(([p, o]) => [Number(p), BigInt(o)]));
  let stopped = false;
  const lag = new LagReport(topic);
  const consumer = kafka.consumer({
    groupId: throwawayGroupId(kafka, 'tail'),
    allowAutoTopicCreation: false,
    maxWaitTimeInMs: options.maxWaitTimeInMs ?? 100,
  });
  const seekAll = () => {
    for (const [partition, offset] of next) consumer.seek({ topic, partition, offset: offset.toString() });
  };
  const advance = async (partition: number, position: bigint, highWatermark: string | undefined) => {
    if (position > (next.get(partition) ?? 0n)) next.set(partition, position);
    lag.batchEnd(partition, next.get(partition) ?? 0n, highWatermark);
    await options.onBatchEnd?.(partition, (next.get(partition) ?? 0n).toString());
  };

  await consumer.connect();
  try {
    // Without a committed offset a (re)joined member starts at the beginning; the seeks below
    // move it to the tail's positions, and the guard in eachBatch skips anything older.
    await consumer.subscribe({ topic, fromBeginning: true });
    consumer.on(consumer.events.GROUP_JOIN, () => {
      if (!stopped) seekAll();
    });
    let crashedForGood = false;
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart) crashedForGood = true;
      if (!stopped && !payload.restart) options.onCrash?.(payload.error);
    });
    // A batch of transaction markers only never reaches eachBatch; its end still moves the position.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (stopped || payload.topic !== topic || payload.batchSize !== 0) return;
      Promise.resolve(advance(payload.partition, BigInt(payload.lastOffset) + 1n, payload.highWatermark)).catch((error: unknown) => options.onCrash?.(error));
    });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat, isRunning, isStale }) => {
        const partition = batch.partition;
        for (const message of batch.messages) {
          if (stopped || !isRunning() || isStale()) return;
          const offset = BigInt(message.offset);
          if (offset < (next.get(partition) ?? 0n)) continue;
          const decoded = decodeRecord(topicId, partition, message, options.namespace);
          if (decoded.ok) await handOver(options.recordSpan, decoded.record, () => options.onRecord(decoded.record));
          else await options.onPoison?.(decoded.poison);
          next.set(partition, offset + 1n);
        }
        if (stopped || !isRunning() || isStale()) return;
        const last = BigInt(batch.lastOffset()) + 1n;
        await advance(partition, last > (next.get(partition) ?? 0n) ? last : (next.get(partition) ?? 0n), batch.highWatermark);
        await heartbeat();
      },
    });
    // `run` also resolves when the first join crashed and kafkajs restarts the consumer in the
    // background (a freshly started broker answers "the coordinator is loading" for a while):
    // then there is no group to seek on and `seek` throws. The restarted member seeks on
    // GROUP_JOIN, and the guard in eachBatch skips anything below our positions meanwhile.
    // A crash kafkajs does not recover from still fails the start.
    try {
      seekAll();
    } catch (error) {
      if (crashedForGood) throw error;
    }
  } catch (error) {
    stopped = true;
    lag.close();
    await consumer.disconnect().catch(() => undefined);
    throw error;
  }

  return {
    positions: () => Object.fromEntries([...next].map(([p, o]) => [p, o.toString()])),
    stop: async () => {
      stopped = true;
      lag.close();
      await consumer.disconnect();
    },
  };
}
