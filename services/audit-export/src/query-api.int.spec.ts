import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type DecisionRecorded } from '@gatehouse/contracts';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { allowed, apiKeyDigest } from '@gatehouse/service-runtime';
import { type AuditApp, startAuditApp, TEST_READER, TEST_READER_KEY } from './testing/audit-app.js';
import { decision } from './testing/decisions.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';
import { DECISION_FIELDS, type DecisionView } from './query-decisions/decision-view.js';

let db: TestDatabase;
let app: AuditApp;
const events: DecisionRecorded[] = [];
// A reader of one tenant beside the all-tenant reader the test app's `get` speaks as.
const GLOBEX_KEY = 'rk_test_reader_globex_only';
const globex = { authorization: `Bearer ${GLOBEX_KEY}` };

beforeAll(async () => {
  const kafka = testKafka('audit-query-it');
  db = await createTestDatabase();
  const namespace = await provisionedNamespace(kafka);
  // No sink configured: projection and query only.
  const globexReader = { id: 'globex:siem', role: 'siem', tenants: allowed(['globex']), keyDigest: apiKeyDigest(GLOBEX_KEY) };
  app = await startAuditApp({ namespace, databaseUrl: db.url, schema: 'query_it', export: { name: 'siem', from: { kind: 'earliest' }, readers: [TEST_READER, globexReader] } });
  const producer = await EventProducer.connect(kafka, { namespace });
  try {
    for (let i = 0; i < 12; i += 1) {
      const event = decision(
        {
          runId: i < 6 ? 'run-1' : 'run-2',
          outcome: i % 2 === 0 ? 'denied' : 'allowed',
          toolId: i % 3 === 0 ? 'shell.exec' : 'http.fetch',
          actor: { id: i < 4 ? 'alice' : 'bob', role: 'analyst', kind: 'human' },
          policy: { bundleId: i < 8 ? 'default' : 'strict', revision: 1 },
          attributes: { matchedText: 'SENSITIVE-CONTENT', count: i },
          detections: ['ssn-detector'],
        },
        { tenant: i === 11 ? 'globex' : 'acme', subject: i < 6 ? 'run-1' : 'run-2', seq: i + 1 },
      );
      events.push(event);
      // One at a time: distinct append times, so "newest first" is well defined.
      await producer.publish('audit', event);
    }
  } finally {
    await producer.close();
  }
  await waitFor(async () => (((await app.get<{ items: unknown[] }>('/v1/decisions?limit=500')).body.items?.length ?? 0) >= 12 ? true : undefined), { what: 'projection' });
});

afterAll(async () => {
  await app?.close();
  await db?.drop();
});

const ids = (page: { items: DecisionView[] }) => page.items.map((d) => d.id);

