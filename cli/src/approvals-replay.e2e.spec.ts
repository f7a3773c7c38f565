import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApprovalDecidedV1, ApprovalExpiredV1, createEvent, signEvent, topicName, trustedEntryOf } from '@gatehouse/contracts';
import { approvalProjection } from '@gatehouse/approval-projection';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';

const APPROVAL_PROJECTION = approvalProjection(TEST_KEYRING);
import { EventProducer, Partitioners } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { compareProjections, openServiceDatabase, rebuildProjection } from '@gatehouse/service-runtime';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import { testCancel, testRequest } from '@gatehouse/approvals/testing';
import { runCli } from './testing/run-cli.js';

// The projection is rebuilt from the log alone: what the service wrote and what a replay writes
// into a fresh schema must be the same rows, and `gatehouse approvals replay --compare` says so.
/** An approval id no record holds: a row planted in the live projection. */
const FORGED_ID = `appr_${'f'.repeat(64)}`;
const reviewer = { id: 'user:alice', role: 'approver', kind: 'human' as const };

let kafka: Kafka;
let database: TestDatabase;

beforeAll(async () => {
  kafka = testKafka('approvals-replay-e2e');
  database = await createTestDatabase();
});

afterAll(async () => {
  await database.drop();
});

const run = runCli;

