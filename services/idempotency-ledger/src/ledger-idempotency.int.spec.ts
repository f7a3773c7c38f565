import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { createEvent, type DecisionRecorded, isDecisionRecorded, LedgerKeyExpiredV1, LedgerKeyReservedV1, signEvent } from '@gatehouse/contracts';
import { testSigningKey } from '@gatehouse/contracts/testing';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';
import { type LedgerApp, type LedgerAppOptions, startLedgerApp } from './testing/ledger-app.js';

const OPERATOR_TOKEN = `op-token-${randomUUID()}`;
const OPERATOR_TOKENS = `alice:operator:${OPERATOR_TOKEN}`;

let kafka: Kafka;
let database: TestDatabase;
const running: LedgerApp[] = [];
let schemaCount = 0;

beforeAll(async () => {
  kafka = testKafka('ledger-idempotency-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
});

afterAll(async () => {
  await database.drop();
});

const newKey = () => createHash('sha256').update(randomUUID()).digest('hex');

/** A namespace and a projection schema of the test's own. */
async function isolated(): Promise<Pick<LedgerAppOptions, 'namespace' | 'schema' | 'databaseUrl'>> {
  schemaCount += 1;
  return { namespace: await provisionedNamespace(kafka), schema: `ledger_t${schemaCount}`, databaseUrl: database.url };
}

async function boot(options: LedgerAppOptions): Promise<LedgerApp> {
  const app = await startLedgerApp(options);
  running.push(app);
  return app;
}

async function stop(app: LedgerApp): Promise<void> {
  running.splice(running.indexOf(app), 1);
  await app.close();
}

const reserve = (app: LedgerApp, key: string, holder = 'agent-1', pendingTtlMs = 60_000) =>
  app.post('/v1/idempotency/reservations', { key, connectorId: 'refunds', holder, pendingTtlMs });

describe('idempotency over HTTP', () => {
  it('reserves, completes, and answers a later reservation with the recorded result', async () => {
    const app = await boot(await isolated());
    const key = newKey();
    const first = await reserve(app, key);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ status: 'reserved', leaseToken: expect.any(String), takenOver: false });
    const completed = await app.post('/v1/idempotency/completions', { key, leaseToken: first.body['leaseToken'], result: { refundId: 'R-1', amount: 10 } });
    expect(completed.status).toBe(200);
    expect(completed.body).toEqual({ status: 'completed' });

    const again = await reserve(app, key, 'agent-2');
    expect(again.body).toEqual({ status: 'completed', result: { refundId: 'R-1', amount: 10 } });

    // The projection serves reads, and it already has the completion: answers wait for it.
    const read = await app.get(`/v1/idempotency/keys/${key}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ key, status: 'completed', connectorId: 'refunds', ambiguous: false, result: { refundId: 'R-1', amount: 10 } });
    expect(read.text).not.toContain(String(first.body['leaseToken']));
    expect((await app.get(`/v1/idempotency/keys/${newKey()}`)).status).toBe(404);
  });

  it('answers a repeated completion by the same holder as completed, and keeps the first result', async () => {
    const app = await boot(await isolated());
    const key = newKey();
    const { body } = await reserve(app, key);
    await app.post('/v1/idempotency/completions', { key, leaseToken: body['leaseToken'], result: 1 });
    const repeated = await app.post('/v1/idempotency/completions', { key, leaseToken: body['leaseToken'], result: 2 });
    expect(repeated.status).toBe(200);
    expect((await reserve(app, key)).body).toEqual({ status: 'completed', result: 1 });
  });

  it('keeps a null result distinct from no result', async () => {
    const app = await boot(await isolated());
    const [withNull, without] = [newKey(), newKey()];
    const a = await reserve(app, withNull);
    const b = await reserve(app, without);
    await app.post('/v1/idempotency/completions', { key: withNull, leaseToken: a.body['leaseToken'], result: null });
    await app.post('/v1/idempotency/completions', { key: without, leaseToken: b.body['leaseToken'] });
    expect((await reserve(app, withNull)).body).toEqual({ status: 'completed', result: null });
    expect((await reserve(app, without)).body).toEqual({ status: 'completed' });
    expect((await app.get(`/v1/idempotency/keys/${withNull}`)).body).toHaveProperty('result', null);
    expect((await app.get(`/v1/idempotency/keys/${without}`)).body).not.toHaveProperty('result');
  });

  it('gives exactly one of 50 concurrent reservations of one key the lease', async () => {
    const app = await boot(await isolated());
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => reserve(app, key, `agent-${i}`)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const statuses = answers.map((a) => a.body['status']);
    expect(statuses.filter((s) => s === 'reserved')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'pending')).toHaveLength(49);
    expect(answers.find((a) => a.body['status'] === 'pending')?.body['retryAfterMs']).toEqual(expect.any(Number));
  });

  it('lets two instances race on 100 keys: one reservation per key, and both folds agree', async () => {
    const isolation = await isolated();
    const [a, b] = [await boot(isolation), await boot(isolation)];
    const keys = Array.from({ length: 100 }, newKey);
    const answers = await Promise.all(keys.flatMap((key) => [reserve(a, key, 'agent-a'), reserve(b, key, 'agent-b')]));
    expect(answers.every((x) => x.status === 200)).toBe(true);
    for (let i = 0; i < keys.length; i += 1) {
      const pair = [answers[2 * i]!.body['status'], answers[2 * i + 1]!.body['status']].sort();
      expect(pair).toEqual(['pending', 'reserved']);
    }
    // Same log, same fold: once both have applied the same offsets, their states are equal.
    await waitFor(() => (JSON.stringify(a.engine.status().appliedOffsets) === JSON.stringify(b.engine.status().appliedOffsets) ? true : undefined), {
      what: 'both instances at the same offsets',
      timeoutMs: 10_000,
    });
    const snapshot = (app: LedgerApp) => JSON.stringify([...app.engine.view().keys].sort(([x], [y]) => x.localeCompare(y)));
    expect(snapshot(a)).toEqual(snapshot(b));
    expect(a.engine.view().keys.size).toBe(100);
  });

  it('takes a pending reservation over only after its TTL, and refuses the old holder late completion', async () => {
    const app = await boot(await isolated());
    const key = newKey();
    const first = await reserve(app, key, 'agent-dies', 300);
    expect(first.body['status']).toBe('reserved');
    const early = await reserve(app, key, 'agent-2', 300);
    expect(early.body['status']).toBe('pending');

    const started = Date.now();
    const takeover = await waitFor(
      async () => {
        const answer = await reserve(app, key, 'agent-2', 300);
        return answer.body['status'] === 'reserved' ? answer : undefined;
      },
      { what: 'a takeover after the TTL', intervalMs: 50, timeoutMs: 10_000 },
    );
    expect(takeover.body['takenOver']).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    const reservedAt = app.engine.key(app.stored(key));
    expect(reservedAt?.status).toBe('pending');

    const late = await app.post('/v1/idempotency/completions', { key, leaseToken: first.body['leaseToken'], result: 'late' });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'LEDGER.LEASE_LOST' });
  });

  it('marks a key ambiguous when the taking-over holder fails, until an operator resolves it', async () => {
    const app = await boot({ ...(await isolated()), operatorTokens: OPERATOR_TOKENS });
    const key = newKey();
    await reserve(app, key, 'agent-dies', 200);
    const takeover = await waitFor(
      async () => {
        const answer = await reserve(app, key, 'agent-2', 200);
        return answer.body['status'] === 'reserved' ? answer : undefined;
      },
      { what: 'a takeover', intervalMs: 50, timeoutMs: 10_000 },
    );
    // The new holder may not simply complete: the earlier attempt may have acted.
    const blind = await app.post('/v1/idempotency/completions', { key, leaseToken: takeover.body['leaseToken'], result: 'x' });
    expect(blind.status).toBe(409);
    expect(blind.body).toMatchObject({ code: 'LEDGER.KEY_AMBIGUOUS' });
    const failed = await app.post('/v1/idempotency/failures', { key, leaseToken: takeover.body['leaseToken'], code: 'TOOL.TIMEOUT', retryable: true });
    expect(failed.status).toBe(200);
    expect(failed.body).toEqual({ status: 'failed', keyStatus: 'ambiguous' });

    expect((await reserve(app, key, 'agent-3')).body).toEqual({ status: 'ambiguous' });
    expect((await reserve(app, key, 'agent-4')).body).toEqual({ status: 'ambiguous' });

    // The operator names the key as the ledger stores it.
    const path = `/v1/idempotency/keys/${app.stored(key)}/resolution`;
    const anonymous = await app.anonymous.post(path, { decision: 're-execute' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await app.post(path, { decision: 're-execute' }, { authorization: `Bearer ${OPERATOR_TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect((await reserve(app, key, 'agent-5')).body).toEqual({ status: 'ambiguous' });

    const resolved = await app.post(path, { decision: 're-execute', comment: 'checked the payment provider' }, { authorization: `Bearer ${OPERATOR_TOKEN}` });
    expect(resolved.status).toBe(200);
    expect(resolved.body).toEqual({ status: 'resolved', decision: 're-execute' });
    const again = await app.post(path, { decision: 're-execute' }, { authorization: `Bearer ${OPERATOR_TOKEN}` });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'LEDGER.UNKNOWN_KEY' });
    expect((await reserve(app, key, 'agent-6')).body).toMatchObject({ status: 'reserved', takenOver: false });
  });

  it('records an operator mark-completed result, and refuses resolving a key that is not ambiguous', async () => {
    const app = await boot({ ...(await isolated()), operatorTokens: OPERATOR_TOKENS });
    const auth = { authorization: `Bearer ${OPERATOR_TOKEN}` };
    const key = newKey();
    await reserve(app, key, 'agent-dies', 200);
    const takeover = await waitFor(async () => {
      const answer = await reserve(app, key, 'agent-2', 200);
      return answer.body['status'] === 'reserved' ? answer : undefined;
    }, { intervalMs: 50, timeoutMs: 10_000 });
    await app.post('/v1/idempotency/failures', { key, leaseToken: takeover.body['leaseToken'], code: 'TOOL.CRASHED', retryable: false });
    const resolved = await app.post(`/v1/idempotency/keys/${app.stored(key)}/resolution`, { decision: 'mark-completed', result: { refundId: 'R-9' } }, auth);
    expect(resolved.status).toBe(200);
    expect((await reserve(app, key)).body).toEqual({ status: 'completed', result: { refundId: 'R-9' } });

    const pending = newKey();
    await reserve(app, pending);
    const notAmbiguous = await app.post(`/v1/idempotency/keys/${app.stored(pending)}/resolution`, { decision: 're-execute' }, auth);
    // An agent's key is not an operator's token.
    const byAgent = await app.post(`/v1/idempotency/keys/${app.stored(pending)}/resolution`, { decision: 're-execute' });
    expect(byAgent.status).toBe(401);
    expect(notAmbiguous.status).toBe(409);
    expect(notAmbiguous.body).toMatchObject({ code: 'LEDGER.NOT_AMBIGUOUS' });
  });

  it('refuses every resolution when no operator is configured', async () => {
    const app = await boot(await isolated());
    const answer = await app.post(`/v1/idempotency/keys/${newKey()}/resolution`, { decision: 're-execute' }, { authorization: `Bearer ${OPERATOR_TOKEN}` });
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ code: 'LEDGER.UNAUTHORIZED' });
  });

  it('lets the taking-over holder reconcile: not applied keeps a clean lease, already applied records the result', async () => {
    const app = await boot(await isolated());
    const takeOver = async (key: string) => {
      await reserve(app, key, 'agent-dies', 200);
      return waitFor(async () => {
        const answer = await reserve(app, key, 'agent-2', 200);
        return answer.body['status'] === 'reserved' ? answer : undefined;
      }, { intervalMs: 50, timeoutMs: 10_000 });
    };
    const [k1, k2] = [newKey(), newKey()];
    const t1 = await takeOver(k1);
    const notApplied = await app.post('/v1/idempotency/reconciliations', { key: k1, leaseToken: t1.body['leaseToken'], outcome: 'not-applied' });
    expect(notApplied.body).toEqual({ status: 'reserved', leaseToken: t1.body['leaseToken'] });
    expect((await app.post('/v1/idempotency/completions', { key: k1, leaseToken: t1.body['leaseToken'], result: 'done' })).status).toBe(200);
    expect((await reserve(app, k1)).body).toEqual({ status: 'completed', result: 'done' });

    const t2 = await takeOver(k2);
    const applied = await app.post('/v1/idempotency/reconciliations', { key: k2, leaseToken: t2.body['leaseToken'], outcome: 'already-applied', result: { refundId: 'R-2' } });
    expect(applied.body).toEqual({ status: 'completed' });
    expect((await reserve(app, k2)).body).toEqual({ status: 'completed', result: { refundId: 'R-2' } });
  });

  it('frees a key after a failure that was not a takeover', async () => {
    const app = await boot(await isolated());
    const key = newKey();
    const { body } = await reserve(app, key);
    const failed = await app.post('/v1/idempotency/failures', { key, leaseToken: body['leaseToken'], code: 'TOOL.HTTP_500', retryable: true });
    expect(failed.body).toEqual({ status: 'failed', keyStatus: 'free' });
    expect((await reserve(app, key, 'agent-2')).body).toMatchObject({ status: 'reserved', takenOver: false });
    const stale = await app.post('/v1/idempotency/failures', { key, leaseToken: body['leaseToken'], code: 'TOOL.HTTP_500', retryable: true });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ code: 'LEDGER.LEASE_LOST' });
  });

  it('rebuilds its state from the log on restart and gives the same answers', async () => {
    const isolation = await isolated();
    const first = await boot(isolation);
    const [done, held] = [newKey(), newKey()];
    const r1 = await reserve(first, done);
    await first.post('/v1/idempotency/completions', { key: done, leaseToken: r1.body['leaseToken'], result: { n: 1 } });
    const r2 = await reserve(first, held, 'agent-1', 600_000);
    const before = [await reserve(first, done), await reserve(first, held)].map((a) => a.body['status']);
    const stateBefore = JSON.stringify([...first.engine.view().keys].sort(([x], [y]) => x.localeCompare(y)));
    await stop(first);

    const second = await boot(isolation);
    expect(JSON.stringify([...second.engine.view().keys].sort(([x], [y]) => x.localeCompare(y)))).toEqual(stateBefore);
    expect((await reserve(second, done)).body).toEqual({ status: 'completed', result: { n: 1 } });
    expect((await reserve(second, held)).body).toMatchObject({ status: 'pending' });
    expect(before).toEqual(['completed', 'pending']);
    // The lease still counts after the restart: the log, not the process, holds it.
    const resumed = await second.post('/v1/idempotency/completions', { key: held, leaseToken: r2.body['leaseToken'], result: 'after restart' });
    expect(resumed.status).toBe(200);
    expect((await reserve(second, held)).body).toEqual({ status: 'completed', result: 'after restart' });
  });

  it('answers 503 LEDGER.UNAVAILABLE past the decision deadline, and hands an orphaned reservation back', async () => {
    const isolation = await isolated();
    const hasty = await boot({ ...isolation, decisionDeadlineMs: 1 });
    const key = newKey();
    const answer = await reserve(hasty, key);
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ code: 'LEDGER.UNAVAILABLE', retryable: true });
    expect(answer.headers.get('retry-after')).toBe('1');
    // The reservation may have landed after the writer gave up: nobody holds it, so it is released.
    await waitFor(() => (hasty.engine.status().orphansReleased === 1 && hasty.engine.key(hasty.stored(key)) === undefined ? true : undefined), {
      what: 'the orphaned reservation released',
      timeoutMs: 10_000,
    });
    await stop(hasty);
    const patient = await boot(isolation);
    expect((await reserve(patient, key)).body).toMatchObject({ status: 'reserved', takenOver: false });
  });
});

