import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { type HttpAnswer, type LedgerApp, type LedgerAppOptions, startLedgerApp, testLedgerAgent } from './testing/ledger-app.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';

// Who may call the agent routes, for which tenant, and how much one agent may hold: every refusal
// is typed and appends nothing to the log.

let kafka: Kafka;
let database: TestDatabase;
const running: LedgerApp[] = [];
let schemaCount = 0;

beforeAll(async () => {
  kafka = testKafka('ledger-auth-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
});

afterAll(async () => {
  await database.drop();
});

const newKey = () => createHash('sha256').update(randomUUID()).digest('hex');
const ACME = testLedgerAgent(['acme'], 'agent:acme');
const GLOBEX = testLedgerAgent(['globex'], 'agent:globex');
const BOTH = testLedgerAgent(['acme', 'globex'], 'agent:both');

async function boot(options: Partial<LedgerAppOptions> = {}): Promise<LedgerApp> {
  schemaCount += 1;
  const app = await startLedgerApp({ namespace: await provisionedNamespace(kafka), schema: `ledger_auth_t${schemaCount}`, databaseUrl: database.url, agents: [ACME, GLOBEX, BOTH], ...options });
  running.push(app);
  return app;
}

/** Records the ledger has applied: a refused request must not move it. */
const applied = (app: LedgerApp) => Object.values(app.engine.status().appliedOffsets).reduce((n, o) => n + Number(o), 0);

const reservation = (key: string, extra: Record<string, unknown> = {}) => ({ key, connectorId: 'payments.refund', holder: 'call-1', pendingTtlMs: 60_000, ...extra });
const lease = randomUUID();

/** One request of every agent route, for `key`. */
function everyRoute(key: string, extra: Record<string, unknown> = {}): { route: string; send: (app: LedgerApp, headers: Record<string, string>) => Promise<HttpAnswer> }[] {
  const post = (route: string, body: unknown) => ({ route, send: (app: LedgerApp, headers: Record<string, string>) => app.anonymous.post(route, body, headers) });
  const query = new URLSearchParams(Object.entries(extra).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return [
    post('/v1/idempotency/reservations', reservation(key, extra)),
    post('/v1/idempotency/completions', { key, leaseToken: lease, result: { forged: true }, ...extra }),
    post('/v1/idempotency/failures', { key, leaseToken: lease, code: 'X', retryable: true, ...extra }),
    post('/v1/idempotency/reconciliations', { key, leaseToken: lease, outcome: 'already-applied', result: { forged: true }, ...extra }),
    post('/v1/rate/consumptions', { budgetKey: key, algorithm: 'fixed-window', count: 5, windowMs: 60_000, ...extra }),
    { route: 'GET /v1/idempotency/keys/:key', send: (app, headers) => app.anonymous.get(`/v1/idempotency/keys/${key}${query ? `?${query}` : ''}`, headers) },
  ];
}

describe('agents authenticate', () => {
  it('answers every agent route 401 LEDGER.UNAUTHENTICATED without a key or with a wrong one, and appends nothing', async () => {
    const app = await boot();
    const before = applied(app);
    for (const headers of [{} as Record<string, string>, { authorization: `Bearer ${ACME.apiKey}x` }, { authorization: `Basic ${ACME.apiKey}` }, { authorization: 'Bearer lk_not-a-key-of-anyone-at-all' }]) {
      for (const { route, send } of everyRoute(newKey())) {
        const answer = await send(app, headers);
        expect({ route, status: answer.status, code: answer.body['code'] }).toEqual({ route, status: 401, code: 'LEDGER.UNAUTHENTICATED' });
        expect(answer.headers.get('www-authenticate')).toBe('Bearer');
        expect(answer.text).not.toContain(ACME.apiKey);
      }
    }
    // Counted for operators, nothing else kept.
    expect((await app.anonymous.get('/v1/ledger/status')).body['refusals']).toEqual({ 'LEDGER.UNAUTHENTICATED': 24, 'LEDGER.FORBIDDEN': 0, 'LEDGER.PENDING_LIMIT': 0, 'LEDGER.BUDGET_LIMIT': 0 });
    // An operator's token is not an agent's key either.
    const operator = await boot({ operatorTokens: `ops:operator:op-token-${'o'.repeat(20)}` });
    expect((await operator.anonymous.post('/v1/idempotency/reservations', reservation(newKey()), { authorization: `Bearer op-token-${'o'.repeat(20)}` })).status).toBe(401);
    // The refusals appended nothing: the next real reservation is the log's first record.
    expect((await app.post('/v1/idempotency/reservations', reservation(newKey()))).body).toMatchObject({ status: 'reserved' });
    expect(applied(app)).toBe(before + 1);
  });

  it('answers 403 LEDGER.FORBIDDEN for a tenant the agent is not bound to, and asks an agent of several tenants to name one', async () => {
    const app = await boot();
    for (const { route, send } of everyRoute(newKey(), { tenant: 'globex' })) {
      const answer = await send(app, ACME.headers);
      expect({ route, status: answer.status, code: answer.body['code'] }).toEqual({ route, status: 403, code: 'LEDGER.FORBIDDEN' });
    }
    const unnamed = await app.post('/v1/idempotency/reservations', reservation(newKey()), BOTH.headers);
    expect(unnamed.status).toBe(400);
    expect(unnamed.body).toMatchObject({ code: 'LEDGER.INVALID_REQUEST', details: { fields: [expect.objectContaining({ field: 'tenant' })] } });
    expect((await app.post('/v1/idempotency/reservations', reservation(newKey(), { tenant: 'globex' }), BOTH.headers)).body).toMatchObject({ status: 'reserved' });
    expect(applied(app)).toBe(1);
  });
});

describe('tenants apart', () => {
  it("lets a tenant-A agent neither read, reserve, complete, fail nor reconcile tenant B's key, with the same client key or B's stored one", async () => {
    const app = await boot();
    const key = newKey();
    const won = await app.post('/v1/idempotency/reservations', reservation(key), GLOBEX.headers);
    expect(won.body).toMatchObject({ status: 'reserved' });
    const globexLease = String(won.body['leaseToken']);
    const stored = app.stored(key, 'globex');

    // Read: globex's key is not there for acme, under the client key or the stored key.
    for (const asked of [key, stored]) expect((await app.get(`/v1/idempotency/keys/${asked}`, ACME.headers)).status).toBe(404);
    // Complete, fail, reconcile with globex's own lease: acme's key of that name was never reserved.
    for (const [route, body] of [
      ['/v1/idempotency/completions', { key, leaseToken: globexLease, result: { forged: true } }],
      ['/v1/idempotency/failures', { key, leaseToken: globexLease, code: 'X', retryable: true }],
      ['/v1/idempotency/reconciliations', { key, leaseToken: globexLease, outcome: 'already-applied', result: { forged: true } }],
    ] as const) {
      const answer = await app.post(route, body, ACME.headers);
      expect({ route, status: answer.status, code: answer.body['code'] }).toEqual({ route, status: 409, code: 'LEDGER.UNKNOWN_KEY' });
    }
    // Reserve: acme gets a key of its own, never globex's pending one.
    expect((await app.post('/v1/idempotency/reservations', reservation(key), ACME.headers)).body).toMatchObject({ status: 'reserved' });
    expect((await app.post('/v1/idempotency/reservations', reservation(stored), ACME.headers)).body).toMatchObject({ status: 'reserved' });
    // globex's key is untouched and still its own to complete.
    expect(app.engine.key(stored)).toMatchObject({ status: 'pending', leaseToken: globexLease, principal: 'agent:globex' });
    expect((await app.post('/v1/idempotency/completions', { key, leaseToken: globexLease, result: { refund: 'g-1' } }, GLOBEX.headers)).status).toBe(200);
    const view = await app.get(`/v1/idempotency/keys/${key}`, GLOBEX.headers);
    expect(view.body).toMatchObject({ key, tenant: 'globex', ledgerKey: stored, status: 'completed', result: { refund: 'g-1' } });
    expect((await app.get(`/v1/idempotency/keys/${key}`, ACME.headers)).body).toMatchObject({ tenant: 'acme', status: 'pending' });
  });

  it("keeps budgets apart: draining acme's budget leaves globex's with the same key whole", async () => {
    const app = await boot();
    const budgetKey = newKey();
    const consume = (headers: Record<string, string>) => app.post('/v1/rate/consumptions', { budgetKey, algorithm: 'fixed-window', count: 2, windowMs: 3_600_000 }, headers);
    for (let i = 0; i < 4; i += 1) await consume(ACME.headers);
    expect((await consume(ACME.headers)).body).toMatchObject({ allowed: false });
    expect((await consume(GLOBEX.headers)).body).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe('bounds per agent', () => {
  it('refuses reservations past the pending bound with 429 LEDGER.PENDING_LIMIT, even when they arrive at once, and frees room as keys complete', async () => {
    const app = await boot({ maxPendingKeys: 3 });
    const keys = Array.from({ length: 20 }, newKey);
    const answers = await Promise.all(keys.map((key) => app.post('/v1/idempotency/reservations', reservation(key), ACME.headers)));
    const won = answers.flatMap((a, i) => (a.body['status'] === 'reserved' ? [i] : []));
    expect(won).toHaveLength(3);
    expect(answers.filter((a) => a.status === 429).map((a) => [a.body['code'], a.body['retryable']])).toEqual(Array.from({ length: 17 }, () => ['LEDGER.PENDING_LIMIT', true]));
    expect(applied(app)).toBe(3);
    expect(app.engine.view().openKeysByPrincipal.get('agent:acme')).toBe(3);
    // A key it holds is still answered; another agent is not held back by acme's keys.
    expect((await app.post('/v1/idempotency/reservations', reservation(keys[won[0]!]!), ACME.headers)).body).toMatchObject({ status: 'pending' });
    expect((await app.post('/v1/idempotency/reservations', reservation(newKey()), GLOBEX.headers)).body).toMatchObject({ status: 'reserved' });
    // A completion frees one place, and only one.
    const i = won[0]!;
    expect((await app.post('/v1/idempotency/completions', { key: keys[i], leaseToken: answers[i]!.body['leaseToken'] }, ACME.headers)).status).toBe(200);
    expect((await app.post('/v1/idempotency/reservations', reservation(newKey()), ACME.headers)).body).toMatchObject({ status: 'reserved' });
    expect((await app.post('/v1/idempotency/reservations', reservation(newKey()), ACME.headers)).status).toBe(429);
  });

  it('refuses a budget past the budget bound with 429 LEDGER.BUDGET_LIMIT; budgets it has keep working', async () => {
    const app = await boot({ maxBudgets: 2 });
    const consume = (budgetKey: string, headers: Record<string, string> = ACME.headers) => app.post('/v1/rate/consumptions', { budgetKey, algorithm: 'fixed-window', count: 100, windowMs: 60_000 }, headers);
    const [a, b] = [newKey(), newKey()];
    expect((await consume(a)).body).toMatchObject({ allowed: true });
    expect((await consume(b)).body).toMatchObject({ allowed: true });
    const answers = await Promise.all(Array.from({ length: 10 }, () => consume(newKey())));
    expect(answers.map((x) => [x.status, x.body['code']])).toEqual(Array.from({ length: 10 }, () => [429, 'LEDGER.BUDGET_LIMIT']));
    expect((await consume(a)).body).toMatchObject({ allowed: true, remaining: 98 });
    expect((await consume(newKey(), GLOBEX.headers)).body).toMatchObject({ allowed: true });
    expect(app.engine.view().budgets.size).toBe(3);
    expect(applied(app)).toBe(4);
  });
});
