import { type ExportLine, type FeedFormat } from '../feeds/export-line.js';
import { Partitioners } from '@gatehouse/kafka';
import { type Kafka, type Producer } from 'kafkajs';
import { type AuditSink, SinkUnavailableError } from './audit-sink.js';

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
}

/**
 * Appends lines to `gatehouse.siem.v1` (key = event id, acks=all, idempotent producer).
 * The topic is created at start when missing. With one partition (the default) the SIEM
 * reads the export's order; with more, order holds per key only.
 */
export class KafkaTopicSink implements AuditSink {
  readonly name = 'kafka';
  readonly formats: readonly FeedFormat[];
  readonly topic: string;

  private constructor(
    private readonly producer: Producer,
    options: KafkaSinkOptions,
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
    const producer = options.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    return new KafkaTopicSink(producer, options);
  }

  async write(lines: readonly ExportLine[]): Promise<void> {
    if (lines.length === 0) return;
    try {
      await this.producer.send({
        topic: this.topic,
        acks: -1,
        messages: lines.map((l) => ({ key: l.eventId, value: l.text, headers: { 'gatehouse-feed': l.format } })),
      });
    } catch (error) {
      throw new SinkUnavailableError(this.name, 'append failed', error);
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}
