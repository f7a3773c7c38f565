import { randomBytes } from 'node:crypto';
import { type Kafka } from 'kafkajs';
import { createKafkaClient } from '../client.js';
import { kafkaConfigFromEnv } from '../config.js';
import { provisionTopics } from '../provision.js';

/** A fresh topic namespace, so every test gets its own topics. */
export function randomNamespace(prefix = 'it'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/** A client for the broker the test run started (GATEHOUSE_KAFKA_BROKERS, default 127.0.0.1:9092). */
export function testKafka(clientId = 'gatehouse-test'): Kafka {
  return createKafkaClient(kafkaConfigFromEnv(clientId));
}

/** Provisions every catalog topic under a fresh namespace and returns the namespace. */
export async function provisionedNamespace(kafka: Kafka, prefix?: string): Promise<string> {
  const namespace = randomNamespace(prefix);
  await provisionTopics(kafka, { namespace });
  return namespace;
}

/** Polls `probe` until it returns a value other than undefined, or fails at the deadline. */
export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what ?? 'condition'}`);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 100));
  }
}
