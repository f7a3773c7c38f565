import { randomUUID } from 'node:crypto';
import { createEvent, type JsonValue, LedgerKeyReservedV1, LedgerKeyTakenOverV1 } from '@gatehouse/contracts';
import { isStale, type KeyState, ledgerKeyOf } from '@gatehouse/ledger';
import { z } from 'zod';
import { type Caller, TenantName } from '../auth/agent-auth.js';
import { type Clock, type LedgerPort, reachedBound } from '../engine/ledger-port.js';
import { ok, type Outcome, refused } from '../errors.js';
import { IdentifierField, LedgerKeyField } from '../http/request-fields.js';
import { ledgerMeta } from '@gatehouse/ledger-projection';

/** At most a week: a holder that needs longer should not hold a key. */
const MAX_PENDING_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export const ReserveKeyRequest = z.object({
  /** Which of the caller's tenants (optional for an agent bound to one). */
  tenant: TenantName.optional(),
  key: LedgerKeyField,
  connectorId: IdentifierField,
  holder: IdentifierField,
  pendingTtlMs: z.number().int().positive().max(MAX_PENDING_TTL_MS),
});
export type ReserveKeyRequest = z.infer<typeof ReserveKeyRequest>;

export type ReserveKeyAnswer =
  | { readonly status: 'reserved'; readonly leaseToken: string; readonly takenOver: boolean }
  | { readonly status: 'completed'; readonly result?: JsonValue }
  | { readonly status: 'pending'; readonly retryAfterMs: number }
  | { readonly status: 'ambiguous' };

/** How often a caller waiting on someone else's reservation should ask again, at most. */
const MAX_RETRY_AFTER_MS = 250;
/** Appends per request when other writers keep winning; after that the caller is told to retry. */
const MAX_APPENDS = 3;

function pendingFor(current: Extract<KeyState, { status: 'pending' }>, now: number): ReserveKeyAnswer {
  const untilStale = current.reservedAt + current.pendingTtlMs - now;
  return { status: 'pending', retryAfterMs: Math.max(1, Math.min(untilStale, MAX_RETRY_AFTER_MS)) };
}

/** The answer the folded state gives without writing anything, or undefined when the key is free or stale. */
export function answerFromState(current: KeyState | undefined, now: number): ReserveKeyAnswer | undefined {
  if (current === undefined) return undefined;
  switch (current.status) {
    case 'completed':
      return current.result === undefined ? { status: 'completed' } : { status: 'completed', result: current.result };
    case 'ambiguous':
      return { status: 'ambiguous' };
    case 'pending':
      // Wall clock only decides whether a takeover is worth appending; the fold decides by log time.
      return isStale(current, now) ? undefined : pendingFor(current, now);
    default: {
      const exhaustive: never = current;
      return exhaustive;
    }
  }
}

/** What a reservation is decided with besides the request: the clock, and the caller's bound. */
export interface ReserveContext {
  readonly clock: Clock;
  /** Most keys one principal may hold pending or ambiguous. */
  readonly maxPendingKeys: number;
}

/** Whether appending a claim on `current` for `principal` would add to the keys it holds. */
const addsToHeld = (current: KeyState | undefined, principal: string) => current?.status !== 'pending' || current.principal !== principal;

/**
 * Reserves a key of the caller's tenant, or says who has it and what they recorded. A free key
 * gets a LedgerKeyReserved, a stale pending one a LedgerKeyTakenOver; either way the caller holds
 * the key only when the fold accepted its own event. When another writer's event came first, the
 * state the fold reached answers instead. A caller holding `maxPendingKeys` already is refused
 * (LEDGER.PENDING_LIMIT) before anything is appended; answers that need no append still come.
 */
export async function reserveKey(ledger: LedgerPort, caller: Caller, request: ReserveKeyRequest, context: ReserveContext): Promise<Outcome<ReserveKeyAnswer>> {
  const key = ledgerKeyOf(caller.tenant, request.key);
  for (let attempt = 0; attempt < MAX_APPENDS; attempt += 1) {
    const current = ledger.key(key);
    const known = answerFromState(current, context.clock.now());
    if (known) return ok(known);
    if (addsToHeld(current, caller.principal) && reachedBound(ledger.openKeys(caller.principal, key), context.maxPendingKeys)) return refused('LEDGER.PENDING_LIMIT');
    const leaseToken = randomUUID();
    const meta = ledgerMeta(key, caller.tenant);
    const { connectorId, holder, pendingTtlMs } = request;
    const principal = caller.principal;
    const event =
      current?.status === 'pending'
        ? createEvent(LedgerKeyTakenOverV1, meta, { key, previousLeaseToken: current.leaseToken, leaseToken, holder, pendingTtlMs, principal })
        : createEvent(LedgerKeyReservedV1, meta, { key, connectorId, leaseToken, holder, pendingTtlMs, principal });
    const verdict = await ledger.decide(event);
    if (verdict.kind === 'accepted') return ok({ status: 'reserved', leaseToken, takenOver: event.type === 'LedgerKeyTakenOver' });
    // Our clock ran ahead of the broker's: not stale by log time yet, so asking again now is pointless.
    if (verdict.kind === 'rejected' && verdict.reason === 'not-stale') break;
  }
  return ok(answerFromState(ledger.key(key), context.clock.now()) ?? { status: 'pending', retryAfterMs: MAX_RETRY_AFTER_MS });
}
