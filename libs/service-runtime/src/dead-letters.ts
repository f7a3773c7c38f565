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
      // A request per chunk, not per record: the flush that stored them waits for this, and the
      // writers waiting on that flush with it, so a burst of poison must not cost a round trip each.
      for (const chunk of inChunks(poison)) {
        try {
          await (await connected()).deadLetterAll(chunk);
          published += chunk.length;
        } catch (error) {
          failed += chunk.length;
          const code = (error as { type?: string; code?: string }).type ?? (error as { code?: string }).code ?? 'UNKNOWN';
          const [first] = chunk;
          logger.warn(`${chunk.length} record(s) could not be dead-lettered (from ${first?.topic}/${first?.partition}/${first?.offset}, ${code}); they stay in unapplied_records`);
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

/** Bytes of records per dead-letter request: under the broker's default 1 MB limit, with room for headers. */
const CHUNK_BYTES = 512 * 1024;
const CHUNK_RECORDS = 500;

/** `poison` in order, in chunks of at most CHUNK_RECORDS and (but for a single larger record) CHUNK_BYTES. */
function inChunks(poison: readonly PoisonRecord[]): PoisonRecord[][] {
  const chunks: PoisonRecord[][] = [];
  let chunk: PoisonRecord[] = [];
  let bytes = 0;
  for (const record of poison) {
    const size = (record.value?.length ?? 0) + Buffer.byteLength(record.reason) + (record.key === null ? 0 : Buffer.byteLength(record.key)) + 256;
    if (chunk.length > 0 && (bytes + size > CHUNK_BYTES || chunk.length >= CHUNK_RECORDS)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(record);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}
