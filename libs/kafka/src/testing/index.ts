import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { encodeEvent, recordKey, type TopicEvent, type TopicId, TOPICS, topicName } from '@gatehouse/contracts';
import { type Kafka, type SASLOptions } from 'kafkajs';
import { LostAnswers } from './lost-answers.js';
import { type Fold } from '../fold-engine/fold-engine.js';
import { provisionAcls } from '../acls.js';
import { createKafkaClient, type KafkaLogSink } from '../client.js';
import { KAFKA_PASSWORD_ENV, KAFKA_PASSWORD_FILE_ENV, KAFKA_SASL_MECHANISM_ENV, KAFKA_USERNAME_ENV, kafkaConfigFromEnv } from '../config.js';
import { kafkaGroupId, rememberClientPrincipal, throwawayGroupId } from '../groups.js';
import { Kafka as KafkaClient, logLevel, Partitioners } from '../kafkajs.js';
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

export { LostAnswers };

/**
 * A client like `testKafka` whose connections come from `lost.socketFactory` (answers to Produce
 * requests can be lost on purpose) and that retries once, so two lost answers in a row fail the
 * send that was waiting for them. Silent: the failures are the test's doing.
 */
export function lossyTestKafka(clientId: string, lost: LostAnswers): Kafka {
  const config = kafkaConfigFromEnv(clientId);
  const sasl = config.sasl;
  const kafka = new KafkaClient({
    clientId,
    brokers: [...config.brokers],
    ...(sasl ? { sasl: { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password } as SASLOptions, ssl: false } : {}),
    socketFactory: lost.socketFactory,
    // The fewest an idempotent producer accepts: a send fails once two answers in a row are lost.
    retry: { retries: 1, initialRetryTime: 50 },
    logLevel: logLevel.NOTHING,
  });
  rememberClientPrincipal(kafka, config);
  return kafka;
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

/**
 * kafkajs logs the broker's refusal of FindCoordinator but throws "coordinator not found" without
 * it: the refusals `joinGroupAs` and `transactAs` report, by the broker's message (kafkajs' error table).
 */
const REFUSALS: Readonly<Record<string, string>> = {
  'Not authorized to access group: Group authorization failed': 'GROUP_AUTHORIZATION_FAILED',
  'Transactional Id authorization failed': 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
};

/** A client as `user` that collects the broker's refusals from the client's log. */
function refusalsClient(user: string): { kafka: Kafka; refusal: () => string | undefined } {
  const refusals: string[] = [];
  const sink: KafkaLogSink = (_level, _message, extra) => {
    const type = REFUSALS[String(extra['error'])];
    if (type) refusals.push(type);
  };
  return { kafka: createKafkaClient(kafkaConfigFromEnv(`probe-${user}`, { ...process.env, ...kafkaUserEnv(user) }), sink), refusal: () => refusals[0] };
}

/**
 * Tries to join consumer group `groupId` as `user`, subscribed to `topic` (as an attacker would):
 * `joined`, or the broker's refusal (`GROUP_AUTHORIZATION_FAILED`). Leaves the group at once.
 */
export async function joinGroupAs(user: string, groupId: string, topic: string): Promise<string> {
  const { kafka, refusal } = refusalsClient(user);
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 100, retry: { retries: 0, restartOnFailure: async () => false } });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: false });
    let answer: string | undefined;
    consumer.on(consumer.events.GROUP_JOIN, () => void (answer ??= 'joined'));
    consumer.on(consumer.events.CRASH, ({ payload }) => void (answer ??= refusal() ?? `crashed: ${payload.error.name}`));
    // run() settles once the first join succeeded or crashed (a crash is handled inside it).
    await consumer.run({ eachMessage: async () => undefined });
    return answer ?? 'neither joined nor refused';
  } finally {
    await consumer.disconnect();
  }
}

/**
 * Opens and aborts a transaction as `user` with `transactionalId` (finding its coordinator needs
 * DESCRIBE on it, InitProducerId WRITE): `transacted`, or the broker's refusal.
 */
export async function transactAs(user: string, transactionalId: string): Promise<string> {
  const { kafka, refusal } = refusalsClient(user);
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, retry: { retries: 1 } });
  try {
    await producer.connect();
    const tx = await producer.transaction();
    await tx.abort();
    return 'transacted';
  } catch (error) {
    return refusal() ?? `failed: ${(error as Error).name}`;
  } finally {
    await producer.disconnect();
  }
}

