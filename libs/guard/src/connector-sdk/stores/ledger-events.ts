import { randomUUID } from 'node:crypto';
import { createEvent, type JsonValue, LedgerKeyCompletedV1, LedgerKeyFailedV1, LedgerKeyReservedV1, LedgerRateConsumedV1 } from '@gatehouse/contracts';
import { type LedgerEvent } from '@gatehouse/ledger';

// The ledger events the in-memory stores fold on every call, built without a zod pass when that
// pass could not fail. The codec (`createEvent`) checks every field; here the fields the store
// makes itself need no check (a fresh id and time, the constant source and tenant, lease and
// claim tokens from randomUUID), and the fields a caller hands the store's public methods are
// checked by the precompiled tests below, each at least as strict as its schema. A value one of
// them refuses is built by `createEvent` itself: a malformed value fails with the codec's own
// ContractError, exactly as before, and the fast path never decides that anything is valid
// that the schema would refuse. `ledger-events.spec.ts` holds both promises.

type Event<T extends LedgerEvent['type']> = Extract<LedgerEvent, { type: T }>;

const SOURCE = 'guard:in-memory-ledger';
const TENANT = 'local';
/** `LedgerKey` and `budgetKey` of the ledger contract: a hex sha-256. */
const HEX_SHA256 = /^[\da-f]{64}$/;
/** A lowercase RFC 9562 UUID (versions 1-8): a subset of what the contract's `z.uuid()` accepts. */
const UUID = /^[\da-f]{8}-[\da-f]{4}-[1-8][\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/;

const isKey = (value: unknown): value is string => typeof value === 'string' && HEX_SHA256.test(value);
const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
const isNonEmpty = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
/** `z.number().int().positive()`: zod's int is a safe integer. */
const isPositiveInt = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;

// The time as the codec writes it (`new Date().toISOString()`), formatted once per millisecond:
// a call folds three events, usually within one.
let clockMs = Number.NaN;
let clockIso = '';

/**
 * The envelope the codec would fill in: a fresh id and time, the store's constant source; or
 * undefined when the clock's text is not the schema's datetime (a year past 9999), which the
 * codec then refuses as it always did.
 */
function envelope(subject: string): { id: string; time: string; source: string; tenant: string; subject: string } | undefined {
  const now = Date.now();
  if (now !== clockMs) {
    clockMs = now;
    clockIso = new Date(now).toISOString();
  }
  return clockIso.length === 24 ? { id: randomUUID(), time: clockIso, source: SOURCE, tenant: TENANT, subject } : undefined;
}

/** `LedgerKeyReserved` for `key`, held by `holder` under the store's fresh `leaseToken`. */
export function keyReserved(key: string, leaseToken: string, holder: string, pendingTtlMs: number): Event<'LedgerKeyReserved'> {
  const payload = { key, connectorId: TENANT, leaseToken, holder, pendingTtlMs };
  const head = envelope(key);
  if (head === undefined || !isKey(key) || !isUuid(leaseToken) || !isNonEmpty(holder) || !isPositiveInt(pendingTtlMs)) {
    return createEvent(LedgerKeyReservedV1, { source: SOURCE, tenant: TENANT, subject: key }, payload);
  }
  return { ...head, type: 'LedgerKeyReserved', version: 1, payload };
}

/**
 * `LedgerKeyCompleted` recording a copy of `result`, a value `isJsonNative` has passed (so the
 * contract's `JsonValueSchema` accepts it): the store's own copy, so the caller cannot change it.
 */
export function keyCompleted(key: string, leaseToken: string, result: JsonValue | undefined): Event<'LedgerKeyCompleted'> {
  // The copy is `cloneJson`'s JSON round trip, its text kept for the check below.
  const text = result === undefined ? undefined : JSON.stringify(result);
  const payload = { key, leaseToken, ...(text === undefined ? {} : { result: JSON.parse(text) as JsonValue }) };
  // zod drops an own `__proto__` key where JSON keeps one: such a result takes the codec's path,
  // so what is recorded is what it recorded before (a string holding the word does too, harmlessly).
  const head = envelope(key);
  if (head === undefined || !isKey(key) || !isUuid(leaseToken) || text?.includes('"__proto__"') === true) {
    return createEvent(LedgerKeyCompletedV1, { source: SOURCE, tenant: TENANT, subject: key }, payload);
  }
  return { ...head, type: 'LedgerKeyCompleted', version: 1, payload };
}

/** `LedgerKeyFailed`: the holder of `leaseToken` gives the key back with `code`. */
export function keyFailed(key: string, leaseToken: string, code: string, retryable: boolean): Event<'LedgerKeyFailed'> {
  const payload = { key, leaseToken, code, retryable };
  const head = envelope(key);
  if (head === undefined || !isKey(key) || !isUuid(leaseToken) || !isNonEmpty(code) || typeof retryable !== 'boolean') {
    return createEvent(LedgerKeyFailedV1, { source: SOURCE, tenant: TENANT, subject: key }, payload);
  }
  return { ...head, type: 'LedgerKeyFailed', version: 1, payload };
}

/** `LedgerRateConsumed`: one claim, under a fresh claim id, on the budget `budgetKey`. */
export function rateConsumed(budgetKey: string, algorithm: 'fixed-window' | 'sliding-window', count: number, windowMs: number): Event<'LedgerRateConsumed'> {
  const payload = { budgetKey, claimId: randomUUID(), algorithm, count, windowMs };
  const head = envelope(budgetKey);
  if (head === undefined || !isKey(budgetKey) || (algorithm !== 'fixed-window' && algorithm !== 'sliding-window') || !isPositiveInt(count) || !isPositiveInt(windowMs)) {
    return createEvent(LedgerRateConsumedV1, { source: SOURCE, tenant: TENANT, subject: budgetKey }, payload);
  }
  return { ...head, type: 'LedgerRateConsumed', version: 1, payload };
}
