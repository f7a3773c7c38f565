// Issue 17, on the real broker and PostgreSQL: the approval service starts from the snapshot of
// its fold that it stored beside its projection, reading only what was logged after it; a
// snapshot it must not trust (another fold version's, unreadable, ahead of the projection's rows)
// is not loaded and the service replays from offset 0 instead, saying why. Either way the state is
// the fold of the whole log.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApprovalEvent, foldApprovals } from '@gatehouse/approvals';
import { approvalProjection } from '@gatehouse/approval-projection';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { trustedEntryOf } from '@gatehouse/contracts';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { openServiceDatabase, runReplayCli, SERVICES } from '@gatehouse/service-runtime';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import { type ApprovalApp, bearer, startApprovalApp, testReviewer } from './testing/approval-app.js';
import { testRequest } from './testing/requests.js';

const PROJECTION = approvalProjection(TEST_KEYRING);
const alice = testReviewer('user:alice');
let kafka: Kafka;
let database: TestDatabase;
const running: ApprovalApp[] = [];
const producers: EventProducer[] = [];
let schemas = 0;

beforeAll(async () => {
  kafka = testKafka('approval-snapshot-int');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
  await Promise.all(producers.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await database.drop();
});

async function world() {
  schemas += 1;
  const namespace = await provisionedNamespace(kafka);
  const producer = await EventProducer.connect(kafka, { namespace });
  producers.push(producer);
  return { namespace, schema: `approval_snap${schemas}`, producer };
}

async function boot(w: { namespace: string; schema: string }): Promise<ApprovalApp> {
  const app = await startApprovalApp({ namespace: w.namespace, schema: w.schema, databaseUrl: database.url, reviewers: [alice] });
  running.push(app);
  return app;
}

async function stop(app: ApprovalApp): Promise<void> {
  running.splice(running.indexOf(app), 1);
  await app.close();
}

/** The fold of the whole log, as the snapshot codec writes it. */
async function wholeLog(namespace: string): Promise<{ encoded: string; records: number }> {
  const records: { event: ApprovalEvent; logTime: number }[] = [];
  await replayTopic(kafka, 'approvals', { namespace, onRecord: (r) => void records.push({ event: r.event, logTime: r.logTime.getTime() }) });
  return { encoded: PROJECTION.fold.snapshot?.encode(foldApprovals(records, TEST_KEYRING)) ?? '', records: records.length };
}

/** A few requests, two of them decided, through a running service. */
async function history(w: { producer: EventProducer }, app: ApprovalApp): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    const made = testRequest();
    await w.producer.publish('approvals', made.event);
    ids.push(made.approvalId);
  }
  await waitFor(async () => ((await app.get<{ items: unknown[] }>('/v1/approvals?status=pending', bearer(alice))).body.items?.length === 4 ? true : undefined), { what: 'the requests projected' });
  for (const id of ids.slice(0, 2)) expect((await app.post(`/v1/approvals/${id}/decision`, { verdict: 'approve' }, bearer(alice))).status).toBe(200);
  return ids;
}

async function withSql<R>(schema: string, work: (query: (sql: string) => Promise<unknown>) => Promise<R>): Promise<R> {
  const sql = await openServiceDatabase({ url: database.url, schema, migrations: PROJECTION.migrations });
  try {
    return await work((text) => sql.query(text));
  } finally {
    await sql.destroy();
  }
}

describe('the approval service starts from its snapshot', () => {
  it('reads only what was logged after the snapshot it stored at stop, and holds the state of the whole log', async () => {
    const w = await world();
    const first = await boot(w);
    const ids = await history(w, first);
    await stop(first);
    const stored = await withSql(w.schema, (query) => query(`SELECT fold, offsets, bytes FROM ${w.schema}.fold_snapshots`));
    expect(stored).toEqual([expect.objectContaining({ fold: 'approvals@2' })]);

    // One more request while the service is down: the restart reads it, and only it.
    const late = testRequest();
    await w.producer.publish('approvals', late.event);
    const second = await boot(w);
    expect(second.engine.status().start).toEqual({ from: 'snapshot', records: 1 });
    expect(PROJECTION.fold.snapshot?.encode(second.engine.state)).toBe((await wholeLog(w.namespace)).encoded);
    expect((await second.get<{ status: string }>(`/v1/approvals/${ids[0] ?? ''}`, bearer(alice))).body).toMatchObject({ status: 'approved' });
    expect((await second.get<{ status: string }>(`/v1/approvals/${late.approvalId}`, bearer(alice))).body).toMatchObject({ status: 'pending' });
    // A decision after the start from the snapshot is taken like any other.
    expect((await second.post(`/v1/approvals/${ids[2] ?? ''}/decision`, { verdict: 'deny' }, bearer(alice))).status).toBe(200);
    expect((await second.post(`/v1/approvals/${ids[0] ?? ''}/decision`, { verdict: 'deny' }, bearer(alice))).status).toBe(409);
  });

  it.each([
    ['other-version', (schema: string) => `UPDATE ${schema}.fold_snapshots SET fold = 'approvals@0'`],
    ['unreadable', (schema: string) => `UPDATE ${schema}.fold_snapshots SET state = '{"format":1,"maps":{"approvals":"x"}}'`],
    ['ahead-of-projection', (schema: string) => `UPDATE ${schema}.projection_offsets SET next_offset = 0`],
  ] as const)('does not load a snapshot that is %s: replays from offset 0, says why, and holds the state of the whole log', async (rejected, damage) => {
    const w = await world();
    const first = await boot(w);
    await history(w, first);
    await stop(first);
    await withSql(w.schema, (query) => query(damage(w.schema)));
    const second = await boot(w);
    const whole = await wholeLog(w.namespace);
    expect(second.engine.status().start).toEqual({ from: 'offset-0', records: whole.records, rejected });
    expect(PROJECTION.fold.snapshot?.encode(second.engine.state)).toBe(whole.encoded);
    // The replay's end replaced the snapshot it could not use: the next start begins there.
    await stop(second);
    const third = await boot(w);
    expect(third.engine.status().start).toEqual({ from: 'snapshot', records: 0 });
  });
});

