import { GatehouseError, type TopicId, topicName } from '@gatehouse/contracts';
import { type Admin, type Kafka } from 'kafkajs';
import { decodeRecord } from './decode-record.js';
import { throwawayGroupId } from './groups.js';
import { type DecodedRecord, type PoisonRecord } from './records.js';

export interface ReplayOptions<T extends TopicId> {
  /** Called in offset order within each partition. */
  readonly onRecord: (record: DecodedRecord<T>) => void | Promise<void>;
  /** Records that fail their contract; replay continues past them. */
  readonly onPoison?: (poison: PoisonRecord) => void | Promise<void>;
  /** Start after these stored offsets (the next offset to read, per partition); default: from offset 0. */
  readonly fromOffsets?: Readonly<Record<number, string>>;
  /** Give up (with KAFKA.REPLAY_TIMEOUT) when the end is not reached in time. Default 60 s. */
  readonly timeoutMs?: number;
  /**
   * Count `timeoutMs` from the last record read instead of from the start: a long read that keeps
   * moving goes on, one that stalls fails. For a reader that answers nothing until it is done.
   */
  readonly timeoutOnStall?: boolean;
  readonly signal?: AbortSignal;
  /** Topic namespace (see `topicName`). */
  readonly namespace?: string;
}

/**
 * Per partition, the offset of the first record appended at or after `time` (the broker's time
 * index): where a read "from a time" starts. A partition with nothing appended since starts at
 * its end. Feed the result to `replayTopic`'s `fromOffsets` or a tail's positions.
 */
export async function offsetsAtTime(admin: Admin, topic: string, time: Date): Promise<Record<number, string>> {
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, o.high]));
  const found = await admin.fetchTopicOffsetsByTimestamp(topic, time.getTime());
  return Object.fromEntries(found.map((o) => [o.partition, BigInt(o.offset) < 0n ? (ends.get(o.partition) ?? '0') : o.offset]));
}

/** Retries kafkajs errors the client marks retriable (a leader not yet elected after topic creation). */
async function withRetry<R>(work: () => Promise<R>, attempts = 10): Promise<R> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      const retriable = (error as { retriable?: boolean }).retriable === true;
      if (!retriable || attempt >= attempts) throw error;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}

export interface ReplayResult {
  /** Per partition, the next offset to read: store it to resume later. */
  readonly nextOffsets: Record<number, string>;
  readonly records: number;
  readonly poison: number;
}

/**
 * Reads a topic from offset 0 (or from stored offsets) up to the end it had when the
 * replay began, then stops. A fold over the records gives the state as of that end.
 */
export async function replayTopic<T extends TopicId>(kafka: Kafka, topicId: T, options: ReplayOptions<T>): Promise<ReplayResult> {
  const topic = topicName(topicId, options.namespace);
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, bigint>;
  let starts: Map<number, bigint>;
  try {
    const offsets = await withRetry(() => admin.fetchTopicOffsets(topic));
    ends = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
    starts = new Map(offsets.map((o) => [o.partition, BigInt(o.low)]));
  } finally {
    await admin.disconnect();
  }
  const next = new Map<number, bigint>();
  for (const [partition, low] of starts) {
    const stored = options.fromOffsets?.[partition];
    next.set(partition, stored === undefined ? low : BigInt(stored) > low ? BigInt(stored) : low);
  }
  const pending = new Set([...ends].filter(([p, high]) => (next.get(p) ?? 0n) < high).map(([p]) => p));
  let records = 0;
  let poison = 0;
  const result = (): ReplayResult => ({
    nextOffsets: Object.fromEntries([...next].map(([p, o]) => [p, o.toString()])),
    records,
    poison,
  });
  if (pending.size === 0) return result();

  // kafkajs has no manual assignment: a throwaway group that never commits stands in for it.
  const consumer = kafka.consumer({ groupId: throwawayGroupId(kafka, 'replay'), allowAutoTopicCreation: false, maxWaitTimeInMs: 250 });
  await consumer.connect();
  try {
    await new Promise<void>((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? 60_000;
      const late = () => reject(new GatehouseError('KAFKA.REPLAY_TIMEOUT', `replay of ${topic} did not reach the end in time`, { category: 'unavailable', retryable: true, details: { topic } }));
      let timer = setTimeout(late, timeoutMs);
      let lastReset = Date.now();
      const progressed = () => {
        // Re-armed at most every 100 ms: a timer per record would cost more than the record.
        if (!options.timeoutOnStall || Date.now() - lastReset < 100) return;
        lastReset = Date.now();
        clearTimeout(timer);
        timer = setTimeout(late, timeoutMs);
      };
      const onAbort = () => reject(new GatehouseError('KAFKA.REPLAY_ABORTED', `replay of ${topic} was aborted`, { category: 'unavailable', details: { topic } }));
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const finish = (error?: unknown) => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const advance = (partition: number, position: bigint) => {
        progressed();
        if (position > (next.get(partition) ?? 0n)) next.set(partition, position);
        if (pending.has(partition) && position >= (ends.get(partition) ?? 0n)) {
          pending.delete(partition);
          if (pending.size === 0) finish();
        }
      };
      // Transaction markers and aborted records are never handed to eachMessage; the
      // end-of-batch event still reports the batch's last offset, markers included. A batch
      // may also hold records appended after the end snapshot, which eachMessage skips: the
      // position never moves past the snapshot, or a tail resuming from it would lose them.
      consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        if (payload.topic !== topic) return;
        const last = BigInt(payload.lastOffset) + 1n;
        const end = ends.get(payload.partition) ?? 0n;
        advance(payload.partition, last < end ? last : end);
      });
      // A consumer that crashed for good delivers nothing more: fail now, not at the deadline.
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        if (!payload.restart) finish(payload.error);
      });
      consumer
        .subscribe({ topic, fromBeginning: true })
        .then(() =>
          consumer.run({
            autoCommit: false,
            eachMessage: async ({ partition, message }) => {
              const end = ends.get(partition) ?? 0n;
              const offset = BigInt(message.offset);
              if (!pending.has(partition) || offset >= end || offset < (next.get(partition) ?? 0n)) return;
              const decoded = decodeRecord(topicId, partition, message, options.namespace);
              if (decoded.ok) {
                records += 1;
                await options.onRecord(decoded.record);
              } else {
                poison += 1;
                await options.onPoison?.(decoded.poison);
              }
              advance(partition, offset + 1n);
            },
          }),
        )
        .then(() => {
          try {
            for (const [partition, offset] of next) {
              if (pending.has(partition)) consumer.seek({ topic, partition, offset: offset.toString() });
            }
          } catch {
            // The first join crashed and kafkajs restarts the consumer in the background (a fresh
            // broker's coordinator still loading): no group to seek on yet. The restarted member
            // reads from the beginning and eachMessage skips what lies below `next`.
          }
        })
        .catch(finish);
    });
  } finally {
    await consumer.disconnect();
  }
  return result();
}
