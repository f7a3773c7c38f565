import { GatehouseError, type JsonSafe } from '@gatehouse/contracts';
import { type RejectionReason } from '@gatehouse/ledger';

/** The stable codes the ledger answers with; the HTTP edge maps each to a status. */
export type LedgerCode =
  | 'LEDGER.INVALID_REQUEST'
  | 'LEDGER.UNAUTHORIZED'
  | 'LEDGER.UNAUTHENTICATED'
  | 'LEDGER.FORBIDDEN'
  | 'LEDGER.PENDING_LIMIT'
  | 'LEDGER.BUDGET_LIMIT'
  | 'LEDGER.KEY_NOT_FOUND'
  | 'LEDGER.KEY_HELD'
  | 'LEDGER.KEY_COMPLETED'
  | 'LEDGER.KEY_AMBIGUOUS'
  | 'LEDGER.NOT_STALE'
  | 'LEDGER.LEASE_LOST'
  | 'LEDGER.NOT_AMBIGUOUS'
  | 'LEDGER.UNKNOWN_KEY'
  | 'LEDGER.NOT_EXPIRED'
  | 'LEDGER.UNAVAILABLE'
  | 'LEDGER.INTERNAL';

/** A use case's expected outcome: a value, or a coded refusal (never a thrown error). */
export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly code: LedgerCode };

export const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
export const refused = <T>(code: LedgerCode): Outcome<T> => ({ ok: false, code });

/** The fold's rejection reason as the code a caller sees. */
export function codeForRejection(reason: RejectionReason): LedgerCode {
  switch (reason) {
    case 'key-held':
      return 'LEDGER.KEY_HELD';
    case 'key-completed':
      return 'LEDGER.KEY_COMPLETED';
    case 'key-ambiguous':
      return 'LEDGER.KEY_AMBIGUOUS';
    case 'not-stale':
      return 'LEDGER.NOT_STALE';
    case 'lease-lost':
      return 'LEDGER.LEASE_LOST';
    case 'not-ambiguous':
      return 'LEDGER.NOT_AMBIGUOUS';
    case 'unknown-key':
      return 'LEDGER.UNKNOWN_KEY';
    case 'not-expired':
      return 'LEDGER.NOT_EXPIRED';
    case 'untrusted-signature':
      // Our own event failed our own keyring: a key that is not trusted was configured. Start-up refuses that.
      return 'LEDGER.INTERNAL';
    default: {
      const exhaustive: never = reason;
      return exhaustive;
    }
  }
}

const MESSAGES: Record<LedgerCode, string> = {
  'LEDGER.INVALID_REQUEST': 'the request is invalid',
  'LEDGER.UNAUTHORIZED': 'an operator token is required',
  'LEDGER.UNAUTHENTICATED': "an agent's API key is required",
  'LEDGER.FORBIDDEN': 'the caller may not act for this tenant',
  'LEDGER.PENDING_LIMIT': 'the caller holds as many pending keys as it may: complete or fail some first',
  'LEDGER.BUDGET_LIMIT': 'the caller created as many budgets as it may',
  'LEDGER.KEY_NOT_FOUND': 'the ledger has no record of this key',
  'LEDGER.KEY_HELD': 'the key is held by a pending reservation',
  'LEDGER.KEY_COMPLETED': 'the key is already completed',
  'LEDGER.KEY_AMBIGUOUS': 'the key is ambiguous: reconcile or ask an operator first',
  'LEDGER.NOT_STALE': 'the reservation is not stale yet',
  'LEDGER.LEASE_LOST': 'the lease was lost to a takeover or is not the current one',
  'LEDGER.NOT_AMBIGUOUS': 'the key is not ambiguous',
  'LEDGER.UNKNOWN_KEY': 'the ledger has no reservation for this key',
  'LEDGER.NOT_EXPIRED': 'the key is not a completion past the retention',
  'LEDGER.UNAVAILABLE': 'the ledger could not confirm a decision in time',
  'LEDGER.INTERNAL': 'the ledger failed',
};

/** The ledger's thrown error: a stable code and a static message, never a request value. */
export class LedgerError extends GatehouseError {
  constructor(code: LedgerCode, details: Record<string, JsonSafe> = {}, cause?: unknown, message: string = MESSAGES[code]) {
    super(code, message, {
      category: categoryOf(code),
      // A bound frees up as the caller's keys complete: worth asking again later, unlike a refusal of who it is.
      retryable: code === 'LEDGER.UNAVAILABLE' || code === 'LEDGER.PENDING_LIMIT',
      details,
      ...(cause === undefined ? {} : { cause }),
    });
    this.name = 'LedgerError';
  }
}

function categoryOf(code: LedgerCode): GatehouseError['category'] {
  switch (code) {
    case 'LEDGER.INVALID_REQUEST':
    case 'LEDGER.KEY_NOT_FOUND':
      return 'validation';
    case 'LEDGER.UNAUTHORIZED':
    case 'LEDGER.UNAUTHENTICATED':
    case 'LEDGER.FORBIDDEN':
      return 'security';
    case 'LEDGER.UNAVAILABLE':
      return 'unavailable';
    case 'LEDGER.INTERNAL':
      return 'internal';
    default:
      return 'conflict';
  }
}

/** Unwraps an outcome at the edge: a refusal becomes the thrown `LedgerError` the filter maps. */
export function answer<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw new LedgerError(outcome.code);
}
