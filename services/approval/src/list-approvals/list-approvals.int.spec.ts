import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testCancel } from '@gatehouse/approvals/testing';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { type ApprovalApp, bearer, startApprovalApp, testReviewer, type TestReviewer } from '../testing/approval-app.js';
import { testRequest, type TestRequestOptions } from '../testing/requests.js';

interface Item {
  readonly approvalId: string;
  readonly status: string;
  readonly tenant: string;
  readonly connectorId: string;
  readonly settledAt?: string;
  readonly settledBy?: { readonly id: string };
  readonly comment?: string;
  readonly editedArguments?: unknown;
}
interface ListPage {
  readonly items: readonly Item[];
  readonly nextCursor?: string;
}

const alice = testReviewer('user:alice');
const bob = testReviewer('user:bob');
const carol = testReviewer('user:carol', { tenants: ['globex'] });
const dave = testReviewer('user:dave', { connectors: ['mail.send'] });
// An agent given a reviewer key for its own tenant: it may read that tenant's decisions, never another's.
const agent = testReviewer('agent:billing', { role: 'agent', tenants: ['acme'] });

let database: TestDatabase;
let producer: EventProducer;
let app: ApprovalApp;
let connectors = 0;

beforeAll(async () => {
  const kafka = testKafka('approval-list-int-spec');
  database = await createTestDatabase();
  const namespace = await provisionedNamespace(kafka);
  producer = await EventProducer.connect(kafka, { namespace });
  app = await startApprovalApp({ namespace, schema: 'approval_list', databaseUrl: database.url, reviewers: [alice, bob, carol, dave, agent] });
});

afterAll(async () => {
  await app?.close();
  await producer?.close();
  await database?.drop();
});

/** A connector id no other test uses: one app serves the whole file, and each test lists only its own requests. */
const freshConnector = () => `payments.refund-${(connectors += 1)}`;

/** Appends a request as a guard would and waits until the service lists it. */
async function request(options: TestRequestOptions) {
  const made = testRequest(options);
  await producer.publish('approvals', made.event);
  await waitFor(async () => ((await app.get(`/v1/approvals/${made.approvalId}`, bearer(alice))).status === 200 ? true : undefined), { what: 'the request projected' });
  return made;
}

async function decide(approvalId: string, reviewer: TestReviewer, body: object): Promise<void> {
  expect((await app.post(`/v1/approvals/${approvalId}/decision`, body, bearer(reviewer))).status).toBe(200);
}

async function list(reviewer: TestReviewer, query: string): Promise<ListPage> {
  const answer = await app.get<ListPage>(`/v1/approvals?${query}`, bearer(reviewer));
  expect([query, answer.status]).toEqual([query, 200]);
  return answer.body;
}

const ids = (page: ListPage) => page.items.map((item) => item.approvalId);

