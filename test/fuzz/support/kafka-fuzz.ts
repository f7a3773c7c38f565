import { type TopicId, topicName } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { type KafkaInput } from './kafka-inputs.js';

/** Bytes per produce request: below the broker's default 1 MB record batch limit with room for framing. */
const BATCH_BYTES = 700_000;

/**
 * Appends `records` to the topic `topicId` of `namespace` as the principal of `kafka` (raw
 * kafkajs: our own producers validate every event and could not write these), in order, in
 * batches; resolves once the broker has acknowledged every one (acks=all).
 */
export async function produceRaw(kafka: Kafka, namespace: string, topicId: TopicId, records: readonly KafkaInput[]): Promise<void> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    const topic = topicName(topicId, namespace);
    let batch: KafkaInput[] = [];
    let bytes = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      await producer.send({
        topic,
        acks: -1,
        messages: batch.map((r) => ({ key: r.key, value: r.value, ...(r.headers !== undefined && { headers: r.headers as Record<string, string | Buffer> }) })),
      });
      batch = [];
      bytes = 0;
    };
    for (const record of records) {
      const size = (record.value?.length ?? 0) + Buffer.byteLength(record.key ?? '') + Buffer.byteLength(JSON.stringify(record.headers ?? {})) + 128;
      if (bytes + size > BATCH_BYTES) await flush();
      batch.push(record);
      bytes += size;
    }
    await flush();
  } finally {
    await producer.disconnect();
  }
}

/** How many records of each expectation (and of each kind, for the log) `records` hold. */
export function tally(records: readonly KafkaInput[]): { poison: number; forged: number; ignored: number; kinds: Record<string, number> } {
  const kinds: Record<string, number> = {};
  for (const r of records) kinds[r.kind] = (kinds[r.kind] ?? 0) + 1;
  return {
    poison: records.filter((r) => r.expect === 'poison').length,
    forged: records.filter((r) => r.expect === 'forged').length,
    ignored: records.filter((r) => r.expect === 'ignored').length,
    kinds,
  };
}

/** GETs `url` and returns its JSON body (the services' status endpoints). */
export async function getJson<T>(url: string, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`GET ${new URL(url).pathname} answered ${res.status}`);
  return (await res.json()) as T;
}
