import { type Kafka, type Message, type RecordMetadata } from 'kafkajs';
import { keyPartitioner } from './fold-engine/key-partitions.js';
import { CompressionTypes } from './kafkajs.js';
import { type ProducerLane } from './producer-lane.js';

/** A message of the suite: keyed (the key picks its partition). */
export interface KeyedMessage extends Message {
  readonly key: string;
}

/** Where one message landed. */
export interface Landed {
  readonly partition: number;
  readonly offset: bigint;
}

interface Waiting {
  readonly topic: string;
  readonly messages: readonly (KeyedMessage & { readonly partition: number })[];
  readonly bytes: number;
  resolve(landed: Landed[]): void;
  reject(error: unknown): void;
}

/** Most messages, and bytes of values, one request carries: well below the broker's 1 MB per partition batch. */
const MAX_MESSAGES = 1_000;
const MAX_BYTES = 512 * 1024;
/** How long a topic's partition count is trusted before it is read again (a topic recreated under a running producer). */
const PARTITIONS_TTL_MS = 60_000;

/**
 * Group commit over a `ProducerLane`: while one request is on its way, appends wait, and the next
 * request carries every one of them (up to MAX_MESSAGES and MAX_BYTES), so concurrent writers
 * share a round trip instead of queuing one round trip each, and the lane still sends one request
 * at a time (its sequence numbers stay safe). Each message is pinned to its key's partition (the
 * producers' partitioner over the topic's partition count), so each writer learns its own offset:
 * within a request a partition's messages are appended in the order sent.
 */
export class GroupCommit {
  private readonly queue: Waiting[] = [];
  private sending = false;
  /** Per topic, its partitioner and when it was read: asked again after PARTITIONS_TTL_MS, or after a failed request. */
  private readonly partitioners = new Map<string, { readonly at: number; readonly partitioner: Promise<(key: string) => number> }>();

  constructor(
    private readonly lane: ProducerLane,
    private readonly kafka: Kafka,
  ) {}

  /** Appends `messages` to `topic`, in order, with the next request; resolves (acks=all) with where each landed. */
  async append(topic: string, messages: readonly KeyedMessage[]): Promise<Landed[]> {
    if (messages.length === 0) return [];
    const partitionOf = await this.partitionerOf(topic);
    const pinned = messages.map((message) => ({ ...message, partition: partitionOf(message.key) }));
    const bytes = pinned.reduce((n, m) => n + (Buffer.isBuffer(m.value) ? m.value.length : Buffer.byteLength(String(m.value ?? ''))), 0);
    return new Promise<Landed[]>((resolve, reject) => {
      this.queue.push({ topic, messages: pinned, bytes, resolve, reject });
      this.pump();
    });
  }

  private partitionerOf(topic: string): Promise<(key: string) => number> {
    const cached = this.partitioners.get(topic);
    if (cached && Date.now() - cached.at < PARTITIONS_TTL_MS) return cached.partitioner;
    const partitioner = (async () => {
      const admin = this.kafka.admin();
      try {
        await admin.connect();
        const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
        return keyPartitioner(topics[0]?.partitions.length ?? 0);
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    })();
    // A failed lookup is asked again by the next append.
    partitioner.catch(() => this.partitioners.delete(topic));
    this.partitioners.set(topic, { at: Date.now(), partitioner });
    return partitioner;
  }

  /** Sends what waits, unless a request is on its way (its end sends the next). */
  private pump(): void {
    if (this.sending || this.queue.length === 0) return;
    this.sending = true;
    const taken: Waiting[] = [];
    let messages = 0;
    let bytes = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0] as Waiting;
      if (taken.length > 0 && (messages + next.messages.length > MAX_MESSAGES || bytes + next.bytes > MAX_BYTES)) break;
      taken.push(next);
      this.queue.shift();
      messages += next.messages.length;
      bytes += next.bytes;
    }
    const byTopic = new Map<string, Message[]>();
    for (const w of taken) byTopic.set(w.topic, [...(byTopic.get(w.topic) ?? []), ...w.messages]);
    const topicMessages = [...byTopic].map(([topic, list]) => ({ topic, messages: list }));
    this.lane
      .use((producer) => producer.sendBatch({ acks: -1, compression: CompressionTypes.None, topicMessages }))
      .then(
        (metas) => settle(taken, metas),
        (error: unknown) => {
          // The topic may have changed under the cached partition count (recreated, repartitioned): ask again next time.
          for (const w of taken) this.partitioners.delete(w.topic);
          for (const w of taken) w.reject(error);
        },
      )
      .finally(() => {
        this.sending = false;
        this.pump();
      });
  }
}

/** Hands each waiting append the offsets its messages got: a partition's base offset, counted on in request order. */
function settle(taken: readonly Waiting[], metas: readonly RecordMetadata[]): void {
  const next = new Map<string, bigint>();
  for (const meta of metas) {
    const base = meta.baseOffset ?? meta.offset;
    if (base !== undefined) next.set(`${meta.topicName}/${meta.partition}`, BigInt(base));
  }
  for (const w of taken) {
    const landed: Landed[] = [];
    for (const message of w.messages) {
      const key = `${w.topic}/${message.partition}`;
      const offset = next.get(key);
      if (offset === undefined) {
        w.reject(new Error('kafka returned no record metadata for a partition written'));
        break;
      }
      landed.push({ partition: message.partition, offset });
      next.set(key, offset + 1n);
    }
    if (landed.length === w.messages.length) w.resolve(landed);
  }
}
