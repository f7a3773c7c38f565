import { type ExportLine, type FeedFormat } from '../feeds/export-line.js';
import { Partitioners, ProducerLane, throwawayGroupId } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { type AuditSink, lineDigest, SinkUnavailableError } from './audit-sink.js';

/** The SIEM feed topic's base name; a namespace prefixes it like every gatehouse topic. */
export const SIEM_TOPIC = 'gatehouse.siem.v1';

export function siemTopicName(namespace?: string): string {
  return namespace ? `${namespace}.${SIEM_TOPIC}` : SIEM_TOPIC;
}

export interface KafkaSinkOptions {
  readonly kafka: Kafka;
  readonly namespace?: string | undefined;
  readonly format: FeedFormat;
  /** Partitions when the sink creates the topic. Default 1: one total order for the SIEM. */
  readonly partitions?: number;
  readonly replicationFactor?: number;
  /** Records read back from the end of each SIEM partition on recovery (default 10,000; at least a batch). */
  readonly recoveryWindow?: number;
  /** Deadline of that read, ms (default 30,000): past it the write fails and is retried. */
  readonly recoveryTimeoutMs?: number;
}

/** Most bytes of lines one produce request carries: well below the broker's 1 MB default message.max.bytes. */
const MAX_REQUEST_BYTES = 512 * 1024;

