import { checkGrant, type Keyring, type TopicEvent } from '@gatehouse/contracts';
import { type BudgetState, createLedgerState, type KeyState, type LedgerState, type Verdict } from './state.js';

export type LedgerEvent = TopicEvent<'ledger'>;


const accepted: Verdict = Object.freeze({ kind: 'accepted' });
const reject = (reason: Extract<Verdict, { kind: 'rejected' }>['reason']): Verdict => Object.freeze({ kind: 'rejected', reason });

/** Counts `delta` for `principal` (none: a claim made before callers authenticated, not counted). */
function adjust(counts: Map<string, number>, principal: string | undefined, delta: number): void {
  if (principal === undefined) return;
  const next = (counts.get(principal) ?? 0) + delta;
  if (next > 0) counts.set(principal, next);
  else counts.delete(principal);
}

/** The principal a key counts against while it is open (pending or ambiguous). */
const openPrincipal = (state: KeyState | undefined): string | undefined => (state === undefined || state.status === 'completed' ? undefined : state.principal);

function setKey(state: LedgerState, key: string, next: KeyState | undefined): Verdict {
  // The per-principal counts move with every transition, so a replay derives the same counts.
  adjust(state.openKeysByPrincipal, openPrincipal(state.keys.get(key)), -1);
  adjust(state.openKeysByPrincipal, openPrincipal(next), 1);
  if (next === undefined) state.keys.delete(key);
  else state.keys.set(key, Object.freeze(next));
  return accepted;
}

function setBudget(state: LedgerState, key: string, next: BudgetState): void {
  if (!state.budgets.has(key)) adjust(state.budgetsByPrincipal, next.principal, 1);
  state.budgets.set(key, Object.freeze(next));
}

const byPrincipal = (principal: string | undefined): { principal?: string } => (principal === undefined ? {} : { principal });

/** Whether a pending reservation's TTL has run out at `at` (log append time, ms). */
export function isStale(current: Extract<KeyState, { status: 'pending' }>, at: number): boolean {
  return at >= current.reservedAt + current.pendingTtlMs;
}

/**
 * The ledger fold: advances `state` by one event and returns the verdict on it; deterministic
 * and total (a function of the records and their log append times only). Conflicts are settled
 * by log order — the first claim on a free key wins, a takeover wins only after the TTL by
 * the broker's append time, and a completion counts only from the current lease holder.
 * A rejected event changes nothing but is never an error: it is already on the log.
 */
export function applyLedgerEvent(state: LedgerState, event: LedgerEvent, logTime: number): Verdict {
  // Only the ledger service grants: an outcome it did not sign claims nothing.
  if (state.trust !== 'in-process' && !checkGrant(event, state.trust).trusted) {
    state.untrusted.count += 1;
    return reject('untrusted-signature');
  }
  switch (event.type) {
    case 'LedgerKeyReserved': {
      const p = event.payload;
      const current = state.keys.get(p.key);
      if (current?.status === 'completed') return reject('key-completed');
      if (current?.status === 'ambiguous') return reject('key-ambiguous');
      if (current?.status === 'pending') return reject('key-held');
      return setKey(state, p.key, {
        status: 'pending',
        leaseToken: p.leaseToken,
        holder: p.holder,
        reservedAt: logTime,
        pendingTtlMs: p.pendingTtlMs,
        connectorId: p.connectorId,
        ambiguous: false,
        ...byPrincipal(p.principal),
      });
    }
    case 'LedgerKeyTakenOver': {
      const p = event.payload;
      const current = state.keys.get(p.key);
      if (current?.status !== 'pending') return reject(current?.status === 'completed' ? 'key-completed' : current ? 'key-ambiguous' : 'unknown-key');
      if (current.leaseToken !== p.previousLeaseToken) return reject('lease-lost');
      if (!isStale(current, logTime)) return reject('not-stale');
      // The earlier holder may or may not have acted: the new holder inherits an ambiguous key.
      return setKey(state, p.key, {
        status: 'pending',
        leaseToken: p.leaseToken,
        holder: p.holder,
        reservedAt: logTime,
        pendingTtlMs: p.pendingTtlMs,
        connectorId: current.connectorId,
        ambiguous: true,
        ...byPrincipal(p.principal),
      });
    }
    case 'LedgerKeyCompleted': {
      const p = event.payload;
      const current = state.keys.get(p.key);
      if (current?.status !== 'pending' || current.leaseToken !== p.leaseToken) return reject(current ? 'lease-lost' : 'unknown-key');
      if (current.ambiguous) return reject('key-ambiguous');
      return setKey(state, p.key, { status: 'completed', leaseToken: p.leaseToken, result: p.result, completedAt: logTime, connectorId: current.connectorId });
    }
    case 'LedgerKeyFailed': {
      const p = event.payload;
      const current = state.keys.get(p.key);
      if (current?.status !== 'pending' || current.leaseToken !== p.leaseToken) return reject(current ? 'lease-lost' : 'unknown-key');
      // An ambiguous holder that walks away leaves the key ambiguous: never a silent re-run.
      if (current.ambiguous) return setKey(state, p.key, { status: 'ambiguous', since: logTime, connectorId: current.connectorId, ...byPrincipal(current.principal) });
      return setKey(state, p.key, undefined);
    }
    case 'LedgerKeyReconciled': {
      const p = event.payload;
      const current = state.keys.get(p.key);
      if (current?.status !== 'pending' || current.leaseToken !== p.leaseToken) return reject(current ? 'lease-lost' : 'unknown-key');
      if (!current.ambiguous) return reject('not-ambiguous');
      if (p.outcome === 'already-applied') {
        return setKey(state, p.key, { status: 'completed', leaseToken: p.leaseToken, result: p.result, completedAt: logTime, connectorId: current.connectorId });
      }
      return setKey(state, p.key, { ...current, ambiguous: false });
    }
    case 'LedgerKeyResolved': {
      const p = event.payload;
      const current = state.keys.get(p.key);
      if (current?.status !== 'ambiguous') return reject(current ? 'not-ambiguous' : 'unknown-key');
      if (p.decision === 'mark-completed') {
        return setKey(state, p.key, { status: 'completed', leaseToken: 'operator', result: p.result, completedAt: logTime, connectorId: current.connectorId });
      }
      return setKey(state, p.key, undefined);
    }
    case 'LedgerKeyExpired': {
      const p = event.payload;
      const current = state.keys.get(p.key);
      if (!current) return reject('unknown-key');
      // Only a completion older than `before`, and never one the log has not reached yet.
      if (current.status !== 'completed' || current.completedAt >= Math.min(p.before, logTime)) return reject('not-expired');
      return setKey(state, p.key, undefined);
    }
    case 'LedgerRateConsumed':
      return consume(state, event, logTime);
    // A checkpoint states what the fold of the records before it already has: nothing changes.
    // Only a start over a log whose beginning was deleted reads it (`restoreLedgerCheckpoints`).
    case 'LedgerCheckpoint':
      return accepted;
    default: {
      const exhaustive: never = event;
      return exhaustive;
    }
  }
}