describe('query API', () => {
  it('filters by tenant, actor, run, tool, decision and policy', async () => {
    const get = async (q: string) => (await app.get<{ items: DecisionView[] }>(`/v1/decisions?${q}`)).body;
    expect(ids(await get('tenant=globex'))).toEqual([events[11]?.id]);
    expect((await get('actor=alice')).items).toHaveLength(4);
    expect((await get('run=run-2&decision=denied')).items.map((d) => d.outcome)).toEqual(['denied', 'denied', 'denied']);
    expect((await get('tool=shell.exec')).items).toHaveLength(4);
    expect((await get('policy=strict')).items).toHaveLength(4);
    expect((await get('agent=support-bot&tenant=acme')).items).toHaveLength(11);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await get(`from=${encodeURIComponent(future)}`)).items).toHaveLength(0);
  });

  it('pages newest first with a keyset cursor, never repeating or skipping', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    const times: string[] = [];
    do {
      const answer: { items: DecisionView[]; nextCursor: string | null } = (await app.get<{ items: DecisionView[]; nextCursor: string | null }>(`/v1/decisions?limit=5${cursor ? `&cursor=${cursor}` : ''}`)).body;
      seen.push(...ids(answer));
      times.push(...answer.items.map((d) => d.logTime));
      cursor = answer.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(12);
    expect(new Set(seen)).toEqual(new Set(events.map((e) => e.id)));
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('returns a run timeline in log order', async () => {
    const answer = await app.get<{ decisions: DecisionView[]; truncated: boolean }>('/v1/runs/run-1/timeline');
    expect(answer.status).toBe(200);
    expect(answer.body.decisions.map((d) => d.id)).toEqual(events.slice(0, 6).map((e) => e.id));
    expect(answer.body.decisions.map((d) => d.chain?.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('returns only allowlisted fields, never attributes or detections', async () => {
    const event = events[3] as DecisionRecorded;
    const answer = await app.get<DecisionView>(`/v1/decisions/${event.id}`);
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body).sort()).toEqual([...DECISION_FIELDS].sort());
    expect(answer.body).toMatchObject({ id: event.id, outcome: 'allowed', code: event.payload.code, reason: event.payload.reason, policy: { bundleId: 'default', revision: 1 } });
    const list = await app.get('/v1/decisions?limit=500');
    expect(list.text).not.toContain('SENSITIVE-CONTENT');
    expect(list.text).not.toContain('matchedText');
    expect(list.text).not.toContain('ssn-detector');
  });

  it('answers 400 naming the parameter without echoing it, and 404 for an unknown id', async () => {
    const marker = 'INJECTED<script>';
    for (const [q, field] of [
      [`limit=${marker}`, 'limit'],
      [`decision=${marker}`, 'decision'],
      [`from=${marker}`, 'from'],
      [`cursor=${marker}`, 'cursor'],
      [`${marker}=1`, 'query'],
    ] as const) {
      const answer = await app.get<{ code: string; message: string }>(`/v1/decisions?${q}`);
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('AUDIT.INVALID_REQUEST');
      expect(answer.body.message).toContain(`"${field}"`);
      expect(answer.text).not.toContain('INJECTED');
    }
    expect((await app.get(`/v1/decisions/${marker}`)).text).not.toContain('INJECTED');
    expect((await app.get('/v1/decisions/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await app.get('/v1/exports')).body).toEqual([]);
  });

  it('answers readers only, each for the tenants it may read', async () => {
    const someId = (events[0] as DecisionRecorded).id;
    const globexId = (events[11] as DecisionRecorded).id;
    for (const path of ['/v1/decisions', `/v1/decisions/${someId}`, '/v1/runs/run-1/timeline', '/v1/exports']) {
      for (const authorization of ['', 'Bearer rk_not_a_configured_key', TEST_READER_KEY, `Basic ${Buffer.from(`siem:${TEST_READER_KEY}`).toString('base64')}`]) {
        const answer = await app.get<{ code: string }>(path, { authorization });
        expect([path, answer.status, answer.body.code]).toEqual([path, 401, 'AUDIT.UNAUTHENTICATED']);
        expect(answer.text).not.toContain('rk_');
      }
    }
    // The globex reader sees globex's decision and nothing of acme's, without learning that acme's exist.
    expect(ids((await app.get<{ items: DecisionView[] }>('/v1/decisions?limit=500', globex)).body)).toEqual([globexId]);
    expect(ids((await app.get<{ items: DecisionView[] }>('/v1/decisions?tenant=globex', globex)).body)).toEqual([globexId]);
    const forbidden = await app.get<{ code: string }>('/v1/decisions?tenant=acme', globex);
    expect([forbidden.status, forbidden.body.code]).toEqual([403, 'AUDIT.FORBIDDEN']);
    expect((await app.get(`/v1/decisions/${globexId}`, globex)).status).toBe(200);
    expect((await app.get<{ code: string }>(`/v1/decisions/${someId}`, globex)).body.code).toBe('AUDIT.DECISION_NOT_FOUND');
    expect((await app.get<{ decisions: DecisionView[] }>('/v1/runs/run-2/timeline', globex)).body.decisions.map((d) => d.id)).toEqual([globexId]);
    expect((await app.get<{ decisions: DecisionView[] }>('/v1/runs/run-1/timeline', globex)).body.decisions).toEqual([]);
    expect((await app.get('/v1/exports', globex)).status).toBe(200);
    // A reader may read, never move the export: a restart takes an operator's key.
    const moved = await app.post<{ code: string }>('/v1/exports/siem/restart', { from: 'earliest' }, { authorization: `Bearer ${TEST_READER_KEY}` });
    expect([moved.status, moved.body.code]).toEqual([401, 'AUDIT.UNAUTHENTICATED']);
    // The all-tenant reader sees both tenants.
    expect((await app.get<{ items: DecisionView[] }>('/v1/decisions?limit=500')).body.items).toHaveLength(12);
  });
});