describe('GET /v1/approvals: history and filters', () => {
  it('lists decided approvals newest decision first, with who decided, when, and the comment', async () => {
    const connectorId = freshConnector();
    const first = await request({ connectorId });
    const second = await request({ connectorId, arguments: { orderId: 'o-edit', amount: 300 } });
    const third = await request({ connectorId });
    const open = await request({ connectorId });
    const withdrawn = await request({ connectorId });
    await decide(first.approvalId, bob, { verdict: 'approve', comment: 'checked with finance' });
    await decide(third.approvalId, alice, { verdict: 'deny', comment: 'a duplicate' });
    await decide(second.approvalId, bob, { verdict: 'approve-with-edits', editedArguments: { orderId: 'o-edit', amount: 120 }, comment: 'partial refund' });
    await producer.publish('approvals', testCancel(withdrawn.approvalId, { by: withdrawn.event.payload.requester }));
    await waitFor(async () => ((await app.get<Item>(`/v1/approvals/${withdrawn.approvalId}`, bearer(alice))).body.status === 'cancelled' ? true : undefined), {
      what: 'the withdrawal projected',
    });

    const history = await list(alice, `status=decided&order=settled&connector=${connectorId}`);
    expect(ids(history)).toEqual([second.approvalId, third.approvalId, first.approvalId]);
    expect(history.items).toEqual([
      expect.objectContaining({ status: 'approved-with-edits', settledBy: expect.objectContaining({ id: 'user:bob' }), comment: 'partial refund', editedArguments: { orderId: 'o-edit', amount: 120 } }),
      expect.objectContaining({ status: 'denied', settledBy: expect.objectContaining({ id: 'user:alice' }), comment: 'a duplicate' }),
      expect.objectContaining({ status: 'approved', settledBy: expect.objectContaining({ id: 'user:bob' }), comment: 'checked with finance' }),
    ]);
    const times = history.items.map((item) => Date.parse(item.settledAt ?? ''));
    expect(times.every((t, i) => Number.isFinite(t) && (i === 0 || t <= (times[i - 1] ?? 0)))).toBe(true);
    // `decided` is the three verdicts in the usual order (newest request first); `order=settled` alone adds the withdrawal.
    expect(ids(await list(alice, `status=decided&connector=${connectorId}`))).toEqual([third.approvalId, second.approvalId, first.approvalId]);
    expect(ids(await list(alice, `order=settled&connector=${connectorId}`))).toEqual([withdrawn.approvalId, second.approvalId, third.approvalId, first.approvalId]);
    expect(ids(await list(alice, `status=pending&connector=${connectorId}`))).toEqual([open.approvalId]);
  });

  it('pages the history with a cursor of its own order, and refuses a cursor of the other order', async () => {
    const connectorId = freshConnector();
    const made = [];
    for (let i = 0; i < 3; i += 1) made.push(await request({ connectorId }));
    for (const m of made.slice().reverse()) await decide(m.approvalId, bob, { verdict: 'deny' });

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await list(alice, `status=decided&order=settled&connector=${connectorId}&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...ids(page));
      cursor = page.nextCursor;
    } while (cursor);
    // Decided last to first: the first request's denial is the newest.
    expect(seen).toEqual(made.map((m) => m.approvalId));

    const settledCursor = (await list(alice, `order=settled&connector=${connectorId}&limit=1`)).nextCursor;
    const requestedCursor = (await list(alice, `connector=${connectorId}&limit=1`)).nextCursor;
    expect([settledCursor, requestedCursor].every((c) => typeof c === 'string')).toBe(true);
    const mixed = [`cursor=${settledCursor}`, `order=settled&cursor=${requestedCursor}`];
    for (const query of mixed) {
      const answer = await app.get<{ code: string; details: unknown }>(`/v1/approvals?${query}`, bearer(alice));
      expect([query, answer.status, answer.body.code]).toEqual([query, 400, 'APPROVAL.INVALID_REQUEST']);
      expect(answer.body.details).toEqual({ fields: [{ field: 'cursor', problem: 'a cursor of another order' }] });
    }
  });

  it('never widens a reviewer’s scope: a filter outside it lists nothing, and the history holds only what the reviewer may see', async () => {
    const connectorId = freshConnector();
    const acme = await request({ connectorId, tenant: 'acme' });
    const globex = await request({ connectorId, tenant: 'globex' });
    const mail = await request({ connectorId: 'mail.send', tenant: 'acme' });
    for (const m of [acme, globex, mail]) await decide(m.approvalId, bob, { verdict: 'approve', comment: 'fine' });

    expect(ids(await list(carol, `tenant=acme&connector=${connectorId}`))).toEqual([]);
    expect(ids(await list(carol, `status=decided&order=settled&connector=${connectorId}`))).toEqual([globex.approvalId]);
    expect(ids(await list(carol, 'status=decided&order=settled&limit=200')).includes(acme.approvalId)).toBe(false);
    expect(ids(await list(dave, `connector=${connectorId}`))).toEqual([]);
    expect(ids(await list(dave, 'status=decided&order=settled&tenant=acme&limit=200'))).toContain(mail.approvalId);
    expect((await list(dave, 'status=decided&order=settled&limit=200')).items.every((item) => item.connectorId === 'mail.send')).toBe(true);
    // Both filters at once: AND.
    expect(ids(await list(alice, `status=decided&order=settled&tenant=globex&connector=${connectorId}`))).toEqual([globex.approvalId]);
    expect((await app.get(`/v1/approvals?status=decided&order=settled`)).status).toBe(401);
  });

  it('never lets an agent principal read another tenant’s decisions: not by filter, cursor, id or a forged credential', async () => {
    const connectorId = freshConnector();
    const own = await request({ connectorId, tenant: 'acme' });
    const foreign = await request({ connectorId, tenant: 'globex' });
    await decide(own.approvalId, bob, { verdict: 'deny', comment: 'not this quarter' });
    await decide(foreign.approvalId, bob, { verdict: 'approve', comment: 'globex-only remark' });

    // Its own tenant's history it reads like any reviewer scoped to it.
    expect(ids(await list(agent, `status=decided&order=settled&connector=${connectorId}`))).toEqual([own.approvalId]);
    // Asking for the other tenant by name, or for everything, lists nothing of it.
    const queries = [
      `tenant=globex&connector=${connectorId}`,
      'tenant=globex&status=decided&order=settled&limit=200',
      'status=decided&order=settled&limit=200',
      'order=settled&limit=200',
      `connector=${connectorId}&limit=200`,
    ];
    for (const query of queries) {
      const items = (await list(agent, query)).items;
      expect([query, items.filter((item) => item.tenant !== 'acme')]).toEqual([query, []]);
    }
    // A cursor is a position, not a grant: one forged to start past every decision still lists only acme's.
    const forged = Buffer.from(JSON.stringify({ at: new Date(Date.now() + 3_600_000).toISOString(), id: `appr_${'f'.repeat(64)}`, by: 'settled' })).toString('base64url');
    const paged = await list(agent, `status=decided&order=settled&limit=200&cursor=${forged}`);
    expect(ids(paged)).toContain(own.approvalId);
    expect(paged.items.filter((item) => item.tenant !== 'acme')).toEqual([]);
    // By id: refused, and the answer carries nothing of the approval.
    const one = await app.get<{ code: string }>(`/v1/approvals/${foreign.approvalId}`, bearer(agent));
    expect([one.status, one.body.code]).toEqual([403, 'APPROVAL.FORBIDDEN']);
    expect(JSON.stringify(one.body)).not.toMatch(/globex|remark/);
    // Its signing key's id is no credential, and an unsigned token claiming every tenant is refused like any unknown key.
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: 'agent:billing', role: 'approver', exp: 4_102_444_800, tenants: '*', connectors: '*' })}.`;
    for (const credential of ['agent-test', unsigned]) {
      const answer = await app.get('/v1/approvals?status=decided&order=settled&tenant=globex', { authorization: `Bearer ${credential}` });
      expect(answer.status).toBe(401);
    }
  });

  it('refuses an invalid filter or order with 400 naming the field, never the value sent', async () => {
    const long = 'x'.repeat(257);
    const cases: [string, string][] = [
      [`tenant=${long}`, 'tenant'],
      ['tenant=acme%00evil', 'tenant'],
      [`connector=${long}`, 'connector'],
      ['connector=', 'connector'],
      ['order=oldest', 'order'],
      ['status=decided,maybe', 'status.1'], // the list's second item
      ['sort=settled', '(body)'], // an unknown parameter
    ];
    for (const [query, field] of cases) {
      const answer = await app.get<{ code: string; message: string; details: { fields: { field: string }[] } }>(`/v1/approvals?${query}`, bearer(alice));
      expect([query, answer.status, answer.body.code]).toEqual([query, 400, 'APPROVAL.INVALID_REQUEST']);
      expect(answer.body.details.fields.map((f) => f.field)).toContain(field);
      expect(JSON.stringify(answer.body)).not.toMatch(/xxxx|evil|oldest|maybe/);
    }
  });
});
