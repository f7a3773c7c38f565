import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { replayTopic } from '@gatehouse/kafka';
import { applyLedgerEvent, createLedgerState, ledgerBudgetKeyOf } from '@gatehouse/ledger';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { type LedgerApp, startLedgerApp } from './testing/ledger-app.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';

let kafka: Kafka;
let database: TestDatabase;
const running: LedgerApp[] = [];
let schemaCount = 0;

beforeAll(async () => {
  kafka = testKafka('ledger-rate-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
});

afterAll(async () => {
  await database.drop();
});

const newBudget = () => createHash('sha256').update(randomUUID()).digest('hex');

async function boot(): Promise<{ app: LedgerApp; namespace: string }> {
  schemaCount += 1;
  const namespace = await provisionedNamespace(kafka);
  const app = await startLedgerApp({ namespace, schema: `ledger_rate_t${schemaCount}`, databaseUrl: database.url });
  running.push(app);
  return { app, namespace };
}

interface RateAnswer {
  allowed: boolean;
  remaining: number;
  resetAt: number;
}

const consume = async (app: LedgerApp, budgetKey: string, algorithm: 'fixed-window' | 'sliding-window', count: number, windowMs: number) => {
  const answer = await app.post<RateAnswer>('/v1/rate/consumptions', { budgetKey, algorithm, count, windowMs });
  expect(answer.status).toBe(200);
  return answer.body;
};

/** The log times of the admitted requests on `budgetKey`, re-folded from the topic as any replica would. */
async function admittedLogTimes(namespace: string, budgetKey: string): Promise<{ admitted: number[]; refused: number }> {
  const state = createLedgerState(TEST_KEYRING);
  const admitted: number[] = [];
  let refused = 0;
  await replayTopic(kafka, 'ledger', {
    namespace,
    onRecord: ({ event, logTime }) => {
      const verdict = applyLedgerEvent(state, event, logTime.getTime());
      if (event.type !== 'LedgerRateConsumed' || event.payload.budgetKey !== ledgerBudgetKeyOf('acme', budgetKey)) return;
      if (verdict.kind === 'admitted') admitted.push(logTime.getTime());
      else refused += 1;
    },
  });
  return { admitted: admitted.sort((a, b) => a - b), refused };
}

/** The most admissions inside any half-open interval [t, t + windowMs). */
function maxInAnyWindow(times: readonly number[], windowMs: number): number {
  let most = 0;
  for (let i = 0; i < times.length; i += 1) {
    let n = 0;
    for (let j = i; j < times.length && times[j]! < times[i]! + windowMs; j += 1) n += 1;
    most = Math.max(most, n);
  }
  return most;
}

describe('shared rate limits over HTTP', () => {
  it('fixed window: never admits more than the budget in a window, and a refusal consumes nothing', async () => {
    const { app, namespace } = await boot();
    const budget = newBudget();
    const answers = await Promise.all(Array.from({ length: 10 }, () => consume(app, budget, 'fixed-window', 3, 1_000)));
    const byWindow = new Map<number, number>();
    for (const a of answers) if (a.allowed) byWindow.set(a.resetAt, (byWindow.get(a.resetAt) ?? 0) + 1);
    expect([...byWindow.values()].every((n) => n <= 3)).toBe(true);
    expect(answers.filter((a) => !a.allowed).every((a) => a.remaining === 0)).toBe(true);
    const state = app.engine.view().budgets.get(ledgerBudgetKeyOf('acme', budget));
    expect(state?.algorithm).toBe('fixed-window');
    // Refused requests are on the log but did not count against the window.
    if (state?.algorithm === 'fixed-window') expect(state.used).toBe(byWindow.get(state.windowStart + state.windowMs));

    // A fresh window: the whole budget again, then a refusal.
    const lastReset = Math.max(...answers.map((a) => a.resetAt));
    await waitFor(() => (Date.now() > lastReset + 20 ? true : undefined), { intervalMs: 20, what: 'the next window' });
    const fresh: RateAnswer[] = [];
    for (let i = 0; i < 4; i += 1) fresh.push(await consume(app, budget, 'fixed-window', 3, 1_000));
    // Four quick requests early in a 1 s window land in that window.
    expect(fresh.every((a) => a.resetAt === fresh[0]!.resetAt)).toBe(true);
    expect(fresh.map((a) => a.allowed)).toEqual([true, true, true, false]);
    expect(fresh.map((a) => a.remaining)).toEqual([2, 1, 0, 0]);
    const { admitted, refused } = await admittedLogTimes(namespace, budget);
    expect(admitted.length + refused).toBe(14);
    expect(admitted.length).toBe([...answers, ...fresh].filter((a) => a.allowed).length);
  });

  it('sliding window: never admits more than the budget in any window-length interval, across a boundary too', async () => {
    const { app, namespace } = await boot();
    const budget = newBudget();
    const windowMs = 1_000;
    // A burst takes the whole budget at once...
    const burst = await Promise.all(Array.from({ length: 5 }, () => consume(app, budget, 'sliding-window', 3, windowMs)));
    expect(burst.filter((a) => a.allowed)).toHaveLength(3);
    const refusal = burst.find((a) => !a.allowed);
    expect(refusal).toBeDefined();
    // ...and callers keep asking across the next window boundaries, from three loops at once.
    const until = Date.now() + 2_600;
    const later: RateAnswer[] = [];
    await Promise.all(
      [0, 1, 2].map(async () => {
        while (Date.now() < until) later.push(await consume(app, budget, 'sliding-window', 3, windowMs));
      }),
    );
    const { admitted, refused } = await admittedLogTimes(namespace, budget);
    expect(admitted.length).toBe([...burst, ...later].filter((a) => a.allowed).length);
    expect(refused).toBe([...burst, ...later].filter((a) => !a.allowed).length);
    expect(admitted.length).toBeGreaterThanOrEqual(6);
    expect(maxInAnyWindow(admitted, windowMs)).toBeLessThanOrEqual(3);

    // The boundary: nothing more is admitted until the burst's oldest admission is a full window old,
    // which is exactly when the refusal said a unit would free up (refusals consumed nothing).
    const first = admitted[0]!;
    const fourth = admitted[3]!;
    expect(fourth).toBeGreaterThanOrEqual(first + windowMs);
    expect(refusal!.resetAt).toBe(first + windowMs);
  });

  it('keeps separate budgets apart and validates the request', async () => {
    const { app } = await boot();
    const [a, b] = [newBudget(), newBudget()];
    expect((await consume(app, a, 'fixed-window', 1, 60_000)).allowed).toBe(true);
    expect((await consume(app, a, 'fixed-window', 1, 60_000)).allowed).toBe(false);
    expect((await consume(app, b, 'fixed-window', 1, 60_000)).allowed).toBe(true);
    const bad = await app.post('/v1/rate/consumptions', { budgetKey: a, algorithm: 'token-bucket', count: 0, windowMs: 1.5 });
    expect(bad.status).toBe(400);
    const fields = (bad.body['details'] as { fields: { field: string }[] }).fields.map((f) => f.field).sort();
    expect(fields).toEqual(['algorithm', 'count', 'windowMs']);
    const tooMany = await app.post('/v1/rate/consumptions', { budgetKey: a, algorithm: 'sliding-window', count: 20_000, windowMs: 1_000 });
    expect(tooMany.status).toBe(400);
    expect(app.engine.view().budgets.size).toBe(2);
  });
});
