import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { APPROVAL_MIGRATIONS } from '@gatehouse/approval-projection';
import { applyApprovalEvent, createApprovalsState } from '@gatehouse/approvals';
import { testRequest } from '@gatehouse/approvals/testing';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { DATA_SOURCE, openServiceDatabase } from '@gatehouse/service-runtime';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { type CommittedChange } from '../engine/approval-engine.js';
import { type ApprovalApp, startApprovalApp, testReviewer } from '../testing/approval-app.js';
import { PostgresDeliveryLog } from './delivery-log.js';
import { ReviewerNotifier } from './reviewer-notifier.js';
import { type ReviewerWebhooks } from './webhook-config.js';
import { WebhookDeliveries1768000000000 } from './webhook-deliveries.migration.js';
import { verifySignature } from './webhook-signature.js';

const MIGRATIONS = [...APPROVAL_MIGRATIONS, WebhookDeliveries1768000000000];
const SECRET = Buffer.from('w'.repeat(48));
const alice = testReviewer('user:alice');

let kafka: Kafka;
let database: TestDatabase;
const apps: ApprovalApp[] = [];
const closing: (() => Promise<unknown>)[] = [];

interface Received {
  readonly eventId: string;
  readonly type: string;
  readonly approvalId: string;
  readonly answered: number;
  readonly signature: string;
}

/** A receiver on loopback: checks each signature, refuses the first delivery of every event (503), takes the retry. */
async function receiver(): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const seen = new Set<string>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const signature = verifySignature(SECRET, req.headers['x-gatehouse-signature'] as string | undefined, body, Date.now());
      const parsed = JSON.parse(body) as { eventId: string; type: string; approvalId: string };
      const answered = signature !== 'ok' ? 401 : seen.has(parsed.eventId) ? 200 : 503;
      seen.add(parsed.eventId);
      received.push({ eventId: parsed.eventId, type: parsed.type, approvalId: parsed.approvalId, answered, signature });
      res.writeHead(answered).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closing.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, received };
}

