import { type BudgetState, type LedgerEvent, type KeyState, type Verdict } from '@gatehouse/ledger';

/** What the use cases need from the ledger: the folded state of a key, and a decision on an event. */
export interface LedgerPort {
  /** The key's state as this replica's fold has applied it (it may lag the log, never lead it). */
  key(key: string): KeyState | undefined;
  /** A budget's state as the fold has applied it. */
  budget(budgetKey: string): BudgetState | undefined;
  /**
   * Keys `principal` holds pending or left ambiguous, its claims still being decided included, in
   * the part of the ledger `key` belongs to; and that part's share of the bound (1 for a replica
   * that folds every partition; a scaled-out replica's partition holds 1/partitions of it).
   */
  openKeys(principal: string, key: string): { readonly held: number; readonly share: number };
  /** Budgets `principal` created, its requests that would create one still being decided included, in the part `budgetKey` belongs to, with its share. */
  budgetsOf(principal: string, budgetKey: string): { readonly held: number; readonly share: number };
  /**
   * Appends `event`, waits until the fold has applied its offset and returns the fold's verdict
   * on it. Throws LEDGER.UNAVAILABLE when that cannot be confirmed within the deadline.
   */
  decide(event: LedgerEvent): Promise<Verdict>;
}

/** Whether `count` reached its share of `limit` (a partition's share is rounded up, and at least one). */
export function reachedBound(count: { readonly held: number; readonly share: number }, limit: number): boolean {
  return count.held >= Math.max(1, Math.ceil(limit * count.share));
}

/** Wall-clock time, injectable in tests. Decisions use log time; only "is it worth a takeover?" uses this. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