describe('gatehouse approvals replay', () => {
  it('rebuilds the projection from offset 0 into a fresh schema and finds it equal to the live one, row for row', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    const meta = (subject: string) => ({ source: 'test', tenant: 'acme', subject });
    try {
      // Every lifecycle: approved, edited, denied, expired, cancelled, a late and a conflicting decision, one left pending.
      const reqs = Array.from({ length: 6 }, (_, i) => testRequest({ deadlineMs: i === 3 ? 1 : 60_000 }));
      for (const r of reqs) await producer.publish('approvals', r.event);
      const [approved, edited, denied, expired, cancelled] = reqs.map((r) => r.approvalId) as [string, string, string, string, string];
      await producer.publish('approvals', signEvent(createEvent(ApprovalDecidedV1, meta(approved), { approvalId: approved, verdict: 'approve', reviewer }), TEST_KEYS.approval));
      await producer.publish('approvals', signEvent(createEvent(ApprovalDecidedV1, meta(approved), { approvalId: approved, verdict: 'deny', reviewer: { ...reviewer, id: 'user:bob' } }), TEST_KEYS.approval));
      await producer.publish('approvals', signEvent(createEvent(ApprovalDecidedV1, meta(edited), { approvalId: edited, verdict: 'approve-with-edits', reviewer, editedArguments: { orderId: 'o-1', amount: 1 } }), TEST_KEYS.approval));
      await producer.publish('approvals', signEvent(createEvent(ApprovalDecidedV1, meta(denied), { approvalId: denied, verdict: 'deny', reviewer, comment: 'no' }), TEST_KEYS.approval));
      await new Promise((r) => setTimeout(r, 20));
      await producer.publish('approvals', signEvent(createEvent(ApprovalExpiredV1, meta(expired), { approvalId: expired, deadline: reqs[3]?.event.payload.deadline ?? '' }), TEST_KEYS.approval));
      // Withdrawn by the requesting agent itself: its claim, signed with its key.
      await producer.publish('approvals', testCancel(cancelled));
    } finally {
      await producer.close();
    }
    // A record no contract accepts is parked with its reason, not dropped.
    const raw = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await raw.connect();
    await raw.send({ topic: topicName('approvals', namespace), messages: [{ key: 'x', value: '{"type":"ApprovalDecided","version":1}' }] });
    await raw.disconnect();

    // The "live" projection, as the service would have written it.
    const live = await rebuildProjection(APPROVAL_PROJECTION, { kafka, namespace, database: { url: database.url }, schema: 'approval' });
    expect(live).toMatchObject({ records: 12, unapplied: 1 });

    // The replay trusts what the service trusts: its approval key and the agents' claim keys.
    const env = { GATEHOUSE_TRUSTED_KEYS: JSON.stringify([trustedEntryOf(TEST_KEYS.approval), trustedEntryOf(TEST_AGENT_KEY)]), GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_KAFKA_BROKERS: process.env['GATEHOUSE_KAFKA_BROKERS'] ?? '127.0.0.1:9092' };
    const equal = await run(['approvals', 'replay', '--compare', '--schema', 'approval_replay'], env);
    expect(equal.stderr).toBe('');
    expect(equal.status).toBe(0);
    const report = JSON.parse(equal.stdout) as { equal: boolean; rows: Record<string, number>; summary: string };
    expect(report).toMatchObject({ equal: true, rows: { approvals: 6, unapplied_records: 1 } });

    // Drift in the live projection is found, by table and id.
    const sql = await openServiceDatabase({ url: database.url, schema: 'approval', migrations: APPROVAL_PROJECTION.migrations });
    try {
      const statuses: { status: string }[] = await sql.query('SELECT status FROM approval.approvals ORDER BY status');
      expect(statuses.map((s) => s.status)).toEqual(['approved', 'approved-with-edits', 'cancelled', 'denied', 'expired', 'pending']);
      await sql.query(`UPDATE approval.approvals SET comment = 'tampered' WHERE status = 'denied'`);
      const drifted = await run(['approvals', 'replay', '--compare', '--schema', 'approval_replay'], env);
      expect(drifted.status).toBe(1);
      expect((JSON.parse(drifted.stdout) as { differences: unknown[] }).differences).toEqual([{ table: 'approvals', id: expect.stringMatching(/^appr_/), issue: 'different' }]);

      // Drop the projection; a replay rebuilds it identical to a fresh one.
      await sql.query('TRUNCATE approval.approvals, approval.unapplied_records');
      await sql.query('DELETE FROM approval.projection_offsets');
      await rebuildProjection(APPROVAL_PROJECTION, { kafka, namespace, database: { url: database.url }, schema: 'approval' });
      const comparison = await waitFor(async () => {
        const c = await compareProjections(APPROVAL_PROJECTION, sql.manager, { liveSchema: 'approval', rebuiltSchema: 'approval_replay', namespace });
        return c.equal ? c : undefined;
      });
      expect(comparison.differences).toEqual([]);
    } finally {
      await sql.destroy();
    }

    // Misuse is a typed error, and the live schema is never the target.
    const refused = await run(['approvals', 'replay', '--schema', 'approval'], env);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('APPROVAL');
  });

  it('after retention deleted the oldest records, the rows only they built are counted as aged out, every row the replay rebuilt still equals the live one, and a planted row is still caught', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    const reqs = Array.from({ length: 9 }, () => testRequest({ deadlineMs: 60_000 }));
    try {
      for (const r of reqs) await producer.publish('approvals', r.event);
      for (const r of reqs) {
        await producer.publish('approvals', signEvent(createEvent(ApprovalDecidedV1, { source: 'test', tenant: 'acme', subject: r.approvalId, causationId: r.event.id }, { approvalId: r.approvalId, verdict: 'deny', reviewer }), TEST_KEYS.approval));
      }
    } finally {
      await producer.close();
    }
    const topic = topicName('approvals', namespace);
    // A database of its own: the service's schema name is fixed.
    const aged = await createTestDatabase();
    try {
    await rebuildProjection(APPROVAL_PROJECTION, { kafka, namespace, database: { url: aged.url }, schema: 'approval' });
    // What retention does to the oldest segment, done now: the broker deletes one partition's records.
    const admin = kafka.admin();
    await admin.connect();
    let deleted: { partition: number; high: string } | undefined;
    try {
      const offsets = await admin.fetchTopicOffsets(topic);
      deleted = [...offsets].sort((a, b) => Number(b.high) - Number(a.high))[0];
      if (!deleted || deleted.high === '0') throw new Error('no records to delete');
      await admin.deleteTopicRecords({ topic, partitions: [{ partition: deleted.partition, offset: deleted.high }] });
    } finally {
      await admin.disconnect();
    }
    const env = {
      GATEHOUSE_TRUSTED_KEYS: JSON.stringify([trustedEntryOf(TEST_KEYS.approval), trustedEntryOf(TEST_AGENT_KEY)]),
      GATEHOUSE_DATABASE_URL: aged.url,
      GATEHOUSE_TOPIC_NAMESPACE: namespace,
      GATEHOUSE_KAFKA_BROKERS: process.env['GATEHOUSE_KAFKA_BROKERS'] ?? '127.0.0.1:9092',
    };
    const result = await run(['approvals', 'replay', '--compare', '--schema', 'approval_replay'], env);
    expect(result.stderr).toBe('');
    const report = JSON.parse(result.stdout) as { equal: boolean; agedOut: number; rows: Record<string, number>; differences: unknown[] };
    // Each approval's records share a partition: the deleted partition's approvals are aged out, the rest rebuilt equal.
    expect(report.rows['approvals']).toBe(9);
    expect(report.agedOut).toBeGreaterThan(0);
    expect(report.agedOut).toBe(Number(deleted.high) / 2);
    expect(report).toMatchObject({ equal: true, differences: [] });
    expect(result.status).toBe(0);

    // A row no record built is still caught on the trimmed partition: its position claims a record
    // the partition still holds (at its new start), and the replay built no such row.
    const forged = await openServiceDatabase({ url: aged.url, schema: 'approval', migrations: APPROVAL_PROJECTION.migrations });
    try {
      await forged.query(
        `INSERT INTO approval.approvals
           SELECT (jsonb_populate_record(NULL::approval.approvals, to_jsonb(a) || jsonb_build_object('approval_id', $3::text, 'last_offset', $2::bigint))).*
             FROM approval.approvals a WHERE a.partition = $1 LIMIT 1`,
        [deleted.partition, deleted.high, FORGED_ID],
      );
    } finally {
      await forged.destroy();
    }
    const caught = await run(['approvals', 'replay', '--compare', '--schema', 'approval_replay'], env);
    const caughtReport = JSON.parse(caught.stdout) as { equal: boolean; agedOut: number; differences: { table: string; id: string; issue: string }[] };
    expect(caughtReport.equal).toBe(false);
    expect(caughtReport.agedOut).toBe(Number(deleted.high) / 2);
    expect(caughtReport.differences).toEqual([expect.objectContaining({ table: 'approvals', id: FORGED_ID, issue: 'missing-in-rebuilt' })]);
    expect(caught.status).toBe(1);
    } finally {
      await aged.drop();
    }
  });
});
