import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { type ApprovalEvent, foldApprovals } from '@gatehouse/approvals';
import { ApprovalDecidedV1, createEvent, type DecisionRecorded, isDecisionRecorded, signEvent, topicName } from '@gatehouse/contracts';
import { ConfigResourceTypes, EventProducer, provisionTopics, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { compareProjections, openServiceDatabase, rebuildProjection } from '@gatehouse/service-runtime';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { approvalProjection } from '@gatehouse/approval-projection';
import { TEST_KEYRING, testSigningKey } from '@gatehouse/contracts/testing';

const APPROVAL_PROJECTION = approvalProjection(TEST_KEYRING);
import { type Kafka } from 'kafkajs';
import pg from 'pg';
import { type ApprovalApp, type ApprovalAppOptions, bearer, startApprovalApp, testReviewer } from './testing/approval-app.js';
import { testCancel } from '@gatehouse/approvals/testing';
import { testRequest, type TestRequestOptions } from './testing/requests.js';

let kafka: Kafka;
let database: TestDatabase;
const running: ApprovalApp[] = [];
const producers: EventProducer[] = [];
let schemaCount = 0;

const alice = testReviewer('user:alice');
const bob = testReviewer('user:bob');
const carol = testReviewer('user:carol', { tenants: ['globex'] });
const dave = testReviewer('user:dave', { connectors: ['mail.send'] });
// The agent that asks is also configured as a reviewer: it must still never decide its own request.
const agent = testReviewer('agent:billing', { role: 'agent' });
const frank = testReviewer('user:frank');
const REVIEWERS = [alice, bob, carol, dave, agent, frank];

beforeAll(async () => {
  kafka = testKafka('approval-service-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
  await Promise.all(producers.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await database.drop();
});

interface World {
  readonly namespace: string;
  readonly schema: string;
  readonly producer: EventProducer;
}

async function world(): Promise<World> {
  schemaCount += 1;
  const namespace = await provisionedNamespace(kafka);
  const producer = await EventProducer.connect(kafka, { namespace });
  producers.push(producer);
  return { namespace, schema: `approval_t${schemaCount}`, producer };
}

async function boot(w: World, options: Partial<ApprovalAppOptions> = {}): Promise<ApprovalApp> {
  const app = await startApprovalApp({ namespace: w.namespace, schema: w.schema, databaseUrl: database.url, reviewers: REVIEWERS, ...options });
  running.push(app);
  return app;
}

/** Appends a request as a guard would, and waits until the app's projection lists it. */
async function request(w: World, app: ApprovalApp, options: TestRequestOptions = {}) {
  const made = testRequest(options);
  await w.producer.publish('approvals', made.event);
  await waitFor(async () => ((await app.get(`/v1/approvals/${made.approvalId}`, bearer(alice))).status === 200 ? true : undefined), { what: 'the request projected' });
  return made;
}

const decide = (app: ApprovalApp, approvalId: string, reviewer: { key: string }, body: unknown) => app.post(`/v1/approvals/${approvalId}/decision`, body, bearer(reviewer));

describe('reviewer REST API', () => {
  it('lists a pending request, shows it with its history, and approves it once', async () => {
    const w = await world();
    const app = await boot(w);
    const { approvalId } = await request(w, app, { toolDescription: 'Refunds an order', dryRunPreview: { wouldRefund: 42, currency: 'EUR' } });

    const listed = await app.get<{ items: { approvalId: string; status: string }[] }>('/v1/approvals?status=pending', bearer(alice));
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((i) => i.approvalId)).toEqual([approvalId]);
    const one = await app.get(`/v1/approvals/${approvalId}`, bearer(alice));
    expect(one.body).toMatchObject({ status: 'pending', tenant: 'acme', connectorId: 'payments.refund', toolDescription: 'Refunds an order', dryRunPreview: { wouldRefund: 42, currency: 'EUR' } });
    expect(one.body['history']).toEqual([expect.objectContaining({ type: 'ApprovalRequested', verdict: { kind: 'accepted' } })]);

    const approved = await decide(app, approvalId, alice, { verdict: 'approve', comment: 'looks right' });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ approvalId, status: 'approved', reviewer: { id: 'user:alice', role: 'approver', kind: 'human' } });
    // The answer waited for the projection: the next read shows the decision.
    const after = await app.get(`/v1/approvals/${approvalId}`, bearer(bob));
    expect(after.body).toMatchObject({ status: 'approved', settledBy: { id: 'user:alice' }, comment: 'looks right' });

    const again = await decide(app, approvalId, bob, { verdict: 'deny' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'APPROVAL.ALREADY_DECIDED' });
  });

  it('answers 410 once the service expired a request past its deadline', async () => {
    const w = await world();
    const app = await boot(w, { expirySweepMs: 100 });
    const { approvalId } = await request(w, app, { deadlineMs: 800 });
    await waitFor(async () => ((await app.get<{ status: string }>(`/v1/approvals/${approvalId}`, bearer(alice))).body.status === 'expired' ? true : undefined), {
      what: 'the expiry',
    });
    const late = await decide(app, approvalId, alice, { verdict: 'approve' });
    expect(late.status).toBe(410);
    expect(late.body).toMatchObject({ code: 'APPROVAL.EXPIRED' });
    const history = (await app.get<{ history: { type: string }[] }>(`/v1/approvals/${approvalId}`, bearer(alice))).body.history;
    expect(history.map((h) => h.type)).toEqual(['ApprovalRequested', 'ApprovalExpired']);
  });

  it('answers 409 when the requester withdrew the request', async () => {
    const w = await world();
    const app = await boot(w);
    const { approvalId, event } = await request(w, app);
    await w.producer.publish('approvals', testCancel(approvalId, { by: event.payload.requester }));
    await waitFor(async () => ((await app.get<{ status: string }>(`/v1/approvals/${approvalId}`, bearer(alice))).body.status === 'cancelled' ? true : undefined), { what: 'the cancellation' });
    expect((await decide(app, approvalId, alice, { verdict: 'approve' })).body).toMatchObject({ code: 'APPROVAL.CANCELLED' });
  });

  it('re-validates edited arguments against the tool schema: 422 with every failing keyword, nothing appended', async () => {
    const w = await world();
    const app = await boot(w);
    const { approvalId } = await request(w, app);
    const bad = await decide(app, approvalId, alice, { verdict: 'approve-with-edits', editedArguments: { amount: 9000, note: 'x' } });
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ code: 'APPROVAL.EDITS_INVALID' });
    const problems = (bad.body['details'] as { problems: { path: string; keyword: string }[] }).problems;
    expect(problems.map((p) => `${p.path}:${p.keyword}`).sort()).toEqual(['/:additionalProperties', '/:required', '/amount:maximum']);
    expect(bad.text).not.toContain('9000');
    const history = (await app.get<{ history: unknown[] }>(`/v1/approvals/${approvalId}`, bearer(alice))).body.history;
    expect(history).toHaveLength(1);

    const good = await decide(app, approvalId, alice, { verdict: 'approve-with-edits', editedArguments: { orderId: 'o-1', amount: 10 } });
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({ status: 'approved-with-edits', editedArguments: { orderId: 'o-1', amount: 10 } });
  });

  it('refuses anonymous, unknown, out-of-scope and self approvals, and unknown ids', async () => {
    const w = await world();
    const app = await boot(w);
    const { approvalId } = await request(w, app);
    expect((await app.get('/v1/approvals')).status).toBe(401);
    expect((await app.get('/v1/approvals', { authorization: 'Bearer not-a-configured-key-at-all' })).status).toBe(401);
    expect((await decide(app, approvalId, { key: 'rk_wrong-key-of-sixteen' }, { verdict: 'approve' })).status).toBe(401);
    const foreignTenant = await decide(app, approvalId, carol, { verdict: 'approve' });
    expect([foreignTenant.status, foreignTenant.body['code']]).toEqual([403, 'APPROVAL.FORBIDDEN']);
    expect((await decide(app, approvalId, dave, { verdict: 'approve' })).status).toBe(403);
    const self = await decide(app, approvalId, agent, { verdict: 'approve' });
    expect([self.status, self.body['code']]).toEqual([403, 'APPROVAL.SELF_APPROVAL']);
    expect((await decide(app, `appr_${'0'.repeat(64)}`, alice, { verdict: 'approve' })).status).toBe(404);
    // The human the agent acts for cannot approve the agent's request either.
    const forAlice = await request(w, app, { onBehalfOf: { id: alice.id, role: 'support', kind: 'human' } });
    expect((await decide(app, forAlice.approvalId, alice, { verdict: 'approve' })).body).toMatchObject({ code: 'APPROVAL.SELF_APPROVAL' });
    expect((await decide(app, approvalId, alice, { verdict: 'maybe' })).status).toBe(400);
    // Out-of-scope reviewers do not even see it listed.
    expect((await app.get<{ items: unknown[] }>('/v1/approvals', bearer(carol))).body.items).toEqual([]);
    // Nothing of the above reached the log.
    expect((await app.get<{ history: unknown[] }>(`/v1/approvals/${approvalId}`, bearer(alice))).body.history).toHaveLength(1);
  });

  it('filters and paginates, newest first, with a stable cursor', async () => {
    const w = await world();
    const app = await boot(w);
    const made = [];
    for (let i = 0; i < 5; i += 1) made.push(await request(w, app, { tenant: i % 2 === 0 ? 'acme' : 'globex', connectorId: i < 3 ? 'payments.refund' : 'mail.send' }));
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await app.get<{ items: { approvalId: string }[]; nextCursor?: string }>(`/v1/approvals?limit=2${cursor ? `&cursor=${cursor}` : ''}`, bearer(alice));
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      ids.push(...page.body.items.map((i) => i.approvalId));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(ids).toEqual(made.map((m) => m.approvalId).reverse());
    const acmeMail = await app.get<{ items: { approvalId: string }[] }>('/v1/approvals?tenant=acme&connector=mail.send', bearer(alice));
    expect(acmeMail.body.items.map((i) => i.approvalId)).toEqual([made[4]?.approvalId]);
    expect((await app.get<{ items: unknown[] }>('/v1/approvals', bearer(carol))).body.items).toHaveLength(2);
    expect((await app.get<{ items: unknown[] }>('/v1/approvals?requester=agent:billing&minAgeSeconds=0&maxAgeSeconds=3600', bearer(alice))).body.items).toHaveLength(5);
    expect((await app.get<{ items: unknown[] }>('/v1/approvals?minAgeSeconds=3600', bearer(alice))).body.items).toHaveLength(0);
    expect((await app.get('/v1/approvals?status=bogus', bearer(alice))).status).toBe(400);
    expect((await app.get('/v1/approvals?cursor=nonsense', bearer(alice))).status).toBe(400);
  });

  it('accepts a signed HS256 JWT and refuses a tampered or expired one', async () => {
    const w = await world();
    const secret = Buffer.from('a-test-secret-that-is-at-least-32-bytes-long');
    const app = await boot(w, { jwt: { secret, issuer: 'gatehouse-test' } });
    const { approvalId } = await request(w, app);
    const sign = (claims: object) => {
      const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const body = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`;
      return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
    };
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: 'user:erin', role: 'approver', iss: 'gatehouse-test', exp: now + 60, tenants: ['acme'], connectors: '*' };
    const token = sign(claims);
    expect((await app.get(`/v1/approvals/${approvalId}`, { authorization: `Bearer ${token}` })).status).toBe(200);
    expect((await app.get('/v1/approvals', { authorization: `Bearer ${sign({ ...claims, exp: now - 1 })}` })).status).toBe(401);
    expect((await app.get('/v1/approvals', { authorization: `Bearer ${sign({ ...claims, iss: 'someone-else' })}` })).status).toBe(401);
    const [h, , s] = token.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, tenants: '*' })).toString('base64url')}.${s}`;
    expect((await app.get('/v1/approvals', { authorization: `Bearer ${forged}` })).status).toBe(401);
    const decided = await decide(app, approvalId, { key: token }, { verdict: 'deny', comment: 'no' });
    expect(decided.body).toMatchObject({ status: 'denied', reviewer: { id: 'user:erin' } });
  });

  it('streams new and settled approvals to a reviewer as server-sent events', async () => {
    const w = await world();
    const app = await boot(w);
    const controller = new AbortController();
    const response = await fetch(`${app.baseUrl}/v1/approval-events`, { headers: bearer(alice), signal: controller.signal });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body?.getReader();
    if (!reader) throw new Error('no body');
    let text = '';
    const read = async (until: (t: string) => boolean) => {
      while (!until(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        text += new TextDecoder().decode(value);
      }
    };
    await read((t) => t.includes('event: ready'));
    const { approvalId } = await request(w, app);
    await read((t) => t.includes(`"approvalId":"${approvalId}","type":"ApprovalRequested","status":"pending"`));
    await decide(app, approvalId, alice, { verdict: 'approve' });
    await read((t) => t.includes(`"type":"ApprovalDecided","status":"approved"`));
    expect(text).not.toContain('orderId');
    controller.abort();
  });
});

