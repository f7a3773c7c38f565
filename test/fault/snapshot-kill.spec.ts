import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { testRequest } from '@gatehouse/approvals/testing';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { ledgerKeyOf } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import pg from 'pg';
import { throwawayDatabase } from '../src/support/database.js';
import { serviceKafkaEnv } from '../src/support/kafka-auth.js';
import { ledgerAgent, ledgerAgentsEnv } from '../src/support/ledger-agent.js';
import { freePort, killAll, ROOT, type Started, startNode, startService } from '../src/support/processes.js';
import { type FoldStartStatus, postDecision, recordsBetween, SNAPSHOT_OFTEN, storedSnapshot, topicEnd } from './support/fold-snapshots.js';

// A fold service SIGKILLed inside the transaction that writes its snapshot. The test holds the row
// lock on the service's `fold_snapshots` row (SELECT ... FOR UPDATE), makes work, and waits until
// the service's flush (rows, offsets, then the snapshot, in one transaction) blocks on that lock;
// then kills the process, releases the lock, and starts the service again on the same database,
// topics and port. The blocked transaction never commits: its rows and snapshot are lost, and
// nobody was answered for them (writers wait for the projection commit). The restart loads the
// snapshot before it, reads on from its offsets, and ends where the log ends.
//
// The flush waits at most lock_timeout (10 s) for the lock, and a writer at most its decision
// deadline (5 s): the kill comes within a few hundred milliseconds of the block being seen.

const BLOCK_SEEN_WITHIN_MS = 30_000;

let kafka: Kafka;
let database: { url: string; drop: () => Promise<void> } | undefined;
const producers: EventProducer[] = [];

beforeAll(async () => {
  kafka = testKafka('fault-snapshot');
  database = await throwawayDatabase('gh_fault');
}, 60_000);

afterAll(async () => {
  killAll();
  await Promise.all(producers.map((p) => p.close().catch(() => undefined)));
  await database?.drop();
});

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: database?.url });
  await client.connect();
  return client;
}

