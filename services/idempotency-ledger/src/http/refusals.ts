import { type LedgerCode } from '../errors.js';

/** The refusals of who a caller is or how much it holds: what an operator watches for an agent gone wrong. */
export const COUNTED_REFUSALS = ['LEDGER.UNAUTHENTICATED', 'LEDGER.FORBIDDEN', 'LEDGER.PENDING_LIMIT', 'LEDGER.BUDGET_LIMIT'] as const satisfies readonly LedgerCode[];
export type CountedRefusal = (typeof COUNTED_REFUSALS)[number];

/**
 * How many requests this replica refused for each code since it started, shown on
 * `GET /v1/ledger/status`. Counts only: no caller, key or tenant is kept.
 */
export class LedgerRefusals {
  private readonly counts = new Map<CountedRefusal, number>();

  count(code: string): void {
    const counted = COUNTED_REFUSALS.find((c) => c === code);
    if (counted !== undefined) this.counts.set(counted, (this.counts.get(counted) ?? 0) + 1);
  }

  snapshot(): Record<CountedRefusal, number> {
    return Object.fromEntries(COUNTED_REFUSALS.map((c) => [c, this.counts.get(c) ?? 0])) as Record<CountedRefusal, number>;
  }
}
