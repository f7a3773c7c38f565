import { encodeEvent, recordKey, type TopicEvent, type TopicId, topicName, TOPICS } from '@gatehouse/contracts';
import { type Kafka, type Producer } from 'kafkajs';
import { kafkaTransactionalId } from './groups.js';
import { CompressionTypes, Partitioners } from './kafkajs.js';
import { type PoisonRecord } from './records.js';

/** Where an appended record landed. */
export interface AppendResult {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/**
 * Idempotent producer (acks=all, one in-flight request, so broker-side de-duplication
 * keeps order across retries). Every event is validated against its contract first.
 */
export class EventProducer {
  private constructor(
    private readonly producer: Producer,
    private readonly namespace: string | undefined,
  ) {}

  /** `namespace` prefixes every topic name (see `topicName`). */
  static async connect(kafka: Kafka, options: { namespace?: string } = {}): Promise<EventProducer> {
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    return new EventProducer(producer, options.namespace);
  }

  /** Validates and appends one event; resolves once all in-sync replicas have it. */
  async publish<T extends TopicId>(topicId: T, event: TopicEvent<T>): Promise<AppendResult> {
    const topic = TOPICS[topicId];
    const name = topicName(topicId, this.namespace);
    const value = encodeEvent(topicId, event);
    const [meta] = await this.producer.send({
      topic: name,
      acks: -1,
      compression: CompressionTypes.None,
      messages: [{ key: recordKey(event, topic), value, headers: { 'gatehouse-type': event.type } }],
    });
    if (!meta) throw new Error('kafka returned no record metadata');
    return { topic: name, partition: meta.partition, offset: String(meta.baseOffset ?? meta.offset ?? '-1') };
  }

  /**
   * Validates every event, then appends them all in one request; none is sent when one is
   * invalid. Events sharing a key keep their order. Resolves, once all in-sync replicas have
   * them, with one result per partition written (`offset`: that partition's first new offset).
   */
  async publishMany<T extends TopicId>(topicId: T, events: readonly TopicEvent<T>[]): Promise<AppendResult[]> {
    if (events.length === 0) return [];
    const topic = TOPICS[topicId];
    const name = topicName(topicId, this.namespace);
    const messages = events.map((event) => ({ key: recordKey(event, topic), value: encodeEvent(topicId, event), headers: { 'gatehouse-type': event.type } }));
    const metas = await this.producer.send({ topic: name, acks: -1, compression: CompressionTypes.None, messages });
    if (metas.length === 0) throw new Error('kafka returned no record metadata');
    return metas.map((meta) => ({ topic: name, partition: meta.partition, offset: String(meta.baseOffset ?? meta.offset ?? '-1') }));
  }

  /** Parks a record that could not be decoded or handled, with the reason, on the dead-letter topic. */
  async deadLetter(poison: PoisonRecord): Promise<void> {
    await this.deadLetterAll([poison]);
  }

  /**
   * Parks `poison` in one request, in order (the caller keeps it under the broker's request size):
   * a burst of poison costs one round trip, not one per record.
   */
  async deadLetterAll(poison: readonly PoisonRecord[]): Promise<void> {
    if (poison.length === 0) return;
    await this.producer.send({
      topic: topicName('deadLetter', this.namespace),
      acks: -1,
      messages: poison.map((p) => ({
        key: `${p.topic}/${p.partition}/${p.offset}`,
        value: p.value,
        headers: {
          'gatehouse-dlq-topic': p.topic,
          'gatehouse-dlq-partition': String(p.partition),
          'gatehouse-dlq-offset': p.offset,
          'gatehouse-dlq-code': p.code,
          'gatehouse-dlq-reason': p.reason,
          ...(p.key === null ? {} : { 'gatehouse-dlq-key': p.key }),
        },
      })),
    });
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}

/** The writes of one Kafka transaction. */
export interface TransactionScope {
  publish<T extends TopicId>(topicId: T, event: TopicEvent<T>): Promise<void>;
}

/**
 * A transactional producer: the events appended inside `run` become visible to
 * read-committed consumers all together, or not at all when `run` throws.
 */
export class TransactionalEventProducer {
  private constructor(
    private readonly producer: Producer,
    private readonly namespace: string | undefined,
  ) {}

  /** `purpose` names the transactional id within the client's own (`kafkaTransactionalId`: `<principal>:<purpose>`). */
  static async connect(kafka: Kafka, purpose: string, options: { namespace?: string } = {}): Promise<TransactionalEventProducer> {
    const producer = kafka.producer({
      transactionalId: kafkaTransactionalId(kafka, purpose),
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    return new TransactionalEventProducer(producer, options.namespace);
  }

  async run<R>(work: (tx: TransactionScope) => Promise<R>): Promise<R> {
    const transaction = await this.producer.transaction();
    try {
      const result = await work({
        publish: async (topicId, event) => {
          const topic = TOPICS[topicId];
          await transaction.send({
            topic: topicName(topicId, this.namespace),
            acks: -1,
            messages: [{ key: recordKey(event, topic), value: encodeEvent(topicId, event), headers: { 'gatehouse-type': event.type } }],
          });
        },
      });
      await transaction.commit();
      return result;
    } catch (error) {
      await transaction.abort();
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}