/** A transaction of the test's holding the row lock on the one snapshot row of `schema`; the offsets of the snapshot it locked. */
async function lockSnapshotRow(schema: string): Promise<{ offsets: Record<string, string>; release: () => Promise<void> }> {
  const client = await connect();
  await client.query('BEGIN');
  const { rows } = await client.query<{ offsets: Record<string, string> }>(`SELECT offsets FROM ${schema}.fold_snapshots FOR UPDATE`);
  expect(rows).toHaveLength(1);
  return {
    offsets: (rows[0] as { offsets: Record<string, string> }).offsets,
    release: async () => {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

/** Polls until a session of the service (its `application_name`) waits on a lock in a query on `fold_snapshots`; its pid and query. */
async function blockedOnSnapshot(watcher: pg.Client, application: string, stop: { done: boolean }): Promise<{ pid: number; query: string }> {
  const deadline = Date.now() + BLOCK_SEEN_WITHIN_MS;
  try {
    while (Date.now() < deadline) {
      const { rows } = await watcher.query<{ pid: number; query: string }>(
        `SELECT pid, query FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock' AND query ILIKE '%fold_snapshots%'`,
        [application],
      );
      if (rows[0]) return rows[0];
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no session of ${application} blocked on fold_snapshots within ${BLOCK_SEEN_WITHIN_MS} ms`);
  } finally {
    stop.done = true;
  }
}

/** Waits until the backend `pid` is gone (the killed process's transaction rolled back once the lock was released). */
async function backendGone(watcher: pg.Client, pid: number): Promise<void> {
  await waitFor(async () => ((await watcher.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0 ? true : undefined), {
    what: `backend ${pid} to end`,
    timeoutMs: 15_000,
    intervalMs: 50,
  });
}

/** Per partition, the next offset the projection's committed rows are valid up to. */
async function projectedOffsets(watcher: pg.Client, schema: string): Promise<Record<string, string>> {
  const { rows } = await watcher.query<{ partition: number; next_offset: string }>(`SELECT partition, next_offset::text AS next_offset FROM ${schema}.projection_offsets`);
  return Object.fromEntries(rows.map((r) => [String(r.partition), r.next_offset]));
}

/**
 * Drives `call` (one HTTP call per item, `concurrency` at a time) until the service's snapshot
 * write blocks on the test's row lock, then SIGKILLs it, releases the lock and waits for the
 * killed process's backend to end. The calls start once the snapshot interval has passed with the
 * lock held, so the first flush they cause carries a snapshot and blocks: none of them can be
 * answered. Returns what each call answered (0: the connection broke) and the offsets of the
 * snapshot the test locked.
 */
async function killInsideSnapshotWrite<I>(options: {
  readonly service: Started;
  readonly application: string;
  readonly schema: string;
  readonly items: readonly I[];
  readonly call: (item: I) => Promise<number>;
  readonly concurrency: number;
}): Promise<{ answered: Map<I, number>; locked: Record<string, string>; query: string }> {
  const { service, application, schema, items, call, concurrency } = options;
  const watcher = await connect();
  try {
    const lock = await lockSnapshotRow(schema);
    await new Promise((r) => setTimeout(r, 2 * Number(SNAPSHOT_OFTEN.GATEHOUSE_FOLD_SNAPSHOT_INTERVAL_MS)));
    const answered = new Map<I, number>();
    const stop = { done: false };
    let next = 0;
    const worker = async () => {
      while (!stop.done && next < items.length) {
        const item = items[next] as I;
        next += 1;
        answered.set(item, await call(item));
      }
    };
    const workers = Promise.all(Array.from({ length: concurrency }, worker));
    let blocked: { pid: number; query: string };
    try {
      blocked = await blockedOnSnapshot(watcher, application, stop);
      service.child.kill('SIGKILL');
      expect(await service.exited()).toBeNull();
    } finally {
      await lock.release();
    }
    await workers;
    await backendGone(watcher, blocked.pid);
    return { answered, locked: lock.offsets, query: blocked.query };
  } finally {
    await watcher.end();
  }
}

describe('the approval service killed inside its snapshot write', () => {
  const REQUESTS = 30;
  const reviewerKey = `rk_${randomUUID()}`;
  const reviewers = JSON.stringify([{ id: 'user:rita', role: 'payments-approver', tenants: ['acme'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') }]);
  const auth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };
  let namespace: string;
  let env: Record<string, string>;
  let baseUrl: string;

  beforeAll(async () => {
    namespace = await provisionedNamespace(kafka, 'fault');
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    env = { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database?.url ?? '', GATEHOUSE_APPROVAL_REVIEWERS: reviewers, GATEHOUSE_PORT: String(port), ...SNAPSHOT_OFTEN };
  }, 60_000);

  interface Shown {
    readonly status: string;
    readonly settledBy?: { id: string };
  }

  async function get<T>(route: string): Promise<T> {
    return (await (await fetch(`${baseUrl}${route}`, { headers: auth })).json()) as T;
  }

  /** A reviewer's decision: the HTTP status, or 0 when the connection broke (the service died under it). */
  const decide = (approvalId: string, verdict: 'approve' | 'deny') => postDecision(baseUrl, auth, approvalId, verdict);

  it('loses no decision answered 200, starts from the snapshot before the lost one and reads on from it', async () => {
    const first = await startService('approval', env);
    // The agents' requests, signed by the test agent and appended as the `agent` principal.
    const producer = await EventProducer.connect(testKafka('fault-snapshot-agent', 'agent'), { namespace });
    producers.push(producer);
    const ids: string[] = [];
    for (let i = 0; i < REQUESTS; i += 1) {
      const made = testRequest({ arguments: { orderId: `o-${i}`, amount: i + 1 }, deadlineMs: 600_000 });
      await producer.publish('approvals', made.event);
      ids.push(made.approvalId);
    }
    await waitFor(async () => ((await get<{ items: unknown[] }>('/v1/approvals?status=pending&limit=200')).items.length === REQUESTS ? true : undefined), {
      what: `${REQUESTS} pending requests`,
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    const verdictOf = (id: string): 'approve' | 'deny' => (ids.indexOf(id) % 2 === 0 ? 'approve' : 'deny');
    const expected = (id: string) => (verdictOf(id) === 'approve' ? 'approved' : 'denied');

    // A few decisions first, so the service has stored a snapshot with them to lock.
    const early = ids.slice(0, 6);
    for (const id of early) expect(await decide(id, verdictOf(id))).toBe(200);
    await waitFor(async () => ((await get<FoldStartStatus>('/v1/approvals-status')).snapshots.written > 0 ? true : undefined), { what: 'a snapshot stored', timeoutMs: 30_000, intervalMs: 100 });

    const { answered, locked, query } = await killInsideSnapshotWrite({
      service: first,
      application: 'gatehouse-approval',
      schema: 'approval',
      items: ids.slice(early.length),
      call: (id) => decide(id, verdictOf(id)),
      concurrency: 3,
    });
    // It was the snapshot's upsert that waited, the last statement of the flush: the rows and offsets of that flush were written in the same transaction.
    expect(query).toMatch(/INSERT INTO "?approval"?\.fold_snapshots/);
    // Every decision made while the lock was held waited for the blocked commit: none was answered.
    expect([...answered.values()].filter((s) => s !== 0)).toEqual([]);
    // So the decisions answered 200 are the ones made before the lock.
    const answered200 = early;

    // What the killed process left, read before anything starts again: its blocked snapshot and
    // rows were never committed (the snapshot row is the one the test locked, and the log holds
    // records the committed rows do not cover), and every decision answered 200 is committed.
    const sql = await connect();
    const endBefore = await topicEnd(kafka, 'approvals', namespace);
    try {
      expect((await storedSnapshot(database?.url ?? '', 'approval')).offsets).toEqual(locked);
      const projected = await projectedOffsets(sql, 'approval');
      expect(recordsBetween(projected, endBefore)).toBeGreaterThan(0);
      const { rows } = await sql.query<{ approval_id: string; status: string }>('SELECT approval_id, status FROM approval.approvals WHERE approval_id = ANY($1)', [answered200]);
      expect(new Map(rows.map((r) => [r.approval_id, r.status]))).toEqual(new Map(answered200.map((id) => [id, expected(id)])));
    } finally {
      await sql.end();
    }

    const second = await startService('approval', env);
    expect(second.url).toBe(baseUrl);
    // It loaded the snapshot the test had locked and read exactly what the log held after it
    // (nothing was appended meanwhile: the test is the only writer), ending at the log's end.
    const status = await get<FoldStartStatus & { approvals: number }>('/v1/approvals-status');
    expect(await topicEnd(kafka, 'approvals', namespace)).toEqual(endBefore);
    expect(status.start).toEqual({ from: 'snapshot', records: recordsBetween(locked, endBefore) });
    expect(status.start.records).toBeGreaterThan(0);
    expect(status.start.records).toBeLessThan(recordsBetween({}, endBefore));
    expect(status.snapshots.lastOffsets).toEqual(endBefore);
    expect(status.approvals).toBe(REQUESTS);

    // No lost decision: every one answered 200 is there, as answered.
    for (const id of answered200) {
      const shown = await get<Shown>(`/v1/approvals/${id}`);
      expect({ id, status: shown.status, by: shown.settledBy?.id }).toEqual({ id, status: expected(id), by: 'user:rita' });
    }
    // A decision in flight at the kill either reached the log (and is there) or did not (still
    // pending); deciding again gets 200 or, when it had reached the log, 409. The blocked flush
    // held at least one decision that reached the log and was never answered.
    let reachedLog = 0;
    for (const id of ids.filter((i) => !answered200.includes(i))) {
      const before = (await get<Shown>(`/v1/approvals/${id}`)).status;
      expect(['pending', expected(id)]).toContain(before);
      const again = await decide(id, verdictOf(id));
      expect({ id, again }).toEqual({ id, again: before === 'pending' ? 200 : 409 });
      if (before !== 'pending') reachedLog += 1;
    }
    expect(reachedLog).toBeGreaterThan(0);

    // The projection rebuilt by replaying the topic from offset 0 equals the live one.
    const replay = startNode(path.join(ROOT, 'services/approval/dist/cli/replay.js'), ['--compare', '--schema', 'approval_snapshot_replay'], { ...serviceKafkaEnv('approval'), ...env });
    expect(await replay.exited()).toBe(0);
    expect(JSON.parse(replay.output().trim().split('\n').at(-1) ?? '{}')).toMatchObject({ equal: true });
    const after = await get<{ phase: string; approvals: number; pending: number; unappliedRecords: number }>('/v1/approvals-status');
    expect(after).toMatchObject({ phase: 'running', approvals: REQUESTS, pending: 0, unappliedRecords: 0 });
    second.child.kill('SIGTERM');
    await second.exited();
  }, 180_000);
});

describe('the idempotency ledger killed inside its snapshot write', () => {
  const KEYS = 30;
  const agent = ledgerAgent();
  let namespace: string;
  let env: Record<string, string>;
  let baseUrl: string;

  beforeAll(async () => {
    namespace = await provisionedNamespace(kafka, 'fault');
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    env = { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database?.url ?? '', GATEHOUSE_PORT: String(port), ...ledgerAgentsEnv(agent), ...SNAPSHOT_OFTEN };
  }, 60_000);

  /** A reservation of `key` by `holder`: the HTTP status and the answer's status; status 0 when the connection broke. */
  async function reserve(key: string, holder: string): Promise<{ status: number; answer?: string }> {
    try {
      const res = await fetch(`${baseUrl}/v1/idempotency/reservations`, {
        method: 'POST',
        headers: agent.headers,
        body: JSON.stringify({ key, connectorId: 'orders.ship', holder, pendingTtlMs: 600_000 }),
      });
      const body = (await res.json()) as { status?: string };
      return { status: res.status, ...(body.status !== undefined && { answer: body.status }) };
    } catch {
      return { status: 0 };
    }
  }

  async function shown(key: string): Promise<{ status: number; holder?: string }> {
    const res = await fetch(`${baseUrl}/v1/idempotency/keys/${key}`, { headers: agent.headers });
    const body = (await res.json()) as { status?: string; holder?: string };
    return { status: res.status, ...(body.holder !== undefined && { holder: body.holder }) };
  }

  it('loses no reservation answered, starts from the snapshot before the lost one and reads on from it', async () => {
    const first = await startService('idempotency-ledger', env);
    // The agent's keys (what a connector sends: a sha-256), in the tenant the agent is bound to.
    const keys = Array.from({ length: KEYS }, (_, i) => createHash('sha256').update(`order-${i}`).digest('hex'));
    const early = keys.slice(0, 6);
    for (const key of early) expect(await reserve(key, 'worker-a')).toEqual({ status: 200, answer: 'reserved' });
    await waitFor(async () => (((await (await fetch(`${baseUrl}/v1/ledger/status`)).json()) as FoldStartStatus).snapshots.written > 0 ? true : undefined), {
      what: 'a snapshot stored',
      timeoutMs: 30_000,
      intervalMs: 100,
    });

    const replies = new Map<string, { status: number; answer?: string }>();
    const { answered, locked, query } = await killInsideSnapshotWrite({
      service: first,
      application: 'gatehouse-ledger',
      schema: 'ledger',
      items: keys.slice(early.length),
      call: async (key) => {
        const reply = await reserve(key, 'worker-a');
        replies.set(key, reply);
        return reply.status;
      },
      concurrency: 3,
    });
    expect(query).toMatch(/INSERT INTO "?ledger"?\.fold_snapshots/);
    // Every reservation asked for while the lock was held waited for the blocked commit: none was answered.
    expect([...answered].filter(([, s]) => s !== 0).map(([key]) => ({ key, ...replies.get(key) }))).toEqual([]);
    // So the reservations answered are the ones made before the lock.
    const reserved = early;

    const sql = await connect();
    const endBefore = await topicEnd(kafka, 'ledger', namespace);
    try {
      expect((await storedSnapshot(database?.url ?? '', 'ledger')).offsets).toEqual(locked);
      expect(recordsBetween(await projectedOffsets(sql, 'ledger'), endBefore)).toBeGreaterThan(0);
      const { rows } = await sql.query<{ key: string; status: string; holder: string }>('SELECT key, status, holder FROM ledger.keys WHERE key = ANY($1)', [reserved.map((k) => ledgerKeyOf('default', k))]);
      expect(new Map(rows.map((r) => [r.key, [r.status, r.holder]]))).toEqual(new Map(reserved.map((k) => [ledgerKeyOf('default', k), ['pending', 'worker-a']])));
    } finally {
      await sql.end();
    }

    const second = await startService('idempotency-ledger', env);
    expect(second.url).toBe(baseUrl);
    const status = (await (await fetch(`${baseUrl}/v1/ledger/status`)).json()) as FoldStartStatus;
    // The start appended nothing but its checkpoint of the state it read (one record per partition).
    const appended: string[] = [];
    await replayTopic(kafka, 'ledger', { namespace, fromOffsets: endBefore, timeoutMs: 10_000, onRecord: (record) => void appended.push(record.event.type) });
    expect(new Set(appended)).toEqual(new Set(appended.length > 0 ? ['LedgerCheckpoint'] : []));
    expect(status.start).toEqual({ from: 'snapshot', records: recordsBetween(locked, endBefore) });
    expect(status.start.records).toBeGreaterThan(0);
    expect(status.start.records).toBeLessThan(recordsBetween({}, endBefore));
    // Its first snapshot is at the end of that read; it may have taken another already, past the
    // checkpoint records it appended (the interval is 100 ms), but never past the log's end.
    const endNow = await topicEnd(kafka, 'ledger', namespace);
    const snapshotAt = status.snapshots.lastOffsets ?? {};
    expect(Object.keys(snapshotAt).sort()).toEqual(Object.keys(endBefore).sort());
    for (const [partition, at] of Object.entries(snapshotAt)) {
      expect({ partition, past: BigInt(at) >= BigInt(endBefore[partition] ?? '0') && BigInt(at) <= BigInt(endNow[partition] ?? '0') }).toEqual({ partition, past: true });
    }

    // Every reservation answered is there, held by its holder.
    for (const key of reserved) expect({ key, ...(await shown(key)) }).toEqual({ key, status: 200, holder: 'worker-a' });
    // One in flight at the kill either reached the log (another holder asking now is told it is
    // pending) or did not (the other holder gets it). The blocked flush held at least one that
    // reached the log and was never answered.
    let reachedLog = 0;
    for (const key of keys.filter((k) => !reserved.includes(k))) {
      const again = await reserve(key, 'worker-b');
      expect({ key, status: again.status }).toEqual({ key, status: 200 });
      expect(['reserved', 'pending']).toContain(again.answer);
      expect({ key, ...(await shown(key)) }).toEqual({ key, status: 200, holder: again.answer === 'pending' ? 'worker-a' : 'worker-b' });
      if (again.answer === 'pending') reachedLog += 1;
    }
    expect(reachedLog).toBeGreaterThan(0);

    const replay = startNode(path.join(ROOT, 'services/idempotency-ledger/dist/cli/replay.js'), ['--compare', '--schema', 'ledger_snapshot_replay'], { ...serviceKafkaEnv('idempotency-ledger'), ...env });
    expect(await replay.exited()).toBe(0);
    expect(JSON.parse(replay.output().trim().split('\n').at(-1) ?? '{}')).toMatchObject({ equal: true });
    const after = (await (await fetch(`${baseUrl}/v1/ledger/status`)).json()) as { phase: string; keys: number; unappliedRecords: number };
    expect(after).toMatchObject({ phase: 'running', keys: KEYS, unappliedRecords: 0 });
  }, 180_000);
});
