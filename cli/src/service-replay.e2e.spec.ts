// `gatehouse <service> replay --compare` for the ledger and policy services (issue 17): the
// operator's rebuild of a projection from its topic into a fresh schema, compared with the live
// one. The ledger's topic deletes records by time: once the broker has deleted everything before
// the service's checkpoints, the replay rebuilds from them and still equals the live projection;
// with the checkpoints gone too it refuses (FOLD.HISTORY_LOST) instead of rebuilding from what is left.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import {
  createEvent,
  LedgerKeyCompletedV1,
  LedgerKeyReservedV1,
  LedgerRateConsumedV1,
  PolicyBundlePublishedV1,
  signEvent,
  topicName,
  trustedEntryOf,
} from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { applyLedgerEvent, createLedgerState } from '@gatehouse/ledger';
import { LEDGER_SNAPSHOT_VERSION, ledgerCheckpointEvents, ledgerMeta, ledgerProjection } from '@gatehouse/ledger-projection';
import { bundleDigest, versionKey } from '@gatehouse/policies';
import { policyProjection } from '@gatehouse/policy-projection';
import { rebuildProjection } from '@gatehouse/service-runtime';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import { runCli } from './testing/run-cli.js';

let kafka: Kafka;
const databases: TestDatabase[] = [];

beforeAll(() => {
  kafka = testKafka('service-replay-e2e');
});

afterAll(async () => {
  await Promise.all(databases.map((d) => d.drop()));
});

async function freshDatabase(): Promise<TestDatabase> {
  const database = await createTestDatabase();
  databases.push(database);
  return database;
}

const env = (database: TestDatabase, namespace: string, keys: readonly Parameters<typeof trustedEntryOf>[0][]) => ({
  GATEHOUSE_TRUSTED_KEYS: JSON.stringify(keys.map((k) => trustedEntryOf(k))),
  GATEHOUSE_DATABASE_URL: database.url,
  GATEHOUSE_TOPIC_NAMESPACE: namespace,
  GATEHOUSE_KAFKA_BROKERS: process.env['GATEHOUSE_KAFKA_BROKERS'] ?? '127.0.0.1:9092',
});

async function withAdmin<R>(work: (admin: ReturnType<Kafka['admin']>) => Promise<R>): Promise<R> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.disconnect();
  }
}

/** What retention does to old segments: the broker deletes every record of each partition below its end now. */
async function deleteAll(topic: string): Promise<void> {
  await withAdmin(async (admin) => {
    const ends = await admin.fetchTopicOffsets(topic);
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: ends.map(({ partition, high }) => ({ partition, offset: high })) });
  });
}

const hex = (s: string) => createHash('sha256').update(s).digest('hex');

describe('gatehouse ledger replay', () => {
  it('rebuilds from the checkpoints once the records before them are deleted, equals the live projection, and refuses once they are gone too', async () => {
    const namespace = await provisionedNamespace(kafka);
    const topic = topicName('ledger', namespace);
    const database = await freshDatabase();
    const [done, held, budget] = [hex(randomUUID()), hex(randomUUID()), hex(randomUUID())];
    const lease = randomUUID();
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      const meta = (subject: string) => ledgerMeta(subject, 'acme');
      for (const event of [
        createEvent(LedgerKeyReservedV1, meta(done), { key: done, connectorId: 'refunds', leaseToken: lease, holder: 'h', pendingTtlMs: 60_000 }),
        createEvent(LedgerKeyCompletedV1, meta(done), { key: done, leaseToken: lease, result: { refundId: 'R-1' } }),
        createEvent(LedgerKeyReservedV1, meta(held), { key: held, connectorId: 'refunds', leaseToken: randomUUID(), holder: 'h', pendingTtlMs: 600_000 }),
        createEvent(LedgerRateConsumedV1, meta(budget), { budgetKey: budget, claimId: randomUUID(), algorithm: 'sliding-window', count: 5, windowMs: 3_600_000 }),
      ]) {
        await producer.publish('ledger', signEvent(event, TEST_KEYS.ledger));
      }
      // The service's checkpoint of every partition at the end of the log: its state, folded by log time.
      const state = createLedgerState(TEST_KEYRING);
      const read = await replayTopic(kafka, 'ledger', { namespace, timeoutMs: 10_000, onRecord: (r) => void applyLedgerEvent(state, r.event, r.logTime.getTime()) });
      const offsets = new Map(Object.entries(read.nextOffsets).map(([p, o]) => [Number(p), BigInt(o)]));
      const before = await withAdmin((admin) => admin.fetchTopicOffsets(topic));
      for (const [, events] of ledgerCheckpointEvents({ state, offsets }, { topic, partitions: before.length, fold: LEDGER_SNAPSHOT_VERSION, signingKey: TEST_KEYS.ledger })) {
        for (const event of events) await producer.publish('ledger', event);
      }
      // The live projection, as the service wrote it from the whole log (its checkpoints included).
      await rebuildProjection(ledgerProjection(TEST_KEYRING), { kafka, namespace, database: { url: database.url }, schema: 'ledger' });
      await withAdmin(async (admin) => {
        await admin.fetchTopicMetadata({ topics: [topic] });
        await admin.deleteTopicRecords({ topic, partitions: before.map(({ partition, high }) => ({ partition, offset: high })) });
      });
    } finally {
      await producer.close();
    }

    const equal = await runCli(['ledger', 'replay', '--compare', '--schema', 'ledger_replay'], env(database, namespace, [TEST_KEYS.ledger]));
    expect({ stderr: equal.stderr, report: JSON.parse(equal.stdout) as unknown }).toMatchObject({ stderr: '', report: { equal: true, rows: { keys: 2, budgets: 1 } } });
    expect(equal.status).toBe(0);
    // The service's own name works as well.
    expect((await runCli(['idempotency-ledger', 'replay', '--compare', '--schema', 'ledger_replay'], env(database, namespace, [TEST_KEYS.ledger]))).status).toBe(0);

    await deleteAll(topic);
    const lost = await runCli(['ledger', 'replay', '--compare', '--schema', 'ledger_replay'], env(database, namespace, [TEST_KEYS.ledger]));
    expect(lost.status).toBe(2);
    expect(lost.stderr).toContain('FOLD.HISTORY_LOST');
  }, 120_000);
});

describe('gatehouse policy replay', () => {
  it('rebuilds the policy projection from the topic and finds it equal to the live one', async () => {
    const namespace = await provisionedNamespace(kafka);
    const database = await freshDatabase();
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      for (const revision of [1, 2]) {
        const bundle = { rules: [{ tool: 'payments.refund', maxAmount: 100 * revision }] };
        const event = createEvent(PolicyBundlePublishedV1, { source: 'service:policy', tenant: 'acme', subject: versionKey('payments', revision) }, { policySetId: 'payments', revision, digest: bundleDigest(bundle), publishedBy: 'op:1', bundle });
        await producer.publish('policies', signEvent(event, TEST_KEYS.policy));
      }
    } finally {
      await producer.close();
    }
    await rebuildProjection(policyProjection(TEST_KEYRING), { kafka, namespace, database: { url: database.url }, schema: 'policy' });
    const equal = await runCli(['policy', 'replay', '--compare', '--schema', 'policy_replay'], env(database, namespace, [TEST_KEYS.policy]));
    expect(equal.stderr).toBe('');
    expect(equal.status).toBe(0);
    expect(JSON.parse(equal.stdout)).toMatchObject({ equal: true });
  }, 60_000);
});
