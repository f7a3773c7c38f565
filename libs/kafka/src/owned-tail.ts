import { type TopicId, topicName } from '@gatehouse/contracts';
import { type Consumer, type Kafka } from 'kafkajs';
import { decodeRecord } from './decode-record.js';
import { kafkaGroupId } from './groups.js';
import { type DecodedRecord, type PoisonRecord } from './records.js';
import { handOver, LagReport } from './telemetry/kafka-telemetry.js';

/** What a replica does with one partition the group gave it, from its stored position on. */
export interface OwnedPartition<T extends TopicId> {
  /** The next offset to read (the position stored for the partition). */
  readonly from: bigint;
  /** Handed over in offset order; awaited (it may hold the partition back). */
  record(record: DecodedRecord<T>): void | Promise<void>;
  poison(poison: PoisonRecord): void | Promise<void>;
  /** A fetched batch ended at `next` (the next offset to read): the place to commit its work. Awaited. */
  batchEnd(next: bigint): Promise<void>;
  /** The partition moved to another replica, or the tail stops: nothing more is handed over. */
  stop(): Promise<void>;
}

export interface OwnedTailOptions<T extends TopicId> {
  readonly kafka: Kafka;
  readonly topicId: T;
  /** Topic namespace (see `topicName`); it is part of the group id, so deployments never share a group. */
  readonly namespace?: string | undefined;
  /** The group's purpose (`kafkaGroupId`): the replicas that share the work share it. */
  readonly group: string;
  /** The group gave this replica `partition`: set it up (claim it, load its position). */
  take(partition: number): Promise<OwnedPartition<T>>;
  /** How long the group waits for a replica that stopped answering before its partitions move, ms. Default 10,000. */
  readonly sessionTimeoutMs?: number;
  /** The consumer stopped for good: nothing more is handed over. */
  readonly onCrash?: (error: unknown) => void;
  /**
   * Setting up `partition` failed (the broker or the database did not answer): it stays paused and
   * is set up again after a back-off while it is still this replica's (`attempt` counts from 1).
   */
  readonly onTakeFailed?: (partition: number, attempt: number, error: unknown) => void;
  /** Names the consumer span each record carrying a trace context is handed over in (see `TailOptions.recordSpan`). */
  readonly recordSpan?: string;
}

/** Back-off between two attempts to set up a partition: 200 ms doubling, at most 5 s. */
const takeBackoffMs = (attempt: number): number => Math.min(5_000, 200 * 2 ** Math.min(attempt - 1, 5));

/**
 * Follows the partitions of a topic that a consumer group gives this replica. The replicas of a
 * service share the group, and Kafka splits the partitions among them: a partition assigned is
 * paused until `take` has set it up, then read from its `from`; a partition that moves away, or
 * every partition when the tail stops, gets `stop`, and nothing of it is handed over afterwards
 * (assignments are handled one after another, in the order the group made them).
 */
export class OwnedTail<T extends TopicId> {
  private readonly owned = new Map<number, OwnedPartition<T>>();
  /**
   * Per partition followed, the next offset to hand over. After every rebalance kafkajs fetches a
   * partition it kept from its committed offset (none: the beginning); the tail seeks it back here
   * and skips anything below, so a kept partition is never handed over twice.
   */
  private readonly next = new Map<number, bigint>();
  private readonly topic: string;
  /** Each followed partition's lag, for the `gatehouse.fold.lag` gauge. */
  private readonly lag: LagReport;
  private consumer: Consumer | undefined;
  private assigning: Promise<void> = Promise.resolve();
  /** The partitions of the latest assignment the group made (set as it arrives, before it is handled). */
  private latest = new Set<number>();
  private assignments = 0;
  private stopped = false;

  private constructor(private readonly options: OwnedTailOptions<T>) {
    this.topic = topicName(options.topicId, options.namespace);
    this.lag = new LagReport(this.topic);
  }

  /** Joins the group; partitions are handed to `take` as the group assigns them. */
  static async start<T extends TopicId>(options: OwnedTailOptions<T>): Promise<OwnedTail<T>> {
    const tail = new OwnedTail(options);
    try {
      await tail.run();
    } catch (error) {
      await tail.stop();
      throw error;
    }
    return tail;
  }