describe('racing reviewers', () => {
  it('gives exactly one 200 and one 409 every time, and every replica of the fold agrees', async () => {
    const w = await world();
    // Two replicas of the service over the same log, each with its own projection.
    const first = await boot(w);
    const second = await boot(w, { schema: `${w.schema}_b` });
    const rounds = 20;
    const ids: string[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const made = testRequest();
      await w.producer.publish('approvals', made.event);
      await waitFor(() => (first.engine.approval(made.approvalId) && second.engine.approval(made.approvalId) ? true : undefined), { what: 'both replicas saw the request' });
      const [a, b] = await Promise.all([
        decide(first, made.approvalId, alice, { verdict: 'approve' }),
        decide(second, made.approvalId, bob, round % 2 === 0 ? { verdict: 'deny' } : { verdict: 'approve-with-edits', editedArguments: { orderId: 'o-x', amount: 1 } }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const winner = a.status === 200 ? a : b;
      for (const replica of [first, second]) {
        await waitFor(() => (replica.engine.approval(made.approvalId)?.status !== 'pending' ? true : undefined), { what: 'the decision applied' });
        expect(replica.engine.approval(made.approvalId)).toMatchObject({ status: winner.body['status'], reviewer: winner.body['reviewer'] });
      }
      ids.push(made.approvalId);
    }
    // A third fold, from offset 0, agrees with both.
    const records: { event: ApprovalEvent; logTime: number }[] = [];
    await replayTopic(kafka, 'approvals', { namespace: w.namespace, onRecord: (r) => void records.push({ event: r.event, logTime: r.logTime.getTime() }) });
    const replayed = foldApprovals(records, TEST_KEYRING);
    for (const id of ids) {
      const decided = replayed.approvals.get(id);
      expect(decided).toEqual(first.engine.approval(id));
      expect(decided).toEqual(second.engine.approval(id));
      // A losing decision that reached the log is recorded as rejected, never applied (one that
      // lost before it was appended was refused by the service's pre-check instead).
      const kinds = replayed.history.get(id)?.map((h) => h.verdict.kind) ?? [];
      expect(kinds.slice(0, 2)).toEqual(['accepted', 'accepted']);
      expect(kinds.slice(2).every((k) => k === 'rejected')).toBe(true);
    }
  });
});

describe('the projection', () => {
  it('is rebuilt from offset 0 by the service after it was dropped, equal to a replay into a fresh schema', async () => {
    const w = await world();
    const app = await boot(w);
    const made = [await request(w, app), await request(w, app), await request(w, app)];
    await decide(app, made[0]?.approvalId ?? '', alice, { verdict: 'approve' });
    await decide(app, made[1]?.approvalId ?? '', bob, { verdict: 'approve-with-edits', editedArguments: { orderId: 'o-2', amount: 3 } });
    running.splice(running.indexOf(app), 1);
    await app.close();

    const sql = await openServiceDatabase({ url: database.url, schema: w.schema, migrations: APPROVAL_PROJECTION.migrations });
    try {
      await sql.query(`DROP TABLE ${w.schema}.approvals, ${w.schema}.unapplied_records`);
      await sql.query(`DELETE FROM ${w.schema}.typeorm_migrations WHERE name LIKE 'CreateApprovalProjection%'`);
      await sql.query(`DELETE FROM ${w.schema}.projection_offsets`);
      const restarted = await boot(w);
      expect(restarted.engine.status().projectedOffsets).toEqual(restarted.engine.status().appliedOffsets);
      await rebuildProjection(APPROVAL_PROJECTION, { kafka, namespace: w.namespace, database: { url: database.url }, schema: `${w.schema}_fresh` });
      const comparison = await compareProjections(APPROVAL_PROJECTION, sql.manager, { liveSchema: w.schema, rebuiltSchema: `${w.schema}_fresh`, namespace: w.namespace });
      expect(comparison.differences).toEqual([]);
      expect(comparison).toMatchObject({ equal: true, rows: { approvals: 3 } });
      expect((await restarted.get<{ status: string }>(`/v1/approvals/${made[1]?.approvalId ?? ''}`, bearer(alice))).body).toMatchObject({ status: 'approved-with-edits', editedArguments: { orderId: 'o-2', amount: 3 } });
    } finally {
      await sql.destroy();
    }
  });
});

describe('quorum', () => {
  it('counts approvals of the listed reviewers (202) until the required number settles it (200)', async () => {
    const w = await world();
    const app = await boot(w);
    const { approvalId } = await request(w, app, { quorum: { required: 2, reviewers: [alice.id, frank.id, 'user:grace'] } });
    const first = await decide(app, approvalId, alice, { verdict: 'approve' });
    expect([first.status, first.body]).toEqual([202, { approvalId, status: 'pending', votes: 1, required: 2 }]);
    expect((await decide(app, approvalId, alice, { verdict: 'approve' })).body).toMatchObject({ code: 'APPROVAL.ALREADY_VOTED' });
    // Bob may review this tenant and connector, but is not one of the listed reviewers.
    expect((await decide(app, approvalId, bob, { verdict: 'approve' })).body).toMatchObject({ code: 'APPROVAL.FORBIDDEN', details: { quorum: true } });
    expect((await decide(app, approvalId, frank, { verdict: 'approve-with-edits', editedArguments: { orderId: 'o', amount: 1 } })).status).toBe(422);
    const listed = await app.get<{ votes: { reviewer: { id: string } }[]; status: string }>(`/v1/approvals/${approvalId}`, bearer(bob));
    expect(listed.body).toMatchObject({ status: 'pending', quorum: { required: 2 }, votes: [{ reviewer: { id: 'user:alice' } }] });
    const second = await decide(app, approvalId, frank, { verdict: 'approve' });
    expect([second.status, second.body['status']]).toEqual([200, 'approved']);
    expect(app.engine.approval(approvalId)).toMatchObject({ status: 'approved', votes: [{ reviewer: { id: 'user:alice' } }, { reviewer: { id: 'user:frank' } }] });
  });
});

describe('forged decisions', () => {
  it('ignores a decision the approval service did not sign, reports it on the audit topic, and still takes the real one', async () => {
    const w = await world();
    const app = await boot(w);
    const { approvalId, event } = await request(w, app);
    // An agent with write access to the topic approves its own request: unsigned, then with a key of its own.
    const forged = createEvent(ApprovalDecidedV1, { source: 'guard:rogue', tenant: 'acme', subject: approvalId }, { approvalId, verdict: 'approve', reviewer: { id: 'user:alice', role: 'approver', kind: 'human' } });
    const rogue = await EventProducer.connect(testKafka('approval-rogue', 'agent'), { namespace: w.namespace });
    producers.push(rogue);
    await rogue.publish('approvals', forged);
    await rogue.publish('approvals', signEvent(forged, testSigningKey('approval', 'approval-test')));
    await waitFor(() => (app.engine.status().untrustedGrants === 2 ? true : undefined), { what: 'both forgeries folded' });
    // The projection commits per batch, a moment after the fold: read until it holds both.
    const seen = await waitFor(async () => {
      const answer = await app.get<{ status: string; history: { verdict: { reason?: string; untrusted?: string } }[] }>(`/v1/approvals/${approvalId}`, bearer(alice));
      return answer.body.history.length === 3 ? answer : undefined;
    }, { what: 'both forgeries projected' });
    expect(seen.body.status).toBe('pending');
    expect(seen.body.history.slice(1).map((h) => [h.verdict.reason, h.verdict.untrusted])).toEqual([
      ['untrusted-signature', 'unsigned'],
      ['untrusted-signature', 'bad-signature'],
    ]);
    const security = await waitFor(async () => {
      const found: DecisionRecorded[] = [];
      await replayTopic(kafka, 'audit', { namespace: w.namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && found.push(r.event)) });
      const hits = found.filter((e) => e.payload.code === 'SECURITY.UNTRUSTED_GRANT');
      return hits.length === 2 ? hits : undefined;
    }, { what: 'the security events' });
    expect(security.map((e) => [e.payload.boundary, e.payload.outcome, e.payload.attributes?.['untrusted'], e.payload.attributes?.['eventType']].join(':')).sort()).toEqual([
      'approval:denied:bad-signature:ApprovalDecided',
      'approval:denied:unsigned:ApprovalDecided',
    ]);
    expect(event.payload.requester.id).toBe('agent:billing');
    // The reviewer's decision, signed by the service, still settles it.
    expect((await decide(app, approvalId, alice, { verdict: 'deny' })).body).toMatchObject({ status: 'denied' });
  });
});

/** Sessions open on the test database besides the one counting them. */
async function openSessions(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    return rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

describe('the topic it folds', () => {
  // A fold of what the topic still holds reaches the service's state only under
  // `approvalLogRetentionMs`: the service refuses a topic that could delete sooner.
  it('refuses to start when the approvals topic could delete records its fold still needs, and starts once provisioning restored them', async () => {
    const w = await world();
    const topic = topicName('approvals', w.namespace);
    const admin = kafka.admin();
    await admin.connect();
    try {
      // What an operator's "keep a week" would do.
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }, { name: 'cleanup.policy', value: 'delete' }, { name: 'retention.ms', value: String(7 * 86_400_000) }] }],
      });
    } finally {
      await admin.disconnect();
    }
    const sessions = () => openSessions(database.url);
    const before = await sessions();
    const refused = await boot(w).then(
      () => undefined,
      (e: { code?: string; details?: Record<string, unknown> }) => e,
    );
    expect(refused).toMatchObject({ code: 'KAFKA.LOG_RETENTION_TOO_SHORT', details: { topic, retentionMs: 7 * 86_400_000, requiredRetentionMs: 51 * 86_400_000 } });
    // The refused start closed what it had opened (its database pool among them): nothing of it lingers in this process.
    expect(await sessions()).toBe(before);
    // Nothing was read, so nothing was projected.
    const sql = await openServiceDatabase({ url: database.url, schema: w.schema, migrations: APPROVAL_PROJECTION.migrations });
    try {
      expect(await sql.query(`SELECT count(*)::int AS n FROM "${w.schema}".projection_offsets`)).toEqual([{ n: 0 }]);
    } finally {
      await sql.destroy();
    }
    // A retention of settled approvals longer than the catalog's 60 days allow is refused on a provisioned topic too.
    await provisionTopics(kafka, { namespace: w.namespace });
    await expect(boot(w, { retainMs: 30 * 86_400_000 })).rejects.toMatchObject({ code: 'KAFKA.LOG_RETENTION_TOO_SHORT', details: { requiredRetentionMs: 97 * 86_400_000 } });
    const app = await boot(w);
    expect((await app.get('/health')).status).toBe(200);
  });
});
