import { afterAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { type PoisonRecord } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { createDeadLetterPublisher } from './dead-letters.js';

// Unit tests over an in-memory stand-in for the kafkajs producer (the real topic is covered by
// test/fault/poison-messages.spec.ts and the fuzz suite).
const warnings: string[] = [];
Logger.overrideLogger({ log: () => undefined, error: () => undefined, warn: (m: unknown) => void warnings.push(String(m)) });
afterAll(() => Logger.overrideLogger(false));

function poison(n: number, valueBytes = 10): PoisonRecord[] {
  return Array.from({ length: n }, (_, i) => ({ topic: 'gatehouse.audit.v1', partition: 0, offset: String(i), key: null, value: Buffer.alloc(valueBytes, 'x'), code: 'CONTRACT.MALFORMED_JSON', reason: 'not JSON' }));
}

/**
 * What the publisher's producer uses of a kafkajs client: an idempotent producer whose requests go
 * out as `sendBatch` (group commit), and an admin that tells the topic's partition count.
 */
function fakeKafka(behaviour: { connect?: () => Promise<void>; send?: (messages: unknown[]) => Promise<void> }) {
  const sends: number[] = [];
  let connects = 0;
  const kafka = {
    producer: () => ({
      connect: async () => {
        connects += 1;
        await behaviour.connect?.();
      },
      sendBatch: async ({ topicMessages }: { topicMessages: { topic: string; messages: unknown[] }[] }) => {
        const messages = topicMessages.flatMap((t) => t.messages);
        await behaviour.send?.(messages);
        sends.push(messages.length);
        return topicMessages.map((t) => ({ topicName: t.topic, partition: 0, errorCode: 0, baseOffset: '0' }));
      },
      disconnect: async () => undefined,
    }),
    admin: () => ({
      connect: async () => undefined,
      fetchTopicMetadata: async ({ topics }: { topics: string[] }) => ({ topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0 }] })) }),
      disconnect: async () => undefined,
    }),
  } as unknown as Kafka;
  return { kafka, sends, connects: () => connects };
}

describe('createDeadLetterPublisher', () => {
  it('parks records in batches of at most 500, in order, over one connection', async () => {
    const fake = fakeKafka({});
    const publisher = createDeadLetterPublisher(fake.kafka, 'ns', 'spec');
    await publisher.publish(poison(1_200));
    await publisher.publish(poison(3));
    expect(fake.sends).toEqual([500, 500, 200, 3]);
    expect(fake.connects()).toBe(1);
    expect(publisher.stats()).toEqual({ published: 1_203, failed: 0 });
    await publisher.close();
  });

  it('keeps a batch under 512 kB however few records it holds', async () => {
    const fake = fakeKafka({});
    const publisher = createDeadLetterPublisher(fake.kafka, undefined, 'spec');
    await publisher.publish(poison(5, 200 * 1024));
    expect(fake.sends).toEqual([2, 2, 1]);
    await publisher.close();
  });

  it('counts and logs a batch it cannot park without throwing, names no content, and connects again next time', async () => {
    let down = true;
    const fake = fakeKafka({ connect: async () => (down ? Promise.reject(Object.assign(new Error('broker down: secret'), { type: 'KAFKA_DOWN' })) : undefined) });
    const publisher = createDeadLetterPublisher(fake.kafka, 'ns', 'spec');
    await expect(publisher.publish(poison(2))).resolves.toBeUndefined();
    expect(publisher.stats()).toEqual({ published: 0, failed: 2 });
    expect(warnings.at(-1)).toContain('KAFKA_DOWN');
    expect(warnings.join('\n')).not.toContain('secret');
    down = false;
    await publisher.publish(poison(1));
    expect(publisher.stats()).toEqual({ published: 1, failed: 2 });
    expect(fake.connects()).toBe(2);
    await publisher.close();
  });
});