beforeAll(async () => {
  kafka = testKafka('approval-webhooks-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
  await Promise.all(closing.splice(0).map((close) => close()));
});

afterAll(async () => {
  await database.drop();
});

describe('the delivery table', () => {
  it('lets exactly one of two replicas claim a delivery, and never reopens one that ended', async () => {
    const schema = 'webhook_claims';
    const first: DataSource = await openServiceDatabase({ url: database.url, schema, migrations: MIGRATIONS });
    const second: DataSource = await openServiceDatabase({ url: database.url, schema, migrations: MIGRATIONS });
    closing.push(() => first.destroy(), () => second.destroy());
    const [a, b] = [new PostgresDeliveryLog(first, schema), new PostgresDeliveryLog(second, schema)];
    const key = { approvalId: `appr_${'c'.repeat(64)}`, eventId: 'e-1', target: 'acme-json' };
    const claims = await Promise.all([a.claim(key, { kind: 'requested', tenant: 'acme' }), b.claim(key, { kind: 'requested', tenant: 'acme' })]);
    expect(claims.sort()).toEqual([false, true]);
    await a.attempted(key, 1, { kind: 'retryable', status: 503 });
    await a.attempted(key, 2, { kind: 'delivered', status: 200 }, 'sent');
    await b.attempted(key, 3, 'stopped', 'failed');
    const rows: Record<string, unknown>[] = await first.query(`SELECT status, attempts, last_status, last_error, done_at IS NOT NULL AS done FROM ${schema}.webhook_deliveries`);
    expect(rows).toEqual([{ status: 'sent', attempts: 2, last_status: 200, last_error: null, done: true }]);
    // Another event to the same target, or the same event to another target, is another delivery.
    expect(await b.claim({ ...key, eventId: 'e-2' }, { kind: 'decided', tenant: 'acme' })).toBe(true);
    expect(await b.claim({ ...key, target: 'acme-slack' }, { kind: 'requested', tenant: 'acme' })).toBe(true);
  });

  it('delivers an event once when two replicas, each with its own connection, are told of it', async () => {
    const schema = 'webhook_replicas';
    // One after the other: the first migrates the fresh schema.
    const one: DataSource = await openServiceDatabase({ url: database.url, schema, migrations: MIGRATIONS });
    const two: DataSource = await openServiceDatabase({ url: database.url, schema, migrations: MIGRATIONS });
    closing.push(() => one.destroy(), () => two.destroy());
    const hook = await receiver();
    const webhooks: ReviewerWebhooks = {
      targets: [{ id: 'acme-json', tenant: 'acme', url: new URL(hook.url), format: 'json', secret: SECRET }],
      inboxUrl: 'https://approvals.example.com',
    };
    const retry = { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 100, totalMs: 5_000, timeoutMs: 2_000 };
    const replicas = [one, two].map((c) => new ReviewerNotifier({ webhooks, deliveries: new PostgresDeliveryLog(c, schema), retry }));
    // The same committed change, as two replicas (after a rebalance, or a restart that reads it again) would each see it.
    const state = createApprovalsState(TEST_KEYRING);
    const made = testRequest();
    const verdict = applyApprovalEvent(state, made.event, Date.now());
    const approval = state.approvals.get(made.approvalId);
    if (!approval) throw new Error('the test request was not accepted');
    const record = { topic: 'gatehouse.approvals.v1', partition: 0, offset: '0', logTime: new Date(), key: made.approvalId, event: made.event };
    const change: CommittedChange = { record, verdict, approval };
    for (const replica of replicas) replica.notice(change);
    await waitFor(async () => (replicas.every((r) => r.counts().pending === 0) ? true : undefined), { what: 'both replicas done' });
    await Promise.all(replicas.map((r) => r.stop()));
    // One replica claimed it and delivered it (refused once, then taken); the other sent nothing.
    expect(hook.received.map((r) => `${r.type}:${r.answered}`)).toEqual(['approval.requested:503', 'approval.requested:200']);
    expect(replicas.map((r) => r.counts().sent).sort()).toEqual([0, 1]);
    const rows: unknown[] = await one.query(`SELECT approval_id, status, attempts, last_status FROM ${schema}.webhook_deliveries`);
    expect(rows).toEqual([{ approval_id: made.approvalId, status: 'sent', attempts: 2, last_status: 200 }]);
  });
});

describe('webhooks of the running service', () => {
  it("tells the tenant's receiver of a request and its expiry once each, retried after a refusal; a start that replays the history sends nothing", async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    closing.push(() => producer.close());
    const hook = await receiver();
    const webhooks: ReviewerWebhooks = {
      targets: [
        { id: 'acme-json', tenant: 'acme', url: new URL(hook.url), format: 'json', secret: SECRET },
        { id: 'globex-json', tenant: 'globex', url: new URL(`${hook.url}/globex`), format: 'json', secret: SECRET },
      ],
      inboxUrl: 'https://approvals.example.com',
    };
    const boot = async (schema: string) => {
      const app = await startApprovalApp({ namespace, databaseUrl: database.url, schema, reviewers: [alice], webhooks, expirySweepMs: 200 });
      apps.push(app);
      return app;
    };
    const app = await boot('webhooks_live');
    const made = testRequest({ deadlineMs: 3_000 });
    await producer.publish('approvals', made.event);
    const accepted = () => hook.received.filter((r) => r.answered === 200);
    await waitFor(async () => (accepted().length === 2 ? true : undefined), { what: 'the request and its expiry delivered', timeoutMs: 30_000 });
    expect(accepted().map((r) => [r.type, r.approvalId])).toEqual([
      ['approval.requested', made.approvalId],
      ['approval.expired', made.approvalId],
    ]);
    // Every delivery signed; each event refused once, then taken; nothing for the other tenant's target.
    expect(hook.received.every((r) => r.signature === 'ok')).toBe(true);
    expect(hook.received.map((r) => `${r.type}:${r.answered}`)).toEqual(['approval.requested:503', 'approval.requested:200', 'approval.expired:503', 'approval.expired:200']);
    // Recorded once the service has read the receiver's answer: a moment after the receiver saw it.
    const counts = await waitFor(
      async () => {
        const { webhooks } = (await app.get<{ webhooks: { pending: number } }>('/v1/approvals-status')).body;
        return webhooks.pending === 0 ? webhooks : undefined;
      },
      { what: 'the deliveries recorded' },
    );
    expect(counts).toEqual({ sent: 2, failed: 0, pending: 0 });
    const rows: unknown[] = await app.app.get<DataSource>(DATA_SOURCE).query('SELECT kind, target, status, attempts, last_status FROM webhooks_live.webhook_deliveries ORDER BY first_at');
    expect(rows).toEqual([
      { kind: 'requested', target: 'acme-json', status: 'sent', attempts: 2, last_status: 200 },
      { kind: 'expired', target: 'acme-json', status: 'sent', attempts: 2, last_status: 200 },
    ]);
    await app.close();
    apps.splice(apps.indexOf(app), 1);

    // A fresh schema: the start replays the whole topic, with an empty delivery table; only a live event is sent.
    await boot('webhooks_replayed');
    const next = testRequest({ deadlineMs: 600_000 });
    await producer.publish('approvals', next.event);
    await waitFor(async () => (accepted().length === 3 ? true : undefined), { what: 'the live request delivered', timeoutMs: 30_000 });
    expect(accepted().map((r) => r.approvalId)).toEqual([made.approvalId, made.approvalId, next.approvalId]);
    expect(hook.received).toHaveLength(6);
  });
});