  private async run(): Promise<void> {
    const { kafka, namespace } = this.options;
    const sessionTimeout = this.options.sessionTimeoutMs ?? 10_000;
    const consumer = kafka.consumer({
      // One group per deployment: replicas of another namespace's topics never share it.
      groupId: kafkaGroupId(kafka, namespace ? `${this.options.group}.${namespace}` : this.options.group),
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: 100,
      sessionTimeout,
      heartbeatInterval: Math.max(100, Math.floor(sessionTimeout / 10)),
      rebalanceTimeout: Math.max(sessionTimeout, 10_000),
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topic: this.topic, fromBeginning: true });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      const partitions = (payload.memberAssignment[this.topic] ?? []).slice().sort((a, b) => a - b);
      this.latest = new Set(partitions);
      // New partitions wait, paused, until they are set up and know where to read from; kept ones
      // go on from where they were.
      const fresh = partitions.filter((p) => !this.owned.has(p));
      if (fresh.length > 0) consumer.pause([{ topic: this.topic, partitions: fresh }]);
      for (const partition of partitions) {
        const at = this.next.get(partition);
        if (at !== undefined && this.owned.has(partition)) consumer.seek({ topic: this.topic, partition, offset: at.toString() });
      }
      this.assigning = this.assigning.then(() => this.assign(partitions)).catch((error: unknown) => this.options.onCrash?.(error));
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart && !this.stopped) this.options.onCrash?.(payload.error);
    });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, isStale, isRunning, heartbeat }) => {
        const partition = batch.partition;
        const handler = this.owned.get(partition);
        if (!handler) return;
        const current = () => isRunning() && !isStale() && this.owned.get(partition) === handler;
        for (const message of batch.messages) {
          if (!current()) return;
          const offset = BigInt(message.offset);
          if (offset < (this.next.get(partition) ?? handler.from)) continue;
          const decoded = decodeRecord(this.options.topicId, partition, message, namespace);
          if (decoded.ok) await handOver(this.options.recordSpan, decoded.record, () => handler.record(decoded.record));
          else await handler.poison(decoded.poison);
          this.next.set(partition, offset + 1n);
        }
        if (!current()) return;
        const end = BigInt(batch.lastOffset()) + 1n;
        const next = this.next.get(partition) ?? handler.from;
        // A batch of transaction markers or records already handed over moves nothing back.
        if (end < next) return;
        this.next.set(partition, end);
        this.lag.batchEnd(partition, end, batch.highWatermark);
        await handler.batchEnd(end);
        await heartbeat();
      },
    });
  }

  /** Partitions that moved away stop; new ones are set up and read from their position. */
  private async assign(partitions: readonly number[]): Promise<void> {
    this.assignments += 1;
    const keep = new Set(partitions);
    for (const [partition, handler] of this.owned) {
      if (keep.has(partition)) continue;
      this.owned.delete(partition);
      this.next.delete(partition);
      this.lag.drop(partition);
      await handler.stop();
    }
    for (const partition of partitions) {
      if (this.owned.has(partition) || this.stopped) continue;
      const handler = await this.takeWhileAssigned(partition);
      if (!handler) continue;
      if (this.stopped || !this.latest.has(partition)) {
        await handler.stop();
        if (this.stopped) return;
        continue;
      }
      this.owned.set(partition, handler);
      this.next.set(partition, handler.from);
      this.consumer?.seek({ topic: this.topic, partition, offset: handler.from.toString() });
      this.consumer?.resume([{ topic: this.topic, partitions: [partition] }]);
    }
  }

  /**
   * `take`, again after a back-off while it fails (a broker restarting, a database away), as long as
   * the partition is still this replica's and the tail runs: the partition stays paused meanwhile,
   * and its keys are answered with a retryable refusal. Undefined when it was given up.
   */
  private async takeWhileAssigned(partition: number): Promise<OwnedPartition<T> | undefined> {
    for (let attempt = 1; !this.stopped && this.latest.has(partition); attempt += 1) {
      try {
        return await this.options.take(partition);
      } catch (error) {
        this.options.onTakeFailed?.(partition, attempt, error);
        await new Promise((r) => setTimeout(r, takeBackoffMs(attempt)));
      }
    }
    return undefined;
  }

  /** The partitions this replica follows now. */
  partitions(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  /** How many assignments the group made this replica. */
  get assignmentCount(): number {
    return this.assignments;
  }

  /** Leaves the group (its partitions move at once); every partition gets `stop`. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.lag.close();
    await this.consumer?.disconnect().catch(() => undefined);
    await this.assigning.catch(() => undefined);
    for (const handler of this.owned.values()) await handler.stop().catch(() => undefined);
    this.owned.clear();
    this.next.clear();
  }
}
