import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { ContractError, createEvent, type JsonValue, LedgerKeyCompletedV1, LedgerKeyFailedV1, LedgerKeyReservedV1, LedgerRateConsumedV1 } from '@gatehouse/contracts';
import { InMemoryIdempotencyStore } from './in-memory-idempotency-store.js';
import { InMemoryRateLimitStore } from './in-memory-rate-limit-store.js';
import { keyCompleted, keyFailed, keyReserved, rateConsumed } from './ledger-events.js';

const key = 'a'.repeat(64);
const lease = randomUUID();
const meta = { source: 'guard:in-memory-ledger', tenant: 'local', subject: key };

/** The codec's error for a call, or undefined when it built the event. */
function codecError(build: () => unknown): { code: string; message: string; field: unknown } | undefined {
  try {
    build();
    return undefined;
  } catch (error) {
    if (!(error instanceof ContractError)) throw error;
    return { code: error.code, message: error.message, field: error.details['field'] };
  }
}

/** The envelope fields that differ from one build to the next. */
const fresh = <E extends { id: string; time: string }>(event: E): Omit<E, 'id' | 'time'> => {
  const { id: _id, time: _time, ...rest } = event;
  return rest;
};

describe('ledger events built without a zod pass', () => {
  it('are the events the codec builds, and the schema takes them unchanged', () => {
    const results: (JsonValue | undefined)[] = [undefined, null, 0, 'x', [1, [2, { b: 'c' }]], { nested: { deep: [true, false, -1.5e300] }, '10': 1, '9': 2 }];
    for (const result of results) {
      const built = keyCompleted(key, lease, result);
      expect(fresh(built)).toEqual(fresh(createEvent(LedgerKeyCompletedV1, meta, { key, leaseToken: lease, ...(result === undefined ? {} : { result }) })));
      expect(LedgerKeyCompletedV1.parse(built)).toEqual(built);
    }
    const reserved = keyReserved(key, lease, 'holder', 1_000);
    expect(fresh(reserved)).toEqual(fresh(createEvent(LedgerKeyReservedV1, meta, { key, connectorId: 'local', leaseToken: lease, holder: 'holder', pendingTtlMs: 1_000 })));
    expect(LedgerKeyReservedV1.parse(reserved)).toEqual(reserved);
    const failed = keyFailed(key, lease, 'CONNECTOR.X', true);
    expect(fresh(failed)).toEqual(fresh(createEvent(LedgerKeyFailedV1, meta, { key, leaseToken: lease, code: 'CONNECTOR.X', retryable: true })));
    expect(LedgerKeyFailedV1.parse(failed)).toEqual(failed);
    for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
      const consumed = rateConsumed(key, algorithm, 3, 60_000);
      expect(LedgerRateConsumedV1.parse(consumed)).toEqual(consumed);
      expect(fresh(consumed)).toEqual(fresh(createEvent(LedgerRateConsumedV1, meta, { ...consumed.payload })));
    }
  });

  it('copies a recorded result: a later change to the caller’s value changes nothing', () => {
    const result = { a: [1] };
    const built = keyCompleted(key, lease, result);
    result.a.push(2);
    expect(built.payload.result).toEqual({ a: [1] });
  });

  it('records a result with an own "__proto__" key as the codec does', () => {
    const result = JSON.parse('{"__proto__":{"admin":true},"a":1}') as JsonValue;
    const built = keyCompleted(key, lease, result);
    expect(fresh(built)).toEqual(fresh(createEvent(LedgerKeyCompletedV1, meta, { key, leaseToken: lease, result })));
    expect(Object.keys(built.payload.result as object)).toEqual(['a']);
  });

  it('leaves a value its checks refuse but the schema accepts to the codec, which builds it', () => {
    // An uppercase UUID is a valid `z.uuid()`; the fast check only knows lowercase ones.
    const upper = lease.toUpperCase();
    expect(keyCompleted(key, upper, 1).payload.leaseToken).toBe(upper);
    expect(keyFailed(key, upper, 'C', false).payload.leaseToken).toBe(upper);
  });

  it('never writes a time the schema refuses: past year 9999 the codec builds the event', () => {
    // Date.now at year 275760: toISOString would write "+275760-…", which the contract refuses.
    const now = Date.now;
    Date.now = () => 8.64e15;
    try {
      const built = keyReserved(key, lease, 'h', 1);
      expect(built.time).not.toMatch(/^\+/);
      expect(LedgerKeyReservedV1.parse(built)).toEqual(built);
    } finally {
      Date.now = now;
    }
  });

  // Each check the fast path makes instead of the codec: a value it refuses fails as the codec fails.
  const malformedKeys: unknown[] = ['', 'A'.repeat(64), 'a'.repeat(63), 'a'.repeat(65), `${'a'.repeat(63)}g`, `${'a'.repeat(64)}\n`, 42, undefined];
  const malformedTokens: unknown[] = ['', 'not-a-uuid', lease.toUpperCase().replace(/^./, 'g'), `${lease} `, 7, undefined];
  const malformedCounts: unknown[] = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '5', undefined];
  const malformedText: unknown[] = ['', 5, undefined, null];

  it.each([
    ...malformedKeys.map((bad) => ['keyReserved key', () => keyReserved(bad as string, lease, 'h', 1), () => createEvent(LedgerKeyReservedV1, { ...meta, subject: bad as string }, { key: bad as string, connectorId: 'local', leaseToken: lease, holder: 'h', pendingTtlMs: 1 })] as const),
    ...malformedText.map((bad) => ['keyReserved holder', () => keyReserved(key, lease, bad as string, 1), () => createEvent(LedgerKeyReservedV1, meta, { key, connectorId: 'local', leaseToken: lease, holder: bad as string, pendingTtlMs: 1 })] as const),
    ...malformedCounts.map((bad) => ['keyReserved pendingTtlMs', () => keyReserved(key, lease, 'h', bad as number), () => createEvent(LedgerKeyReservedV1, meta, { key, connectorId: 'local', leaseToken: lease, holder: 'h', pendingTtlMs: bad as number })] as const),
    ...malformedKeys.map((bad) => ['keyCompleted key', () => keyCompleted(bad as string, lease, 1), () => createEvent(LedgerKeyCompletedV1, { ...meta, subject: bad as string }, { key: bad as string, leaseToken: lease, result: 1 })] as const),
    ...malformedTokens.map((bad) => ['keyCompleted leaseToken', () => keyCompleted(key, bad as string, 1), () => createEvent(LedgerKeyCompletedV1, meta, { key, leaseToken: bad as string, result: 1 })] as const),
    ...malformedKeys.map((bad) => ['keyFailed key', () => keyFailed(bad as string, lease, 'C', false), () => createEvent(LedgerKeyFailedV1, { ...meta, subject: bad as string }, { key: bad as string, leaseToken: lease, code: 'C', retryable: false })] as const),
    ...malformedTokens.map((bad) => ['keyFailed leaseToken', () => keyFailed(key, bad as string, 'C', false), () => createEvent(LedgerKeyFailedV1, meta, { key, leaseToken: bad as string, code: 'C', retryable: false })] as const),
    ...malformedText.map((bad) => ['keyFailed code', () => keyFailed(key, lease, bad as string, false), () => createEvent(LedgerKeyFailedV1, meta, { key, leaseToken: lease, code: bad as string, retryable: false })] as const),
    ...([undefined, 'true', 1] as unknown[]).map((bad) => ['keyFailed retryable', () => keyFailed(key, lease, 'C', bad as boolean), () => createEvent(LedgerKeyFailedV1, meta, { key, leaseToken: lease, code: 'C', retryable: bad as boolean })] as const),
    ...malformedKeys.map((bad) => ['rateConsumed budgetKey', () => rateConsumed(bad as string, 'fixed-window', 1, 1), () => createEvent(LedgerRateConsumedV1, { ...meta, subject: bad as string }, { budgetKey: bad as string, claimId: lease, algorithm: 'fixed-window', count: 1, windowMs: 1 })] as const),
    ...(['token-bucket', '', undefined] as unknown[]).map((bad) => ['rateConsumed algorithm', () => rateConsumed(key, bad as 'fixed-window', 1, 1), () => createEvent(LedgerRateConsumedV1, meta, { budgetKey: key, claimId: lease, algorithm: bad as 'fixed-window', count: 1, windowMs: 1 })] as const),
    ...malformedCounts.map((bad) => ['rateConsumed count', () => rateConsumed(key, 'fixed-window', bad as number, 1), () => createEvent(LedgerRateConsumedV1, meta, { budgetKey: key, claimId: lease, algorithm: 'fixed-window', count: bad as number, windowMs: 1 })] as const),
    ...malformedCounts.map((bad) => ['rateConsumed windowMs', () => rateConsumed(key, 'fixed-window', 1, bad as number), () => createEvent(LedgerRateConsumedV1, meta, { budgetKey: key, claimId: lease, algorithm: 'fixed-window', count: 1, windowMs: bad as number })] as const),
  ])('%s: a malformed value fails with the codec’s own error', (_what, fast, codec) => {
    const expected = codecError(codec);
    expect(expected).toMatchObject({ code: 'CONTRACT.INVALID_EVENT' });
    expect(codecError(fast)).toEqual(expected);
  });
});