describe('failing closed', () => {
  it('answers 503 while the projection cannot be written, and decides again once it can', async () => {
    const isolation = await isolated();
    const app = await boot({ ...isolation, decisionDeadlineMs: 500 });
    const key = newKey();
    const sql = new DataSource({ type: 'postgres', url: database.url, logging: ['error'] });
    await sql.initialize();
    const blocker = sql.createQueryRunner();
    try {
      await blocker.startTransaction();
      await blocker.query(`LOCK TABLE ${isolation.schema}.keys IN ACCESS EXCLUSIVE MODE`);
      const blocked = await reserve(app, key);
      expect(blocked.status).toBe(503);
      expect(blocked.body).toMatchObject({ code: 'LEDGER.UNAVAILABLE' });
    } finally {
      if (blocker.isTransactionActive) await blocker.rollbackTransaction();
      await blocker.release();
      await sql.destroy();
    }
    // The fold had accepted the reservation nobody was told about: it is handed back, then won again.
    await waitFor(() => (app.engine.status().orphansReleased === 1 && app.engine.key(app.stored(key)) === undefined ? true : undefined), { what: 'the orphan released', timeoutMs: 10_000 });
    expect((await reserve(app, key)).body).toMatchObject({ status: 'reserved' });
    expect((await app.get(`/v1/idempotency/keys/${key}`)).body).toMatchObject({ status: 'pending' });
  });
});

