import { encodeEvent, recordKey, type TopicEvent, type TopicId, topicName, TOPICS, type TraceContext } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { kafkaTransactionalId } from './groups.js';
import { Partitioners } from './kafkajs.js';
import { GroupCommit } from './group-commit.js';
import { ProducerLane } from './producer-lane.js';
import { type PoisonRecord } from './records.js';
import { countDeadLetters } from './telemetry/kafka-telemetry.js';
import { activeTraceContext, traceHeaders } from './telemetry/trace-context.js';

/**
 * A record's headers: its event type, and the W3C trace context the event carries, else the active
 * span's. The event's own comes first: it was set where the event was made, while a buffered
 * append may run in a context a timer kept from another call.
 */
function recordHeaders(event: { readonly type: string; readonly trace?: TraceContext | undefined }, active: TraceContext | undefined): Record<string, string> {
  return { 'gatehouse-type': event.type, ...traceHeaders(event.trace ?? active) };
}

/** Where an appended record landed. */
export interface AppendResult {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/**
 * Idempotent producer (acks=all, one in-flight request, so broker-side de-duplication
 * keeps order across retries). Every event is validated against its contract first. A failed
 * append is never mistaken for the next one: after it, a fresh producer id (`ProducerLane`).
 * Concurrent appends share requests (`GroupCommit`): each still resolves with its own offsets.
 */
export class EventProducer {
  private readonly commit: GroupCommit;

  private constructor(
    private readonly lane: ProducerLane,
    kafka: Kafka,
    private readonly namespace: string | undefined,
  ) {
    this.commit = new GroupCommit(lane, kafka);
  }

  /** `namespace` prefixes every topic name (see `topicName`). */
  static async connect(kafka: Kafka, options: { namespace?: string } = {}): Promise<EventProducer> {
    const lane = await ProducerLane.connect(() =>
      kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner,
      }),
    );
    return new EventProducer(lane, kafka, options.namespace);
  }

  /** Validates and appends one event; resolves once all in-sync replicas have it. */
  async publish<T extends TopicId>(topicId: T, event: TopicEvent<T>): Promise<AppendResult> {
    const [landed] = await this.publishEach(topicId, [event]);
    if (!landed) throw new Error('kafka returned no record metadata');
    return landed;
  }

  /**
   * Validates every event, then appends them all in one request; none is sent when one is
   * invalid. Events sharing a key keep their order. Resolves, once all in-sync replicas have
   * them, with one result per partition written (`offset`: that partition's first new offset).
   */
  async publishMany<T extends TopicId>(topicId: T, events: readonly TopicEvent<T>[]): Promise<AppendResult[]> {
    const first = new Map<number, AppendResult>();
    for (const landed of await this.publishEach(topicId, events)) if (!first.has(landed.partition)) first.set(landed.partition, landed);
    return [...first.values()];
  }

  /** Validates every event, appends them in order, and resolves with where each landed. */
  private async publishEach<T extends TopicId>(topicId: T, events: readonly TopicEvent<T>[]): Promise<AppendResult[]> {
    if (events.length === 0) return [];
    const topic = TOPICS[topicId];
    const name = topicName(topicId, this.namespace);
    const active = activeTraceContext();
    const messages = events.map((event) => ({ key: recordKey(event, topic), value: encodeEvent(topicId, event), headers: recordHeaders(event, active) }));
    const landed = await this.commit.append(name, messages);
    return landed.map((l) => ({ topic: name, partition: l.partition, offset: l.offset.toString() }));
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
    const messages = poison.map((p) => ({
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
    }));
    await this.commit.append(topicName('deadLetter', this.namespace), messages);
    countDeadLetters(poison);
  }

  async close(): Promise<void> {
    await this.lane.close();
  }
}

/** The writes of one Kafka transaction. */
export interface TransactionScope {
  publish<T extends TopicId>(topicId: T, event: TopicEvent<T>): Promise<void>;
}

/**
 * A transactional producer: the events appended inside `run` become visible to
 * read-committed consumers all together, or not at all when `run` throws. Runs go one at a
 * time; after a failed one the next begins under a new epoch of the transactional id
 * (`ProducerLane`), so no batch of the aborted run can stand in for one of the next.
 */
export class TransactionalEventProducer {
  private constructor(
    private readonly lane: ProducerLane,
    private readonly namespace: string | undefined,
  ) {}

  /** `purpose` names the transactional id within the client's own (`kafkaTransactionalId`: `<principal>:<purpose>`). */
  static async connect(kafka: Kafka, purpose: string, options: { namespace?: string } = {}): Promise<TransactionalEventProducer> {
    const transactionalId = kafkaTransactionalId(kafka, purpose);
    const lane = await ProducerLane.connect(() =>
      kafka.producer({
        transactionalId,
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner,
      }),
    );
    return new TransactionalEventProducer(lane, options.namespace);
  }

  run<R>(work: (tx: TransactionScope) => Promise<R>): Promise<R> {
    return this.lane.use(async (producer) => {
      const transaction = await producer.transaction();
      try {
        const result = await work({
          publish: async (topicId, event) => {
            const topic = TOPICS[topicId];
            await transaction.send({
              topic: topicName(topicId, this.namespace),
              acks: -1,
              messages: [{ key: recordKey(event, topic), value: encodeEvent(topicId, event), headers: recordHeaders(event, activeTraceContext()) }],
            });
          },
        });
        await transaction.commit();
        return result;
      } catch (error) {
        // The abort may fail as the send did; the producer is replaced either way.
        await transaction.abort().catch(() => undefined);
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    await this.lane.close();
  }
}
