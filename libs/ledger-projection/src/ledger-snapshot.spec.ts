// Issue 17: the ledger service starts from a snapshot of its fold. For random ledger logs (claims,
// completions, failures, takeovers, reconciliations, resolutions, expiries, budgets of both
// algorithms, forged events), a start from a snapshot taken after any record gives the same
// verdicts on what follows, and the same state, as the fold of the whole log.
import { describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import {
  createEvent,
  LedgerKeyCompletedV1,
  LedgerKeyExpiredV1,
  LedgerKeyFailedV1,
  LedgerKeyReconciledV1,
  LedgerKeyReservedV1,
  LedgerKeyResolvedV1,
  LedgerKeyTakenOverV1,
  LedgerRateConsumedV1,
  signEvent,
  type TopicEvent,
} from '@gatehouse/contracts';
import { type Random, seeded, TEST_KEYRING, TEST_KEYS, testSigningKey } from '@gatehouse/contracts/testing';
import { firstSnapshotMismatch } from '@gatehouse/kafka/testing';
import { LEDGER_SNAPSHOT_VERSION, ledgerProjection } from './ledger-projection.js';

type LedgerEvent = TopicEvent<'ledger'>;
const RUNS = Number(process.env['GATEHOUSE_SNAPSHOT_RUNS'] ?? 60);
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const FORGER = testSigningKey('ledger');

/** A random ledger log: a few keys and budgets, leases reused and lost, now and then a forged event. */
function randomLedgerLog(random: Random, length: number): { event: LedgerEvent; logTime: number }[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const leases: string[] = [randomUUID()];
  const log: { event: LedgerEvent; logTime: number }[] = [];
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  for (let i = 0; i < length; i += 1) {
    now += Math.floor(random() ** 2 * 5_000);
    const key = hex(`key-${Math.floor(random() * 4)}`);
    const budgetKey = hex(`budget-${Math.floor(random() * 2)}`);
    const lease = random() < 0.5 ? pick(leases) : randomUUID();
    leases.push(lease);
    const meta = { source: 'service:idempotency-ledger', tenant: 'acme', subject: key };
    const principal = random() < 0.7 ? { principal: pick(['agent:billing', 'agent:support']) } : {};
    const roll = random();
    const unsigned =
      roll < 0.2
        ? createEvent(LedgerKeyReservedV1, meta, { key, connectorId: 'payments.refund', leaseToken: lease, holder: 'h', pendingTtlMs: 1 + Math.floor(random() * 4_000), ...principal })
        : roll < 0.32
          ? createEvent(LedgerKeyCompletedV1, meta, { key, leaseToken: lease, ...(random() < 0.8 && { result: { refund: `r-${i}` } }) })
          : roll < 0.4
            ? createEvent(LedgerKeyFailedV1, meta, { key, leaseToken: lease, code: 'X', retryable: random() < 0.5 })
            : roll < 0.5
              ? createEvent(LedgerKeyTakenOverV1, meta, { key, previousLeaseToken: pick(leases), leaseToken: randomUUID(), holder: 'h2', pendingTtlMs: 1 + Math.floor(random() * 4_000), ...principal })
              : roll < 0.56
                ? createEvent(LedgerKeyReconciledV1, meta, { key, leaseToken: lease, outcome: pick(['already-applied', 'not-applied'] as const), ...(random() < 0.5 && { result: { seen: i } }) })
                : roll < 0.62
                  ? createEvent(LedgerKeyResolvedV1, meta, { key, decision: pick(['re-execute', 'mark-completed'] as const), operator: { id: 'op:1', role: 'operator' } })
                  : roll < 0.68
                    ? createEvent(LedgerKeyExpiredV1, meta, { key, before: now - Math.floor(random() * 10_000) })
                    : createEvent(LedgerRateConsumedV1, { ...meta, subject: budgetKey }, { budgetKey, claimId: randomUUID(), algorithm: pick(['fixed-window', 'sliding-window'] as const), count: 1 + Math.floor(random() * 3), windowMs: 1 + Math.floor(random() * 8_000), ...principal });
    // Every ledger event is an outcome the service grants; one in twenty is forged.
    log.push({ event: signEvent(unsigned, random() < 0.05 ? FORGER : TEST_KEYS.ledger), logTime: now });
  }
  return log;
}

describe('the ledger fold from a snapshot', () => {
  const fold = ledgerProjection(TEST_KEYRING).fold;

  it(`reaches the state and verdicts of the whole log from a snapshot after any record (${RUNS} random logs)`, () => {
    const random = seeded(Number(process.env['GATEHOUSE_FUZZ_SEED'] ?? 17));
    const logs = Array.from({ length: RUNS }, () => randomLedgerLog(random, 5 + Math.floor(random() * 40)));
    expect(firstSnapshotMismatch(fold, logs)).toBeUndefined();
    // The logs must reach completed keys and budgets, not only refused claims.
    const reached = logs.map((log) => {
      const whole = fold.create();
      for (const { event, logTime } of log) fold.apply(whole, event, logTime);
      return [...whole.keys.values()].filter((k) => k.status === 'completed').length + whole.budgets.size;
    });
    expect(reached.reduce((a, b) => a + b, 0)).toBeGreaterThan(RUNS);
    expect(fold.snapshot?.version).toBe(LEDGER_SNAPSHOT_VERSION);
  });
});
