import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { type Kafka } from 'kafkajs';
import { provisionAcls } from '../acls.js';
import { createKafkaClient } from '../client.js';
import { KAFKA_PASSWORD_ENV, KAFKA_PASSWORD_FILE_ENV, KAFKA_SASL_MECHANISM_ENV, KAFKA_USERNAME_ENV, kafkaConfigFromEnv } from '../config.js';
import { throwawayGroupId } from '../groups.js';
import { provisionTopics } from '../provision.js';

/** A fresh topic namespace, so every test gets its own topics. */
export function randomNamespace(prefix = 'it'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/**
 * The environment that makes a client authenticate as `user` instead of the run's default
 * (the scripts export the super user `admin`): same mechanism, the password file beside the
 * default one (kafka.sh keeps `<user>.password` side by side). Empty when the run has no SASL.
 */
export function kafkaUserEnv(user: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const mechanism = env[KAFKA_SASL_MECHANISM_ENV];
  if (!mechanism) return {};
  const file = env[KAFKA_PASSWORD_FILE_ENV];
  if (!file) throw new Error(`kafkaUserEnv needs ${KAFKA_PASSWORD_FILE_ENV} (the password files live side by side)`);
  return {
    [KAFKA_SASL_MECHANISM_ENV]: mechanism,
    [KAFKA_USERNAME_ENV]: user,
    [KAFKA_PASSWORD_FILE_ENV]: path.join(path.dirname(file), `${user}.password`),
    [KAFKA_PASSWORD_ENV]: '',
  };
}

/**
 * A client for the broker the test run started (GATEHOUSE_KAFKA_BROKERS, default 127.0.0.1:9092),
 * as the run's default user, or as `user` (see `kafkaUserEnv`).
 */
export function testKafka(clientId = 'gatehouse-test', user?: string): Kafka {
  const env = user === undefined ? process.env : { ...process.env, ...kafkaUserEnv(user) };
  return createKafkaClient(kafkaConfigFromEnv(clientId, env));
}

/** Provisions every catalog topic, and the principals' ACLs on them, under a fresh namespace; returns the namespace. */
export async function provisionedNamespace(kafka: Kafka, prefix?: string): Promise<string> {
  const namespace = randomNamespace(prefix);
  await provisionTopics(kafka, { namespace });
  await provisionAcls(kafka, { namespace });
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

/**
 * The record keys of every partition of `topic`, from its start to its end as it is now, in offset
 * order per partition: for topics outside the catalog (the SIEM feed), read raw.
 */
export async function topicKeys(kafka: Kafka, topic: string): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
  const end = new Map(ends.map((e) => [e.partition, Number(e.high)]));
  const pending = new Set(ends.filter((e) => Number(e.high) > Number(e.low)).map((e) => e.partition));
  const keys: string[] = [];
  if (pending.size === 0) return keys;
  // kafkajs has no manual assignment: a throwaway group that never commits stands in for it.
  const consumer = kafka.consumer({ groupId: throwawayGroupId(kafka, 'replay'), maxWaitTimeInMs: 250 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve) => {
      void consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const high = end.get(partition) ?? 0;
          if (Number(message.offset) >= high) return;
          keys.push(message.key?.toString('utf8') ?? '');
          if (Number(message.offset) + 1 >= high && pending.delete(partition) && pending.size === 0) resolve();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return keys;
}