describe('the in-memory stores on malformed input', () => {
  it('refuse a malformed key, lease token or option with the codec’s error, and record nothing', async () => {
    const store = new InMemoryIdempotencyStore();
    await expect(store.reserve('not-a-key', { holder: 'h', pendingTtlMs: 1_000 })).rejects.toBeInstanceOf(ContractError);
    await expect(store.reserve(key, { holder: '', pendingTtlMs: 1_000 })).rejects.toBeInstanceOf(ContractError);
    await expect(store.reserve(key, { holder: 'h', pendingTtlMs: 0 })).rejects.toBeInstanceOf(ContractError);
    expect(store.size).toBe(0);
    const reservation = await store.reserve(key, { holder: 'h', pendingTtlMs: 1_000 });
    expect(reservation.status).toBe('reserved');
    await expect(store.complete(key, 'forged-token', { ok: true })).rejects.toBeInstanceOf(ContractError);
    await expect(store.fail(key, 'forged-token', { code: 'X', retryable: false })).rejects.toBeInstanceOf(ContractError);
    expect(await store.lookup(key)).toEqual({ status: 'pending' });
    const rates = new InMemoryRateLimitStore();
    await expect(rates.consume('not-a-key', { count: 1, windowMs: 1_000 })).rejects.toBeInstanceOf(ContractError);
    await expect(rates.consume(key, { count: 0, windowMs: 1_000 })).rejects.toBeInstanceOf(ContractError);
    await expect(rates.consume(key, { count: 1, windowMs: 1_000, algorithm: 'leaky' as never })).rejects.toBeInstanceOf(ContractError);
  });
});