/** Where a start from a snapshot and a fold of the whole log part ways. */
export interface SnapshotResumeMismatch {
  /** The number of records folded before the snapshot was taken. */
  readonly cut: number;
  /** `state`: the states differ after the last record; `verdict`: the verdict on record `at` differs. */
  readonly what: 'state' | 'verdict';
  readonly at?: number;
}

/**
 * Folds `records` whole, and for every cut folds the first `cut` records, snapshots the state
 * through the fold's codec (encode, decode), and folds the rest into the decoded state: the
 * verdicts on the rest and the final states (as the codec encodes them) must be the same.
 * Returns the first difference, or undefined. What every fold's snapshot path must satisfy.
 */
export function snapshotResumeMismatch<T extends TopicId, S, V>(fold: Fold<T, S, V>, records: readonly { event: TopicEvent<T>; logTime: number }[], cuts: readonly number[]): SnapshotResumeMismatch | undefined {
  const codec = fold.snapshot;
  if (!codec) throw new TypeError('the fold has no snapshot codec');
  const whole = fold.create();
  const verdicts = records.map(({ event, logTime }) => JSON.stringify(fold.apply(whole, event, logTime)));
  const expected = codec.encode(whole);
  for (const cut of cuts) {
    const before = fold.create();
    for (const { event, logTime } of records.slice(0, cut)) fold.apply(before, event, logTime);
    const resumed = codec.decode(codec.encode(before));
    for (let i = cut; i < records.length; i += 1) {
      const record = records[i] as { event: TopicEvent<T>; logTime: number };
      if (JSON.stringify(fold.apply(resumed, record.event, record.logTime)) !== verdicts[i]) return { cut, what: 'verdict', at: i };
    }
    if (codec.encode(resumed) !== expected) return { cut, what: 'state' };
  }
  return undefined;
}

/** `snapshotResumeMismatch` over many logs, each cut after every record: the first difference (with the log's index), or undefined. */
export function firstSnapshotMismatch<T extends TopicId, S, V>(fold: Fold<T, S, V>, logs: readonly (readonly { event: TopicEvent<T>; logTime: number }[])[]): (SnapshotResumeMismatch & { readonly log: number }) | undefined {
  for (const [index, records] of logs.entries()) {
    const mismatch = snapshotResumeMismatch(fold, records, Array.from({ length: records.length + 1 }, (_, cut) => cut));
    if (mismatch) return { log: index, ...mismatch };
  }
  return undefined;
}

/**
 * Appends `count` records to `topicId` cycling through `records` (encoded once: what a benchmark
 * needs to lay down a long history fast), a thousand per produce request (under the broker's
 * 1 MB batch limit), four requests in flight, acks=all.
 */
export async function appendRepeated<T extends TopicId>(kafka: Kafka, topicId: T, namespace: string, records: readonly TopicEvent<T>[], count: number): Promise<void> {
  if (count === 0 || records.length === 0) return;
  const spec = TOPICS[topicId];
  const encoded = records.map((event) => ({ key: recordKey(event, spec), value: encodeEvent(topicId, event), headers: { 'gatehouse-type': event.type } }));
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  try {
    const topic = topicName(topicId, namespace);
    const batch = (from: number) => producer.send({ topic, acks: -1, messages: Array.from({ length: Math.min(1_000, count - from) }, (_, i) => encoded[(from + i) % encoded.length] as (typeof encoded)[number]) });
    for (let sent = 0; sent < count; sent += 4_000) {
      await Promise.all([0, 1, 2, 3].map((k) => sent + k * 1_000).filter((from) => from < count).map(batch));
    }
  } finally {
    await producer.disconnect();
  }
}
export { type Measurement, type RecordedSpan, type RecordedTelemetry, recordTelemetry } from './telemetry.js';

/**
 * Seconds a plain kafkajs consumer (a fresh group, from the beginning, counting only, no decode)
 * takes to see `expected` records of `topic`: the floor the benchmarks set their Kafka paths
 * against, what a team would write with kafkajs alone.
 */
export async function plainConsumeSeconds(kafka: Kafka, topic: string, expected: number): Promise<number> {
  const consumer = kafka.consumer({ groupId: kafkaGroupId(kafka, `bench-plain-${randomUUID()}`), maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let seen = 0;
    const start = process.hrtime.bigint();
    await new Promise<void>((resolve) => {
      void consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          seen += batch.messages.length;
          if (seen >= expected) resolve();
        },
      });
    });
    return Number(process.hrtime.bigint() - start) / 1e9;
  } finally {
    await consumer.disconnect();
  }
}
