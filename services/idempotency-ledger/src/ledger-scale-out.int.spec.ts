import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { topicName } from '@gatehouse/contracts';
import { keyPartitioner, topicPartitions, topicPartitionsFromEnv } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { ledgerProjection } from '@gatehouse/ledger-projection';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { FORWARDED_BY_HEADER, PartitionOwnerTable } from '@gatehouse/service-runtime';
import { type Kafka } from 'kafkajs';
import { DataSource } from 'typeorm';
import { type LedgerApp, type LedgerAppOptions, startLedgerApp, testLedgerAgent } from './testing/ledger-app.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';

// Replicas of a scaled-out ledger (GATEHOUSE_SCALE_OUT=partitions) on the real broker and
// PostgreSQL: one consumer group splits the partitions, each replica folds only its own and
// forwards a request for another's key to its owner; a partition that moves is fenced.

let kafka: Kafka;
let database: TestDatabase;
let sql: DataSource;
const running: LedgerApp[] = [];
let schemaCount = 0;
// One agent, known to every replica (as it would be in one deployment's configuration).
const AGENT = testLedgerAgent(['acme'], 'agent:acme');

beforeAll(async () => {
  kafka = testKafka('ledger-scale-out-int-spec');
  database = await createTestDatabase();
  sql = new DataSource({ type: 'postgres', url: database.url, logging: ['error'] });
  await sql.initialize();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close().catch(() => undefined)));
});

afterAll(async () => {
  if (sql?.isInitialized) await sql.destroy();
  await database.drop();
});

const newKey = () => createHash('sha256').update(randomUUID()).digest('hex');

async function isolated(): Promise<Pick<LedgerAppOptions, 'namespace' | 'schema' | 'databaseUrl'>> {
  schemaCount += 1;
  return { namespace: await provisionedNamespace(kafka, 'scale'), schema: `ledger_so${schemaCount}`, databaseUrl: database.url };
}

async function replica(isolation: Pick<LedgerAppOptions, 'namespace' | 'schema' | 'databaseUrl'>, name: string): Promise<LedgerApp> {
  const app = await startLedgerApp({ ...isolation, replica: name, decisionDeadlineMs: 3_000, agents: [AGENT] });
  running.push(app);
  return app;
}

type Owned = Record<string, 'loading' | 'catching-up' | 'live'>;
const ownedBy = (app: LedgerApp): number[] =>
  Object.entries((app.engine.status() as unknown as { owned: Owned }).owned)
    .filter(([, stage]) => stage === 'live')
    .map(([p]) => Number(p));

/** Waits until the replicas answer for every partition between them, each for a part, none twice. */
/** The topic's partition count in this run (GATEHOUSE_TOPIC_PARTITIONS, or the catalog's). */
const PARTITIONS = topicPartitions('ledger', topicPartitionsFromEnv());

async function settled(apps: readonly LedgerApp[], partitions: number): Promise<number[][]> {
  return waitFor(
    () => {
      const owned = apps.map(ownedBy);
      const all = owned.flat().sort((a, b) => a - b);
      const whole = all.length === partitions && all.every((p, i) => p === i);
      return whole && owned.every((o) => o.length > 0) ? owned : undefined;
    },
    { what: 'the partitions split between the replicas', timeoutMs: 60_000, intervalMs: 100 },
  );
}

const reserve = (app: LedgerApp, key: string, holder: string, headers: Record<string, string> = {}) =>
  app.post('/v1/idempotency/reservations', { key, connectorId: 'refunds', holder, pendingTtlMs: 60_000 }, headers);