function consume(state: LedgerState, event: Extract<LedgerEvent, { type: 'LedgerRateConsumed' }>, now: number): Verdict {
  const { budgetKey, algorithm, count, windowMs } = event.payload;
  const previous = state.budgets.get(budgetKey);
  // A budget counts against the principal that created it, whoever spends from it later.
  const creator = byPrincipal(previous === undefined ? event.payload.principal : previous.principal);
  if (algorithm === 'fixed-window') {
    const windowStart = now - (now % windowMs);
    const used = previous?.algorithm === 'fixed-window' && previous.windowStart === windowStart && previous.windowMs === windowMs ? previous.used : 0;
    const resetAt = windowStart + windowMs;
    // A refused request consumes nothing: the state does not change.
    if (used >= count) return { kind: 'refused', remaining: 0, resetAt };
    setBudget(state, budgetKey, { algorithm, windowStart, used: used + 1, count, windowMs, ...creator });
    return { kind: 'admitted', remaining: count - used - 1, resetAt };
  }
  // Sliding window log: admitted while fewer than `count` admissions fall in (now - windowMs, now].
  // Exact across boundaries, at the cost of keeping up to `count` times per budget.
  const recent = previous?.algorithm === 'sliding-window' && previous.windowMs === windowMs && previous.count === count ? previous.admitted.filter((t) => t > now - windowMs) : [];
  if (recent.length >= count) return { kind: 'refused', remaining: 0, resetAt: (recent[0] as number) + windowMs };
  const admitted = [...recent, now];
  setBudget(state, budgetKey, { algorithm, admitted, count, windowMs, ...creator });
  return { kind: 'admitted', remaining: count - admitted.length, resetAt: (admitted[0] as number) + windowMs };
}

/**
 * Puts the entries of a checkpoint into `state` (keys and budgets it does not hold yet), counting
 * them per principal as the fold's own transitions do: the state the fold had at the checkpoint.
 */
export function restoreEntries(state: LedgerState, keys: Iterable<readonly [string, KeyState]>, budgets: Iterable<readonly [string, BudgetState]>): void {
  for (const [key, entry] of keys) setKey(state, key, entry);
  for (const [key, entry] of budgets) setBudget(state, key, entry);
}

/** Folds records in offset order: the state any replica reaches from the same log. */
export function foldLedger(records: Iterable<{ event: LedgerEvent; logTime: number }>, trust: Keyring | 'in-process', state: LedgerState = createLedgerState(trust)): LedgerState {
  for (const { event, logTime } of records) applyLedgerEvent(state, event, logTime);
  return state;
}
