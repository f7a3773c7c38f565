import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LostAnswers, lossyTestKafka, provisionedNamespace, testKafka, topicKeys } from '@gatehouse/kafka/testing';
import { type Kafka, type Producer } from 'kafkajs';
import { type ExportLine } from '../feeds/export-line.js';
import { toLine } from '../feeds/map-record.js';
import { decision, record } from '../testing/decisions.js';
import { KafkaTopicSink, siemTopicName } from './kafka-sink.js';

// The Kafka sink on the real broker: a batch the pipeline sends again (after a restart, or after
// an append whose acknowledgement was lost) reaches the SIEM topic once.

let kafka: Kafka;
const sinks: KafkaTopicSink[] = [];

beforeAll(() => {
  kafka = testKafka('audit-kafka-sink-it');
});

afterAll(async () => {
  for (const sink of sinks) await sink.close().catch(() => undefined);
});

async function sink(namespace: string, options: { kafka?: Kafka; recoveryWindow?: number } = {}): Promise<KafkaTopicSink> {
  const started = await KafkaTopicSink.start({ kafka: options.kafka ?? kafka, namespace, format: 'ocsf', ...(options.recoveryWindow ? { recoveryWindow: options.recoveryWindow } : {}) });
  sinks.push(started);
  return started;
}

/** `count` lines of source partition `partition`, at consecutive offsets from `from`. */
function lines(count: number, partition = 0, from = 0): ExportLine[] {
  return Array.from({ length: count }, (_, i) => toLine(record(decision({ runId: `run-${partition}` }), partition, String(from + i)), 'ocsf'));
}

/** The event ids on the namespace's SIEM topic, in offset order (one partition). */
const onTopic = (namespace: string): Promise<string[]> => topicKeys(kafka, siemTopicName(namespace));

/** A Kafka client whose producers append their first batch and then report a failure, as when the acknowledgement is lost. */
function losingFirstAck(real: Kafka): Kafka {
  return new Proxy(real, {
    get(target, property, receiver) {
      if (property !== 'producer') return Reflect.get(target, property, receiver) as unknown;
      return (...args: Parameters<Kafka['producer']>): Producer => {
        const producer = target.producer(...args);
        let sends = 0;
        const send: Producer['send'] = async (batch) => {
          const metadata = await producer.send(batch);
          sends += 1;
          if (sends === 1) throw new Error('request timed out');
          return metadata;
        };
        return new Proxy(producer, { get: (p, key, r) => (key === 'send' ? send : (Reflect.get(p, key, r) as unknown)) });
      };
    },
  });
}

describe('Kafka sink: each record once', () => {
  it('skips what a previous process already appended, then appends the rest', async () => {
    const namespace = await provisionedNamespace(kafka);
    const batch = [...lines(5, 0), ...lines(3, 1)];
    const first = await sink(namespace);
    await first.write(batch.slice(0, 6)); // the process dies before the pipeline stores its positions
    const second = await sink(namespace);
    await second.write(batch); // the pipeline sends the whole batch again, from the stored positions
    expect(await onTopic(namespace)).toEqual(batch.map((l) => l.eventId));
    expect(second.skippedOnRecovery).toBe(6);
    // Past the recovered lines nothing is looked up again: a later batch is appended whole.
    const later = lines(2, 0, 5);
    await second.write(later);
    expect((await onTopic(namespace)).slice(-2)).toEqual(later.map((l) => l.eventId));
  });

  it('sends a batch again after a lost acknowledgement without a duplicate', async () => {
    const namespace = await provisionedNamespace(kafka);
    const flaky = await sink(namespace, { kafka: losingFirstAck(kafka) });
    const batch = lines(4);
    await expect(flaky.write(batch)).rejects.toMatchObject({ code: 'AUDIT.SINK_UNAVAILABLE', retryable: true });
    await flaky.write(batch); // the pipeline retries the sink with the same batch
    expect(await onTopic(namespace)).toEqual(batch.map((l) => l.eventId));
    expect(flaky.skippedOnRecovery).toBe(4);
  });

  it('never takes the next batch for a retry of one whose answer was lost: both reach the SIEM topic', async () => {
    // The answer is lost on the wire, so kafkajs hands the batch's sequence numbers back while the
    // broker keeps the batch: a next batch of the same size would be answered as its duplicate.
    const namespace = await provisionedNamespace(kafka);
    const lost = new LostAnswers();
    const flaky = await sink(namespace, { kafka: lossyTestKafka('siem-lost-answer', lost) });
    const first = lines(2, 0, 0);
    lost.loseNextProduceAnswers(2); // the request and kafkajs' one retry
    await expect(flaky.write(first)).rejects.toMatchObject({ code: 'AUDIT.SINK_UNAVAILABLE', retryable: true });
    await flaky.write(first); // the pipeline's retry finds both lines on the topic
    expect(flaky.skippedOnRecovery).toBe(2);
    const next = lines(2, 0, 2);
    await flaky.write(next);
    expect(await onTopic(namespace)).toEqual([...first, ...next].map((l) => l.eventId));
  });

  it('never drops a line: beyond the read-back window a line is sent again rather than skipped', async () => {
    const namespace = await provisionedNamespace(kafka);
    const batch = lines(6);
    await (await sink(namespace)).write(batch.slice(0, 4));
    const narrow = await sink(namespace, { recoveryWindow: 2 }); // sees only lines 3 and 4
    await narrow.write(batch);
    const ids = await onTopic(namespace);
    expect(new Set(ids)).toEqual(new Set(batch.map((l) => l.eventId)));
    // Line 1 is not in the window, so recovery ends at once: everything is sent again (at least once, never lost).
    expect(narrow.skippedOnRecovery).toBe(0);
    expect(ids).toHaveLength(10);
  });

  it('takes a batch larger than the broker takes in one request, in order (a lagging export reads megabytes at once)', async () => {
    const namespace = await provisionedNamespace(kafka);
    const big = lines(1_500);
    expect(big.reduce((n, l) => n + Buffer.byteLength(l.text), 0)).toBeGreaterThan(1024 * 1024);
    await (await sink(namespace)).write(big);
    expect(await onTopic(namespace)).toEqual(big.map((l) => l.eventId));
  });
});
