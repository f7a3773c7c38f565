import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { HealthReportSchema } from '@gatehouse/service-runtime';
import {
  createTestDatabase,
  documentedBody,
  documentedRoutes,
  type HttpAnswer,
  openApi31Problems,
  servedRoutes,
  type TestDatabase,
  undocumentedAnswers,
} from '@gatehouse/service-runtime/testing';
import { type z } from 'zod';
import { type LedgerApp, startLedgerApp } from '../testing/ledger-app.js';
import {
  CompleteKeyAnswerSchema,
  ConsumeRateAnswerSchema,
  EchoAnswerSchema,
  FailKeyAnswerSchema,
  KeyViewSchema,
  ReconcileKeyAnswerSchema,
  ReserveKeyAnswerSchema,
  ResolveKeyAnswerSchema,
} from './ledger-answers.js';
import { LEDGER_OPENAPI_DOCUMENT as DOCUMENT } from './openapi-document.js';

const OPERATOR_TOKEN = `op-token-${randomUUID()}`;
const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` };
let database: TestDatabase;
let app: LedgerApp;

beforeAll(async () => {
  database = await createTestDatabase();
  const namespace = await provisionedNamespace(testKafka('ledger-openapi-spec'));
  const operatorTokens = `alice:operator:${OPERATOR_TOKEN}`;
  app = await startLedgerApp({ namespace, databaseUrl: database.url, schema: 'ledger_openapi', operatorTokens });
});

afterAll(async () => {
  await app.close();
  await database.drop();
});

const newKey = () => createHash('sha256').update(randomUUID()).digest('hex');
const RESERVE = 'POST /v1/idempotency/reservations';
const reserve = (key: string, holder: string, pendingTtlMs = 60_000) =>
  app.post('/v1/idempotency/reservations', { key, connectorId: 'refunds', holder, pendingTtlMs });

/** The body of a documented success of `operation`, parsed by the schema its response was generated from. */
const answered = async <S extends z.ZodType>(operation: string, answer: Promise<HttpAnswer>, schema: S): Promise<z.infer<S>> =>
  documentedBody(DOCUMENT, operation, await answer, schema);

/** A lease on `key` taken over from a holder whose reservation went stale: an ambiguous lease. */
async function takenOver(key: string): Promise<string> {
  await reserve(key, 'agent-dies', 200);
  const answer = await waitFor(
    async () => {
      const taken = await answered(RESERVE, reserve(key, 'agent-2', 200), ReserveKeyAnswerSchema);
      return taken.status === 'reserved' ? taken : undefined;
    },
    { what: 'a takeover after the TTL', intervalMs: 50, timeoutMs: 10_000 },
  );
  expect(answer.takenOver).toBe(true);
  return answer.leaseToken;
}

describe('the idempotency ledger OpenAPI document', () => {
  it('is served without a credential and is a valid OpenAPI 3.1 document', async () => {
    const served = await app.anonymous.get('/openapi.json');
    expect(served.status).toBe(200);
    expect(await openApi31Problems(served.body)).toEqual([]);
    expect(served.body).toEqual(JSON.parse(JSON.stringify(DOCUMENT)));
  });

  it('describes exactly the routes the service serves', () => {
    expect(documentedRoutes(DOCUMENT)).toEqual(servedRoutes(app.app));
  });

  it('lists every status and code a route answers an anonymous caller, an empty body and an unreadable one', async () => {
    // and every secured route refuses the anonymous caller with 401
    const options = { pathValues: { key: newKey() }, credentials: { agent: app.agent.headers, operator } };
    const answers = await undocumentedAnswers(app.baseUrl, DOCUMENT, options);
    expect(answers).toEqual([]);
  });

  it('keeps agent keys and operator tokens apart, as the security of each operation says', async () => {
    const resolution = DOCUMENT.paths['/v1/idempotency/keys/{key}/resolution']?.post;
    expect(resolution?.security).toEqual([{ operator: [] }]);
    const byAgent = await app.post(`/v1/idempotency/keys/${newKey()}/resolution`, { decision: 're-execute' });
    expect(byAgent.status).toBe(401);
    const reservation = { key: newKey(), connectorId: 'refunds', holder: 'h', pendingTtlMs: 1_000 };
    const byOperator = await app.anonymous.post('/v1/idempotency/reservations', reservation, operator);
    expect(byOperator.status).toBe(401);
    expect(byOperator.body).toMatchObject({ code: 'LEDGER.UNAUTHENTICATED' });
  });

  it('answers every operation in its documented shape', async () => {
    const key = newKey();
    const reserved = await answered(RESERVE, reserve(key, 'agent-1'), ReserveKeyAnswerSchema);
    if (reserved.status !== 'reserved') throw new Error(`expected a reservation, got ${reserved.status}`);
    expect((await answered(RESERVE, reserve(key, 'agent-2'), ReserveKeyAnswerSchema)).status).toBe('pending');
    const view = await answered('GET /v1/idempotency/keys/{key}', app.get(`/v1/idempotency/keys/${key}`), KeyViewSchema);
    expect(view.status).toBe('pending');
    const completion = app.post('/v1/idempotency/completions', { key, leaseToken: reserved.leaseToken, result: { refundId: 'R-1' } });
    expect(await answered('POST /v1/idempotency/completions', completion, CompleteKeyAnswerSchema)).toEqual({ status: 'completed' });
    const replayed = await answered(RESERVE, reserve(key, 'agent-2'), ReserveKeyAnswerSchema);
    expect(replayed).toEqual({ status: 'completed', result: { refundId: 'R-1' } });

    const reconciled = newKey();
    const lease = await takenOver(reconciled);
    const reconciliation = app.post('/v1/idempotency/reconciliations', { key: reconciled, leaseToken: lease, outcome: 'not-applied' });
    const clean = await answered('POST /v1/idempotency/reconciliations', reconciliation, ReconcileKeyAnswerSchema);
    expect(clean).toEqual({ status: 'reserved', leaseToken: lease });

    const ambiguous = newKey();
    const leaseToken = await takenOver(ambiguous);
    const failure = app.post('/v1/idempotency/failures', { key: ambiguous, leaseToken, code: 'TOOL.CRASHED', retryable: false });
    const failed = await answered('POST /v1/idempotency/failures', failure, FailKeyAnswerSchema);
    expect(failed).toEqual({ status: 'failed', keyStatus: 'ambiguous' });
    expect(await answered(RESERVE, reserve(ambiguous, 'agent-3'), ReserveKeyAnswerSchema)).toEqual({ status: 'ambiguous' });
    const decision = { decision: 'mark-completed', result: null };
    const resolution = app.post(`/v1/idempotency/keys/${app.stored(ambiguous)}/resolution`, decision, operator);
    const resolved = await answered('POST /v1/idempotency/keys/{key}/resolution', resolution, ResolveKeyAnswerSchema);
    expect(resolved).toEqual({ status: 'resolved', decision: 'mark-completed' });

    const rate = app.post('/v1/rate/consumptions', { budgetKey: newKey(), algorithm: 'sliding-window', count: 2, windowMs: 60_000 });
    expect(await answered('POST /v1/rate/consumptions', rate, ConsumeRateAnswerSchema)).toMatchObject({ allowed: true, remaining: 1 });
    const echoed = await answered('POST /v1/ledger/echo', app.anonymous.post('/v1/ledger/echo', { a: 1 }), EchoAnswerSchema);
    expect(echoed).toEqual({ ok: true, bytes: 7 });
    expect((await answered('GET /health', app.anonymous.get('/health'), HealthReportSchema)).status).toBe('ok');
  });
});