describe('a scaled-out ledger', () => {
  it('splits the partitions between two replicas, and each answers every key: the other\'s through its owner', async () => {
    const isolation = await isolated();
    const a = await replica(isolation, 'replica-a');
    await settled([a], PARTITIONS);
    const b = await replica(isolation, 'replica-b');
    const [ownedA, ownedB] = await settled([a, b], PARTITIONS);
    const partitionOf = keyPartitioner(PARTITIONS);

    const keys = Array.from({ length: 24 }, newKey);
    // Every key reserved through the replica that does not own it, completed through the other.
    const answers = await Promise.all(
      keys.map(async (key) => {
        const owner = ownedA?.includes(partitionOf(a.stored(key))) ? a : b;
        const other = owner === a ? b : a;
        const reserved = await reserve(other, key, 'agent-1');
        const completed = await owner.post('/v1/idempotency/completions', { key, leaseToken: reserved.body['leaseToken'], result: { key } });
        return { reserved, completed, again: await reserve(other, key, 'agent-2'), read: await other.get(`/v1/idempotency/keys/${key}`) };
      }),
    );
    for (const [i, key] of keys.entries()) {
      const { reserved, completed, again, read } = answers[i] as (typeof answers)[number];
      expect({ key, reserved: reserved.status, status: reserved.body['status'] }).toEqual({ key, reserved: 200, status: 'reserved' });
      expect(completed.body).toEqual({ status: 'completed' });
      expect(again.body).toEqual({ status: 'completed', result: { key } });
      expect(read.body).toMatchObject({ key, status: 'completed' });
    }
    // Each replica's fold holds only the keys of its own partitions.
    for (const [app, owned] of [[a, ownedA], [b, ownedB]] as const) {
      const held = [...app.engine.view().keys.keys()].map(partitionOf);
      expect(held.every((p) => owned?.includes(p))).toBe(true);
    }
    expect(a.engine.view().keys.size + b.engine.view().keys.size).toBe(keys.length);
  });

  it('keeps deployments apart: replicas of two namespaces each own every partition of their own topic', async () => {
    const [one, other] = [await replica(await isolated(), 'replica-a'), await replica(await isolated(), 'replica-a')];
    const [ownedOne, ownedOther] = [await settled([one], PARTITIONS), await settled([other], PARTITIONS)];
    expect([ownedOne, ownedOther]).toEqual([[[0, 1, 2]], [[0, 1, 2]]]);
    // A while later, still: neither took part in the other's group.
    await new Promise((r) => setTimeout(r, 1_500));
    expect([ownedBy(one), ownedBy(other)]).toEqual([[0, 1, 2], [0, 1, 2]]);
  });

  it('never gives two leases for a key while replicas race on the same keys and one of them leaves mid-race', async () => {
    const isolation = await isolated();
    const apps = [await replica(isolation, 'replica-a'), await replica(isolation, 'replica-b')];
    await settled(apps, 3);
    const keys = Array.from({ length: 60 }, newKey);
    const leaving = apps[1] as LedgerApp;
    const race = Promise.all(
      keys.flatMap((key, i) =>
        [0, 1].map(async (worker) => {
          // Half the requests go to the replica that leaves; after it left they go to the other.
          await new Promise((r) => setTimeout(r, i * 15));
          const target = running.includes(leaving) && worker === 1 ? leaving : (apps[0] as LedgerApp);
          for (let attempt = 0; attempt < 20; attempt += 1) {
            const answer = await reserve(target === leaving && !running.includes(leaving) ? (apps[0] as LedgerApp) : target, key, `worker-${worker}`).catch(() => undefined);
            if (answer && answer.status === 200) return { key, worker, status: String(answer.body['status']) };
            await new Promise((r) => setTimeout(r, 200));
          }
          return { key, worker, status: 'unanswered' };
        }),
      ),
    );
    await new Promise((r) => setTimeout(r, 300));
    running.splice(running.indexOf(leaving), 1);
    await leaving.close();
    const answers = await race;
    // Never two leases for a key. A reservation whose partition moved while its writer waited is
    // applied by the new owner while the writer is told to retry (its retry finds the key pending):
    // no lease was handed out twice, the key is held until its TTL, and that happens only to the
    // few requests in flight at the handover.
    const leases = keys.map((key) => answers.filter((x) => x.key === key && x.status === 'reserved').length);
    expect(leases.filter((n) => n > 1)).toEqual([]);
    expect(leases.filter((n) => n === 0).length).toBeLessThan(keys.length / 5);
    // The replica left answers for every partition now, and agrees with the log.
    await settled([apps[0] as LedgerApp], PARTITIONS);
    const view = apps[0]?.engine.view();
    expect(view?.keys.size).toBe(keys.length);
    expect([...(view?.keys.values() ?? [])].every((k) => k.status === 'pending')).toBe(true);
  });

  it('never commits for a partition another replica has claimed since: its writers get no answer', async () => {
    const isolation = await isolated();
    const a = await replica(isolation, 'replica-a');
    await settled([a], PARTITIONS);
    const key = newKey();
    const partition = keyPartitioner(PARTITIONS)(a.stored(key));
    // Another replica claims the partition (it was assigned it; replica-a has not heard yet).
    const owners = new PartitionOwnerTable(sql, isolation.schema as string, ledgerProjection(TEST_KEYRING).name, topicName('ledger', isolation.namespace), { owner: 'replica-z', url: 'http://127.0.0.1:9' });
    await owners.claim(partition);
    const refused = await reserve(a, key, 'agent-1');
    expect({ status: refused.status, code: refused.body['code'] }).toEqual({ status: 503, code: 'LEDGER.UNAVAILABLE' });
    // Nothing of it reached the projection: the fenced transaction rolled back.
    const rows: unknown[] = await sql.query(`SELECT key FROM ${isolation.schema}.keys WHERE key = $1`, [a.stored(key)]);
    expect(rows).toEqual([]);
  });

  it('forwards only once and only with the caller\'s own credentials', async () => {
    const isolation = await isolated();
    const a = await replica(isolation, 'replica-a');
    await settled([a], PARTITIONS);
    const b = await replica(isolation, 'replica-b');
    const [ownedA] = await settled([a, b], PARTITIONS);
    const partitionOf = keyPartitioner(PARTITIONS);
    let key = newKey();
    while (ownedA?.includes(partitionOf(a.stored(key)))) key = newKey();
    // A caller that claims to be a replica's forward is not forwarded again: refused, retryable.
    const spoofed = await reserve(a, key, 'agent-1', { [FORWARDED_BY_HEADER]: 'replica-b' });
    expect({ status: spoofed.status, code: spoofed.body['code'], retryable: spoofed.body['retryable'] }).toEqual({ status: 503, code: 'FOLD.PARTITION_MOVING', retryable: true });
    // No credentials, or another key: refused where it arrives, never forwarded with more.
    expect((await a.anonymous.post('/v1/idempotency/reservations', { key, connectorId: 'refunds', holder: 'x', pendingTtlMs: 60_000 })).status).toBe(401);
    expect((await reserve(a, key, 'agent-1', { authorization: 'Bearer lk_not-a-key' })).status).toBe(401);
    // The caller's own request, forwarded: answered by the owner.
    expect((await reserve(a, key, 'agent-1')).body['status']).toBe('reserved');
  });
});
