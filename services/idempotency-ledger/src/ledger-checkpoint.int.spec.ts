// Issue 17: the ledger topic deletes records by time. Against the real broker and database: the
// service writes checkpoints of its state into the log; once the broker has deleted everything
// before them, a replica with a fresh database, and one whose database is older than what the log
// still holds, start from the checkpoints and answer as the first did (a completed key replays its
// result, a pending key stays held, a budget keeps its use); with the checkpoints deleted as well,
// a start is refused (FOLD.HISTORY_LOST) rather than folded from what is left.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { signEvent, topicName } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { EventProducer, keyPartitioner } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { checkpointEvents, checkpointSubject } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import { DataSource } from 'typeorm';
import { compareProjections, rebuildProjection } from '@gatehouse/service-runtime';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';
import { LEDGER_SNAPSHOT_VERSION, ledgerMeta, ledgerProjection } from '@gatehouse/ledger-projection';
import { type LedgerApp, type LedgerAppOptions, startLedgerApp } from './testing/ledger-app.js';

let kafka: Kafka;
let database: TestDatabase;
const running: LedgerApp[] = [];

beforeAll(async () => {
  kafka = testKafka('ledger-checkpoint-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
});

afterAll(async () => {
  await database.drop();
});

const newKey = () => createHash('sha256').update(randomUUID()).digest('hex');

async function boot(options: LedgerAppOptions): Promise<LedgerApp> {
  const app = await startLedgerApp(options);
  running.push(app);
  return app;
}

async function stop(app: LedgerApp): Promise<void> {
  running.splice(running.indexOf(app), 1);
  await app.close();
}

/** Each partition's end offset, and what the broker still holds of it. */
async function offsets(topic: string): Promise<{ partition: number; low: string; high: string }[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return (await admin.fetchTopicOffsets(topic)).map(({ partition, low, high }) => ({ partition, low, high }));
  } finally {
    await admin.disconnect();
  }
}

/** What retention does to old segments: the broker deletes every record of each partition below `to`. */
async function deleteBelow(topic: string, to: readonly { partition: number; high: string }[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    // kafkajs finds the partitions' leaders in metadata it must have loaded first.
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: to.map(({ partition, high }) => ({ partition, offset: high })) });
  } finally {
    await admin.disconnect();
  }
}

/** Waits until `app`'s fold has applied every record on the topic (its own checkpoints included). */
async function caughtUp(app: LedgerApp, topic: string): Promise<{ partition: number; low: string; high: string }[]> {
  const ends = await offsets(topic);
  await waitFor(() => (ends.every((o) => app.engine.status().appliedOffsets[o.partition] === o.high) ? true : undefined), { what: 'the fold at the end of the log' });
  return ends;
}

/**
 * What the projection answers about the keys that must survive the deletion. Without `position`:
 * a row restored from a checkpoint stands at the checkpoint's cut, its own last record deleted.
 */
async function answers(app: LedgerApp, keys: { completed: string; pending: string }) {
  const read = async (key: string) => {
    const { status, body } = await app.get(`/v1/idempotency/keys/${key}`);
    const { position: _position, ...rest } = body;
    return { status, body: rest };
  };
  return { completed: await read(keys.completed), pending: await read(keys.pending) };
}

