import { GatehouseError, type TopicId, topicName } from '@gatehouse/contracts';
import { type Consumer, type Kafka } from 'kafkajs';
import { decodeRecord } from './decode-record.js';
import { ownsId } from './groups.js';
import { type EventProducer } from './producer.js';
import { type DecodedRecord } from './records.js';

export interface ConsumerOptions<T extends TopicId> {
  /** One of the client's own groups (`kafkaGroupId(kafka, purpose)`). */
  readonly groupId: string;
  readonly topicId: T;
  readonly fromBeginning?: boolean;
  readonly handle: (record: DecodedRecord<T>) => Promise<void>;
  /** Where poison and unhandleable records go; the consumer never stops on one. */
  readonly deadLetters: EventProducer;
  /** Attempts per record for retryable failures before it is dead-lettered. Default 3. */
  readonly maxAttempts?: number;
  /** Called for every record parked on the dead-letter topic (metrics, alerts). */
  readonly onDeadLetter?: (code: string, topic: string, partition: number, offset: string) => void;
  /** Topic namespace (see `topicName`); the dead-letter producer must use the same one. */
  readonly namespace?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A group consumer that owns its failures: undecodable records and records whose
 * handler keeps failing go to the dead-letter topic with the reason, then the
 * consumer moves on. Offsets are committed only after a record was handled or parked.
 */
export class EventConsumer<T extends TopicId> {
  private constructor(
    private readonly consumer: Consumer,
    private readonly options: ConsumerOptions<T>,
  ) {}

  static async start<T extends TopicId>(kafka: Kafka, options: ConsumerOptions<T>): Promise<EventConsumer<T>> {
    // Refused here, before the broker would: a group outside the client's own prefix is not granted.
    if (!ownsId(kafka, options.groupId)) {
      throw new GatehouseError('KAFKA.CONFIG_INVALID', 'the consumer group must be one of the client principal\'s own (kafkaGroupId)', { category: 'validation' });
    }
    const consumer = kafka.consumer({ groupId: options.groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 250 });
    await consumer.connect();
    const self = new EventConsumer(consumer, options);
    await consumer.subscribe({ topic: topicName(options.topicId, options.namespace), fromBeginning: options.fromBeginning ?? true });
    await consumer.run({ eachMessage: async ({ partition, message }) => self.onMessage(partition, message) });
    return self;
  }

  private async onMessage(partition: number, message: Parameters<typeof decodeRecord>[2]): Promise<void> {
    const { topicId, handle, deadLetters, maxAttempts = 3, onDeadLetter } = this.options;
    const decoded = decodeRecord(topicId, partition, message, this.options.namespace);
    if (!decoded.ok) {
      await deadLetters.deadLetter(decoded.poison);
      onDeadLetter?.(decoded.poison.code, decoded.poison.topic, partition, message.offset);
      return;
    }
    for (let attempt = 1; ; attempt += 1) {
      try {
        await handle(decoded.record);
        return;
      } catch (error) {
        const retryable = !(error instanceof GatehouseError) || error.retryable;
        if (retryable && attempt < maxAttempts) {
          await sleep(100 * 2 ** attempt);
          continue;
        }
        const code = error instanceof GatehouseError ? error.code : 'CONSUMER.HANDLER_FAILED';
        const reason = error instanceof GatehouseError ? error.message : 'handler failed';
        await deadLetters.deadLetter({ ...decoded.record, value: message.value, code, reason, topic: decoded.record.topic });
        onDeadLetter?.(code, decoded.record.topic, partition, message.offset);
        return;
      }
    }
  }

  async stop(): Promise<void> {
    await this.consumer.disconnect();
  }
}