describe('requests over HTTP', () => {
  it('answers 400 naming the invalid fields without echoing what was sent', async () => {
    const app = await boot(await isolated());
    const secret = 'sk-live-should-never-be-echoed';
    const answer = await app.post('/v1/idempotency/reservations', { key: secret, connectorId: '', holder: 'a', pendingTtlMs: -5 });
    expect(answer.status).toBe(400);
    expect(answer.body['code']).toBe('LEDGER.INVALID_REQUEST');
    const fields = (answer.body['details'] as { fields: { field: string }[] }).fields.map((f) => f.field);
    expect(fields).toEqual(expect.arrayContaining(['key', 'connectorId', 'pendingTtlMs']));
    expect(answer.text).not.toContain(secret);

    const malformed = await app.post('/v1/idempotency/completions', `{"key": "${secret}",`);
    expect(malformed.status).toBe(400);
    expect(malformed.text).not.toContain(secret);
    expect(malformed.body).toMatchObject({ code: 'HTTP.BAD_REQUEST' });

    const oversized = await app.post('/v1/idempotency/completions', { key: secret.repeat(10_000) });
    expect(oversized.status).toBe(413);
    expect(oversized.body).toMatchObject({ code: 'HTTP.PAYLOAD_TOO_LARGE' });
    expect(oversized.text).not.toContain(secret);

    const badKey = await app.get(`/v1/idempotency/keys/${secret}`);
    expect(badKey.status).toBe(400);
    expect(badKey.text).not.toContain(secret);
    const nowhere = await app.get(`/v1/nowhere/${secret}`);
    expect(nowhere.status).toBe(404);
    expect(nowhere.text).not.toContain(secret);
  });

  it('reports applied offsets and counts on /v1/ledger/status and keeps /health', async () => {
    const app = await boot(await isolated());
    await reserve(app, newKey());
    const status = await app.get('/v1/ledger/status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ phase: 'running', keys: 1, budgets: 0 });
    const applied = status.body['appliedOffsets'] as Record<string, string>;
    expect(Object.values(applied).reduce((n, o) => n + Number(o), 0)).toBe(1);
    expect((await app.get('/health')).body).toMatchObject({ status: 'ok' });
  });
});

describe('forged ledger outcomes', () => {
  it('ignores a reservation the ledger service did not sign, reports it, and lets the real claimant win', async () => {
    const options = await isolated();
    const app = await boot(options);
    const key = newKey();
    const stored = app.stored(key);
    // Someone who can write the ledger topic claims a key: unsigned, then with a key of its own. (ACLs keep
    // agents off this topic altogether; a leaked service credential would not be, so the fold checks too.)
    const producer = await EventProducer.connect(kafka, { namespace: options.namespace });
    try {
      const claim = createEvent(LedgerKeyReservedV1, { source: 'guard:rogue', tenant: 'acme', subject: stored }, { key: stored, connectorId: 'refunds', leaseToken: randomUUID(), holder: 'rogue', pendingTtlMs: 3_600_000 });
      await producer.publish('ledger', claim);
      await producer.publish('ledger', signEvent(claim, testSigningKey('ledger', 'ledger-test')));
    } finally {
      await producer.close();
    }
    await waitFor(async () => {
      const found: DecisionRecorded[] = [];
      await replayTopic(kafka, 'audit', { namespace: options.namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && found.push(r.event)) });
      const hits = found.filter((e) => e.payload.code === 'SECURITY.UNTRUSTED_GRANT' && e.payload.boundary === 'ledger');
      return hits.length === 2 ? hits : undefined;
    }, { what: 'the security events' });
    expect(app.engine.status().untrustedGrants).toBe(2);
    expect(app.engine.key(stored)).toBeUndefined();
    const won = await reserve(app, key);
    expect(won.status).toBe(200);
    expect(won.body).toMatchObject({ status: 'reserved', takenOver: false });
  });

  it('ignores a forged expiry: a completed key stays completed, so its call is not run again', async () => {
    const options = await isolated();
    const app = await boot(options);
    const key = newKey();
    const won = await reserve(app, key);
    expect((await app.post('/v1/idempotency/completions', { key, leaseToken: won.body['leaseToken'], result: { refunded: 20 } })).status).toBe(200);
    // An expiry would free the key for a second refund: only the ledger service may append one.
    const producer = await EventProducer.connect(kafka, { namespace: options.namespace });
    try {
      const expiry = createEvent(LedgerKeyExpiredV1, { source: 'guard:rogue', tenant: 'acme', subject: app.stored(key) }, { key: app.stored(key), before: Date.now() + 3_600_000 });
      await producer.publish('ledger', expiry);
      await producer.publish('ledger', signEvent(expiry, testSigningKey('ledger', 'ledger-test')));
    } finally {
      await producer.close();
    }
    await waitFor(() => (app.engine.status().untrustedGrants === 2 ? true : undefined), { what: 'both forgeries ignored' });
    expect(app.engine.key(app.stored(key))).toMatchObject({ status: 'completed' });
    expect((await reserve(app, key)).body).toMatchObject({ status: 'completed', result: { refunded: 20 } });
  });
});
