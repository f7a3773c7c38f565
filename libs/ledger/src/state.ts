import { type JsonValue, type Keyring } from '@gatehouse/contracts';

/**
 * Who holds an idempotency key, or what was recorded for it. `principal`: the authenticated agent
 * whose claim holds a pending key, or left an ambiguous one (absent for claims made before callers
 * authenticated); it is what the per-principal bound counts.
 */
export type KeyState =
  | {
      readonly status: 'pending';
      readonly leaseToken: string;
      readonly holder: string;
      readonly reservedAt: number;
      readonly pendingTtlMs: number;
      readonly connectorId: string;
      readonly ambiguous: boolean;
      readonly principal?: string;
    }
  | { readonly status: 'completed'; readonly leaseToken: string; readonly result: JsonValue | undefined; readonly completedAt: number; readonly connectorId: string }
  | { readonly status: 'ambiguous'; readonly since: number; readonly connectorId: string; readonly principal?: string };

/**
 * A shared budget: a fixed window's use, or a sliding window's admission times (log time).
 * `principal`: the agent whose admitted request created it (absent before callers authenticated).
 */
export type BudgetState =
  | { readonly algorithm: 'fixed-window'; readonly windowStart: number; readonly used: number; readonly count: number; readonly windowMs: number; readonly principal?: string }
  | { readonly algorithm: 'sliding-window'; readonly admitted: readonly number[]; readonly count: number; readonly windowMs: number; readonly principal?: string };

/** What the fold decided about one event: writers read their own event's verdict back. */
export type Verdict =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'rejected'; readonly reason: RejectionReason }
  | { readonly kind: 'admitted'; readonly remaining: number; readonly resetAt: number }
  | { readonly kind: 'refused'; readonly remaining: 0; readonly resetAt: number };

export type RejectionReason =
  | 'key-held' // a reservation that is still pending and not stale
  | 'key-completed'
  | 'key-ambiguous'
  | 'not-stale' // a takeover before the TTL ran out
  | 'lease-lost' // a late completion, failure or reconcile from a holder that was taken over
  | 'not-ambiguous'
  | 'unknown-key'
  | 'not-expired' // an expiry for a key that is not completed, or completed since `before`
  | 'untrusted-signature'; // not signed by a trusted key of the ledger service

/**
 * The fold's whole state. Owned by one fold and advanced in place (a replay of thousands of
 * keys must not copy maps per event); entries are frozen values. Replaying the same records
 * into a new state gives an equal state.
 */
export interface LedgerState {
  readonly keys: Map<string, KeyState>;
  readonly budgets: Map<string, BudgetState>;
  /**
   * Whose events count: the ledger service's public keys (every event on the ledger topic is an
   * outcome it grants), or `'in-process'` for a ledger that never reads a log — the guard's
   * in-memory stores, whose events only this process makes. Never `'in-process'` over a topic.
   */
  readonly trust: Keyring | 'in-process';
  /** Events the fold ignored for their signature. */
  readonly untrusted: { count: number };
  /** Per principal: its keys that are pending or ambiguous (what the service bounds). Derived from `keys`. */
  readonly openKeysByPrincipal: Map<string, number>;
  /** Per principal: the budgets it created (what the service bounds). Derived from `budgets`. */
  readonly budgetsByPrincipal: Map<string, number>;
}

/** A fresh, empty state trusting `trust`: the start of every replay. */
export function createLedgerState(trust: Keyring | 'in-process'): LedgerState {
  return { keys: new Map(), budgets: new Map(), trust, untrusted: { count: 0 }, openKeysByPrincipal: new Map(), budgetsByPrincipal: new Map() };
}