/** The fold's keys and budgets, in key order. */
const fold = (app: LedgerApp) => {
  const view = app.engine.view();
  const sorted = <V>(map: ReadonlyMap<string, V>) => [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { keys: sorted(view.keys), budgets: sorted(view.budgets), open: sorted(view.openKeysByPrincipal), budgetsByPrincipal: sorted(view.budgetsByPrincipal) };
};

describe('the ledger over a log whose beginning was deleted', () => {
  it('starts from the checkpoints in the log, with a fresh database or a stale one, and refuses once they are gone too', async () => {
    const namespace = await provisionedNamespace(kafka);
    const topic = topicName('ledger', namespace);
    const base = { namespace, databaseUrl: database.url };
    const first = await boot({ ...base, schema: 'ledger_cp_a' });
    const keys = { completed: newKey(), pending: newKey(), budget: newKey() };
    const reserved = await first.post('/v1/idempotency/reservations', { key: keys.completed, connectorId: 'refunds', holder: 'h', pendingTtlMs: 60_000 });
    await first.post('/v1/idempotency/completions', { key: keys.completed, leaseToken: reserved.body['leaseToken'], result: { refundId: 'R-1' } });
    await first.post('/v1/idempotency/reservations', { key: keys.pending, connectorId: 'refunds', holder: 'h', pendingTtlMs: 600_000 });
    const budget = { budgetKey: keys.budget, algorithm: 'sliding-window', count: 3, windowMs: 3_600_000 };
    expect((await first.post('/v1/rate/consumptions', budget)).body).toMatchObject({ allowed: true, remaining: 2 });
    // A stale replica's database is this one, as it is now.
    await stop(first);

    const second = await boot({ ...base, schema: 'ledger_cp_b' });
    await second.engine.writeCheckpoint(); // the one written at start (or one now): its records land first
    // The next checkpoint's cut is the whole log so far: every record before it may go.
    const before = await caughtUp(second, topic);
    // The timer's checkpoint skips partitions with nothing new since this replica's last one.
    const written = second.engine.status().checkpoints.written;
    await second.engine.writeCheckpoint({ changedOnly: true });
    expect(second.engine.status().checkpoints.written).toBe(written);
    expect(await offsets(topic)).toEqual(before);
    await second.engine.writeCheckpoint();
    expect(second.engine.status().checkpoints.written).toBeGreaterThanOrEqual(2);
    // A key written after the checkpoint is read from the records past the cut.
    const later = newKey();
    await second.post('/v1/idempotency/reservations', { key: later, connectorId: 'refunds', holder: 'h', pendingTtlMs: 600_000 });
    const expected = await answers(second, keys);
    expect(expected.completed).toEqual({ status: 200, body: expect.objectContaining({ status: 'completed', result: { refundId: 'R-1' } }) });
    expect(expected.pending.body['status']).toBe('pending');
    let stateAtStop = fold(second);
    await stop(second);

    // Retention deletes everything before the last checkpoint: every reservation, completion and budget record.
    await deleteBelow(topic, before);
    expect((await offsets(topic)).map((o) => o.low)).toEqual(before.map((o) => o.high));

    for (const [index, schema] of ['ledger_cp_fresh', 'ledger_cp_a'].entries()) {
      const replica = await boot({ ...base, schema });
      const status = replica.engine.status();
      expect({ schema, from: status.start.from }).toEqual({ schema, from: 'checkpoint' });
      if (schema === 'ledger_cp_a') expect(status.start.rejected).toBe('behind-log-start');
      expect(await answers(replica, keys)).toEqual(expected);
      expect((await replica.get(`/v1/idempotency/keys/${later}`)).body['status']).toBe('pending');
      // The fold has the state too: the pending key is still held, the completed one replays, the budget remembers its use.
      expect({ schema, state: fold(replica) }).toEqual({ schema, state: stateAtStop });
      const again = await replica.post('/v1/idempotency/reservations', { key: keys.pending, connectorId: 'refunds', holder: 'other', pendingTtlMs: 60_000 });
      expect(again.body).toMatchObject({ status: 'pending' });
      const replay = await replica.post('/v1/idempotency/reservations', { key: keys.completed, connectorId: 'refunds', holder: 'other', pendingTtlMs: 60_000 });
      expect(replay.body).toEqual({ status: 'completed', result: { refundId: 'R-1' } });
        // Its window holds every use before: the first (deleted) one, and each replica's before this one.
      expect((await replica.post('/v1/rate/consumptions', budget)).body).toMatchObject({ allowed: true, remaining: 1 - index });
      // The next replica must reach this one's state at its stop; its stop stores a snapshot at the end of the log.
      await replica.engine.writeCheckpoint();
      await caughtUp(replica, topic);
      // The operator's replay of what the log holds (`replay --compare`) rebuilds the same rows.
      const spec = ledgerProjection(TEST_KEYRING);
      const rebuilt = `${schema}_replay`;
      expect(await rebuildProjection(spec, { kafka, namespace, database: { url: database.url }, schema: rebuilt })).toMatchObject({ schema: rebuilt });
      const sql = new DataSource({ type: 'postgres', url: database.url, logging: ['error'] });
      await sql.initialize();
      try {
        const comparison = await compareProjections(spec, sql.manager, { liveSchema: schema, rebuiltSchema: rebuilt, namespace });
        expect({ schema, equal: comparison.equal, differences: comparison.differences }).toEqual({ schema, equal: true, differences: [] });
        expect(comparison.rows['keys']).toBe(3);
      } finally {
        await sql.destroy();
      }
      stateAtStop = fold(replica);
      await stop(replica);
    }

    // Now everything is gone, checkpoints included: a start must not fold what is left.
    await deleteBelow(topic, await offsets(topic));
    const refused = await startLedgerApp({ ...base, schema: 'ledger_cp_lost' }).then(
      async (app) => {
        await app.close();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ code: 'FOLD.HISTORY_LOST' });
    // A replica whose database is past what was deleted needs no checkpoint (the last to run stopped at the end).
    const current = await boot({ ...base, schema: 'ledger_cp_a' });
    expect(current.engine.status().start.from).toBe('snapshot');
    await waitFor(async () => ((await current.get(`/v1/idempotency/keys/${keys.completed}`)).status === 200 ? true : undefined), { what: 'the completed key' });
  }, 120_000);

  it('never starts from a checkpoint its writer was killed in the middle of, and does from the next complete one', async () => {
    const namespace = await provisionedNamespace(kafka);
    const topic = topicName('ledger', namespace);
    const base = { namespace, databaseUrl: database.url };
    const app = await boot({ ...base, schema: 'ledger_torn_a', checkpointIntervalMs: 3_600_000 });
    const pending = Array.from({ length: 12 }, newKey);
    for (const key of pending) await app.post('/v1/idempotency/reservations', { key, connectorId: 'refunds', holder: 'h', pendingTtlMs: 600_000 });
    await app.engine.writeCheckpoint();
    const ends = await caughtUp(app, topic);
    const cut = app.engine.view();
    const state = fold(app);
    await stop(app);

    // The service's checkpoint of every partition at the end of the log, in small chunks; one
    // partition's writer dies before its last chunk.
    const partitions = ends.length;
    const partitionOf = keyPartitioner(partitions);
    const torn = partitionOf(app.stored(pending[0]!));
    const checkpoint = (partition: number) =>
      checkpointEvents({
        state: cut,
        topic,
        partition,
        partitions,
        cut: BigInt(ends.find((o) => o.partition === partition)!.high),
        fold: LEDGER_SNAPSHOT_VERSION,
        partitionOf,
        meta: ledgerMeta(checkpointSubject(partition, partitionOf)),
        chunkChars: 200,
      }).map((event) => signEvent(event, TEST_KEYS.ledger));
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      for (let partition = 0; partition < partitions; partition += 1) {
        const events = checkpoint(partition);
        if (partition === torn) expect(events.length).toBeGreaterThan(1);
        for (const event of partition === torn ? events.slice(0, -1) : events) await producer.publish('ledger', event);
      }
      await deleteBelow(topic, ends);
      const refused = await startLedgerApp({ ...base, schema: 'ledger_torn_b' }).then(
        async (started) => {
          await started.close();
          return undefined;
        },
        (error: unknown) => error,
      );
      expect(refused).toMatchObject({ code: 'FOLD.HISTORY_LOST', details: { topic } });

      // The next writer completes one: the start takes it.
      for (const event of checkpoint(torn)) await producer.publish('ledger', event);
    } finally {
      await producer.close();
    }
    const replica = await boot({ ...base, schema: 'ledger_torn_b' });
    expect(replica.engine.status().start.from).toBe('checkpoint');
    expect(fold(replica)).toEqual(state);
    for (const key of pending) expect((await replica.get(`/v1/idempotency/keys/${key}`)).body['status']).toBe('pending');
  }, 120_000);
});