describe('settled approvals leave the fold after their retention', () => {
  it('frees them from memory and from the snapshot while their rows stay, and a copy of an old request is never listed again', async () => {
    const w = await world();
    const app = await startApprovalApp({ namespace: w.namespace, schema: w.schema, databaseUrl: database.url, reviewers: [alice], retainMs: 1_000 });
    running.push(app);
    const made = [testRequest(), testRequest(), testRequest()];
    for (const m of made) await w.producer.publish('approvals', m.event);
    await waitFor(async () => ((await app.get<{ items: unknown[] }>('/v1/approvals?status=pending', bearer(alice))).body.items?.length === 3 ? true : undefined), { what: 'the requests projected' });
    for (const m of made) expect((await app.post(`/v1/approvals/${m.approvalId}/decision`, { verdict: 'deny' }, bearer(alice))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    // Enough later traffic for the engine to sweep (every 5,000 records), on every partition.
    const later = Array.from({ length: 5_000 }, () => testRequest().event);
    for (let i = 0; i < later.length; i += 500) await w.producer.publishMany('approvals', later.slice(i, i + 500));
    await waitFor(async () => ((await app.get<{ approvals: number }>('/v1/approvals-status')).body.approvals === 5_000 ? true : undefined), { what: 'the settled approvals swept', timeoutMs: 60_000 });
    expect(made.every((m) => app.engine.approval(m.approvalId) === undefined)).toBe(true);
    // Their rows stay, as decided.
    for (const m of made) expect((await app.get<{ status: string }>(`/v1/approvals/${m.approvalId}`, bearer(alice))).body).toMatchObject({ status: 'denied' });

    // A copy of an old request, appended again, is a new lifecycle in the fold; its row stays the first one.
    const copied = made[0];
    if (!copied) throw new Error('no request');
    await w.producer.publish('approvals', copied.event);
    await waitFor(() => (app.engine.approval(copied.approvalId) ? true : undefined), { what: 'the copy applied' });
    await new Promise((r) => setTimeout(r, 500));
    expect((await app.get<{ status: string }>(`/v1/approvals/${copied.approvalId}`, bearer(alice))).body).toMatchObject({ status: 'denied' });
    const pending = (await app.get<{ items: { approvalId: string }[] }>('/v1/approvals?status=pending&limit=200', bearer(alice))).body.items.map((i) => i.approvalId);
    expect(pending).not.toContain(copied.approvalId);

    // The snapshot written at stop holds only what the fold still holds.
    await stop(app);
    const [row] = (await withSql(w.schema, (query) => query(`SELECT state FROM ${w.schema}.fold_snapshots`))) as { state: string }[];
    for (const m of made.slice(1)) expect(row?.state.includes(m.approvalId)).toBe(false);
  }, 120_000);
});

describe('replay --compare checks the stored snapshot', () => {
  // The snapshot is the state a restart begins from: the operator's compare folds the log up to its
  // offsets and requires that state, so a snapshot edited in the database is found before a restart trusts it.
  it('finds the stored snapshot equal to the fold of the log up to its offsets, and a snapshot with an approval taken out different', async () => {
    // A database of its own: the command works on the service's fixed schema.
    const own = await createTestDatabase();
    try {
      const w = await world();
      const app = await startApprovalApp({ namespace: w.namespace, schema: SERVICES['approval'].schema, databaseUrl: own.url, reviewers: [alice] });
      running.push(app);
      await history(w, app);
      await stop(app);
      const env = {
        ...process.env,
        GATEHOUSE_TRUSTED_KEYS: JSON.stringify([trustedEntryOf(TEST_KEYS.approval), trustedEntryOf(TEST_AGENT_KEY)]),
        GATEHOUSE_DATABASE_URL: own.url,
        GATEHOUSE_TOPIC_NAMESPACE: w.namespace,
      };
      const compare = async () => {
        const lines: Record<string, unknown>[] = [];
        const status = await runReplayCli(SERVICES['approval'], PROJECTION, { argv: ['--compare'], env, print: (line) => void lines.push(line) });
        return { status, report: lines[0] as { equal: boolean; snapshot: { status: string; records?: number }; differences: unknown[] } };
      };
      const before = await compare();
      expect(before).toMatchObject({ status: 0, report: { equal: true, snapshot: { status: 'equal', records: 6 }, differences: [] } });

      // Someone with the database takes a decided approval out of the snapshot: a restart would take a new request for it as new.
      const sql = await openServiceDatabase({ url: own.url, schema: 'approval', migrations: PROJECTION.migrations });
      try {
        const [row] = (await sql.query(`SELECT state FROM approval.fold_snapshots`)) as { state: string }[];
        const state = JSON.parse(row?.state ?? '{}') as { maps: { approvals: [string, unknown][] } };
        state.maps.approvals.shift();
        await sql.query(`UPDATE approval.fold_snapshots SET state = $1`, [JSON.stringify(state)]);
      } finally {
        await sql.destroy();
      }
      const after = await compare();
      expect(after).toMatchObject({ status: 1, report: { equal: false, snapshot: { status: 'different' }, differences: [] } });
    } finally {
      await own.drop();
    }
  }, 60_000);
});
