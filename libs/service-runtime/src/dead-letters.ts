import { Logger } from '@nestjs/common';
import { EventProducer, type PoisonRecord } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';

/**
 * Parks the records a service's fold could not apply on `gatehouse.dead-letter.v1`, where an
 * operator reads them with their topic, partition, offset, code and reason (headers; the key is
 * `<topic>/<partition>/<offset>`, so a record parked twice, e.g. by a rebuild into a fresh schema,
 * is recognisably the same). The projection's `unapplied_records` table is the durable record;
 * the topic is the operators' feed, so a failed publish is logged by code and counted, never
 * thrown: a dead-letter topic that cannot be written must not stop the fold.
 */
export interface DeadLetterPublisher {
  publish(poison: readonly PoisonRecord[]): Promise<void>;
  stats(): { readonly published: number; readonly failed: number };
  close(): Promise<void>;
}

export function createDeadLetterPublisher(kafka: Kafka, namespace: string | undefined, service: string): DeadLetterPublisher {
  const logger = new Logger(`${service}:dead-letters`);
  let producer: Promise<EventProducer> | undefined;
  let published = 0;
  let failed = 0;
  const connected = (): Promise<EventProducer> => {
    // Connected on first use: most services never see a poison record.
    producer ??= EventProducer.connect(kafka, { namespace }).catch((error: unknown) => {
      producer = undefined;
      throw error;
    });
    return producer;
  };
  return {
    async publish(poison) {
      for (const record of poison) {
        try {
          await (await connected()).deadLetter(record);
          published += 1;
        } catch (error) {
          failed += 1;
          const code = (error as { type?: string; code?: string }).type ?? (error as { code?: string }).code ?? 'UNKNOWN';
          logger.warn(`a record could not be dead-lettered (${record.topic}/${record.partition}/${record.offset}, ${code}); it stays in unapplied_records`);
        }
      }
    },
    stats: () => ({ published, failed }),
    async close() {
      const open = producer;
      producer = undefined;
      if (open) await (await open.catch(() => undefined))?.close();
    },
  };
}