/** `lines` cut into runs of at most MAX_REQUEST_BYTES (a longer line goes alone). */
function chunks(lines: readonly ExportLine[]): ExportLine[][] {
  const out: ExportLine[][] = [];
  let current: ExportLine[] = [];
  let bytes = 0;
  for (const line of lines) {
    const size = Buffer.byteLength(line.text) + line.eventId.length + 64;
    if (current.length > 0 && bytes + size > MAX_REQUEST_BYTES) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(line);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * Appends lines to `gatehouse.siem.v1` (key = event id, acks=all, idempotent producer, a fresh
 * producer id after a failed append: `ProducerLane`).
 * The topic is created at start when missing. With one partition (the default) the SIEM
 * reads the export's order; with more, order holds per key only.
 *
 * Each record once, across restarts and lost acknowledgements. The pipeline re-sends a batch
 * whose positions it did not store (the process stopped) or that a sink did not acknowledge (the
 * append may still have landed). So on its first write after starting, and on the first write
 * after a failed append, the sink reads back the last `recoveryWindow` records of each SIEM
 * partition and skips every line already there, per source partition until the first line that
 * is not (log order: none after it can be).
 */
export class KafkaTopicSink implements AuditSink {
  readonly name = 'kafka';
  readonly formats: readonly FeedFormat[];
  readonly topic: string;
  /** Digests of the lines found at the end of the topic; undefined until read (again). */
  private found: Set<string> | undefined;
  /** Source partitions whose lines are past the recovered ones. */
  private readonly settled = new Set<number>();
  private skipped = 0;

  private constructor(
    private readonly lane: ProducerLane,
    private readonly options: KafkaSinkOptions,
  ) {
    this.formats = [options.format];
    this.topic = siemTopicName(options.namespace);
  }

  static async start(options: KafkaSinkOptions): Promise<KafkaTopicSink> {
    const topic = siemTopicName(options.namespace);
    const admin = options.kafka.admin();
    await admin.connect();
    try {
      const existing = await admin.listTopics();
      if (!existing.includes(topic)) {
        await admin.createTopics({
          waitForLeaders: true,
          topics: [
            {
              topic,
              numPartitions: options.partitions ?? 1,
              replicationFactor: options.replicationFactor ?? 1,
              configEntries: [
                { name: 'cleanup.policy', value: 'delete' },
                { name: 'retention.ms', value: String(30 * 24 * 60 * 60 * 1000) },
              ],
            },
          ],
        });
      }
    } finally {
      await admin.disconnect();
    }
    const lane = await ProducerLane.connect(() => options.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner }));
    return new KafkaTopicSink(lane, options);
  }

  async write(lines: readonly ExportLine[]): Promise<void> {
    if (lines.length === 0) return;
    if (this.found === undefined) {
      this.found = await this.readTail();
      this.settled.clear();
    }
    const fresh: ExportLine[] = [];
    for (const line of lines) {
      if (!this.settled.has(line.partition)) {
        if (this.found.has(lineDigest(line.text))) {
          this.skipped += 1;
          continue;
        }
        this.settled.add(line.partition);
      }
      fresh.push(line);
    }
    if (fresh.length === 0) return;
    try {
      // In requests the broker takes (a lagging export hands over megabytes at once): in order, one at a time.
      for (const chunk of chunks(fresh)) {
        const messages = chunk.map((l) => ({ key: l.eventId, value: l.text, headers: { 'gatehouse-feed': l.format } }));
        await this.lane.use((producer) => producer.send({ topic: this.topic, acks: -1, messages }));
      }
    } catch (error) {
      // The append may have landed without its acknowledgement: the retry reads the tail again.
      this.found = undefined;
      throw new SinkUnavailableError(this.name, 'append failed', error);
    }
  }

  /** The partition's lines are looked up on the topic again before the next write of them (another replica may have written some). */
  async reclaim(partition: number): Promise<void> {
    this.settled.delete(partition);
    this.found = undefined;
  }

  /** Lines not sent again because the topic already held them (after a restart or a lost acknowledgement). */
  get skippedOnRecovery(): number {
    return this.skipped;
  }

  /** The digests of the last `recoveryWindow` records of every partition of the topic. */
  private async readTail(): Promise<Set<string>> {
    const found = new Set<string>();
    const window = BigInt(this.options.recoveryWindow ?? 10_000);
    const admin = this.options.kafka.admin();
    const ranges = new Map<number, { from: bigint; to: bigint }>();
    try {
      await admin.connect();
      for (const o of await admin.fetchTopicOffsets(this.topic)) {
        const low = BigInt(o.low);
        const high = BigInt(o.high);
        const from = high - window > low ? high - window : low;
        if (from < high) ranges.set(o.partition, { from, to: high });
      }
    } catch (error) {
      throw new SinkUnavailableError(this.name, 'could not read the topic end', error);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    if (ranges.size === 0) return found;
    // kafkajs has no manual assignment: a throwaway group that never commits stands in for it.
    const consumer = this.options.kafka.consumer({ groupId: throwawayGroupId(this.options.kafka, 'replay'), allowAutoTopicCreation: false, maxWaitTimeInMs: 250 });
    const pending = new Set(ranges.keys());
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: this.topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        // Every way out clears the deadline, so a failed read leaves no timer behind.
        const settle = (error?: unknown) => {
          clearTimeout(timer);
          if (error === undefined) resolve();
          else reject(error);
        };
        const timer = setTimeout(() => settle(new Error('the read back did not reach the end in time')), this.options.recoveryTimeoutMs ?? 30_000);
        consumer.on(consumer.events.CRASH, ({ payload }) => {
          if (!payload.restart) settle(payload.error);
        });
        consumer
          .run({
            autoCommit: false,
            eachMessage: async ({ partition, message }) => {
              const range = ranges.get(partition);
              const offset = BigInt(message.offset);
              if (!range || !pending.has(partition) || offset < range.from || offset >= range.to) return;
              if (message.value) found.add(lineDigest(message.value.toString('utf8')));
              if (offset + 1n >= range.to && pending.delete(partition) && pending.size === 0) settle();
            },
          })
          .then(() => {
            for (const [partition, range] of ranges) consumer.seek({ topic: this.topic, partition, offset: range.from.toString() });
          }, settle);
      });
      return found;
    } catch (error) {
      throw new SinkUnavailableError(this.name, 'could not read the topic back', error);
    } finally {
      await consumer.disconnect().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.lane.close();
  }
}
