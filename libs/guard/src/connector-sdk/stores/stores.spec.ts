import { describe, expect, it } from '@jest/globals';
import { parseRateLimit } from '../manifest.js';
import { idempotencyStorageKey } from './idempotency-key.js';
import { InMemoryIdempotencyStore } from './in-memory-idempotency-store.js';
import { isJsonNative } from './json-native.js';

describe('idempotency storage keys', () => {
  it('are opaque, and a business key containing ":" cannot collide with another scope', () => {
    const a = idempotencyStorageKey({ tenant: 'acme', connectorId: 'refunds', key: 'x:y' });
    const b = idempotencyStorageKey({ tenant: 'acme', connectorId: 'refunds:x', key: 'y' });
    const c = idempotencyStorageKey({ tenant: 'acme:refunds', connectorId: 'x', key: 'y' });
    expect(new Set([a, b, c]).size).toBe(3);
    expect(a).toMatch(/^[\da-f]{64}$/);
  });
});

describe('JSON-native results', () => {
  it.each([
    ['a Date', { at: new Date(0) }],
    ['a Map', new Map()],
    ['a non-finite number', { n: Number.POSITIVE_INFINITY }],
    // eslint-disable-next-line no-sparse-arrays -- the hole is the point of the case
    ['a sparse array', [1, , 3]],
    ['a nested undefined', { a: undefined }],
  ])('rejects %s', (_what, value) => {
    expect(isJsonNative(value)).toBe(false);
  });

  it('accepts plain JSON and a top-level undefined', () => {
    expect(isJsonNative({ a: [1, 'x', null, { b: true }] })).toBe(true);
    expect(isJsonNative(undefined)).toBe(true);
  });
});

describe('InMemoryIdempotencyStore', () => {
  it('bounds replay storage by evicting the oldest completed entries', async () => {
    const store = new InMemoryIdempotencyStore({ maxEntries: 2 });
    const [a, b, c] = ['a', 'b', 'c'].map((k) => idempotencyStorageKey({ tenant: 't', connectorId: 'c', key: k })) as [string, string, string];
    for (const key of [a, b, c]) {
      const r = await store.reserve(key, { holder: 'h', pendingTtlMs: 1000 });
      if (r.status === 'reserved') await store.complete(key, r.leaseToken, key);
    }
    expect(store.size).toBe(2);
    expect(await store.reserve(a, { holder: 'h', pendingTtlMs: 1000 })).toMatchObject({ status: 'reserved' });
  });

  it('refuses unknown options and a bad bound', () => {
    expect(() => new InMemoryIdempotencyStore({ max: 5 } as never)).toThrow(TypeError);
    expect(() => new InMemoryIdempotencyStore({ maxEntries: 0 })).toThrow(TypeError);
  });
});

describe('rate limit budgets', () => {
  it('parses count/unit and refuses anything else', () => {
    expect(parseRateLimit('10/hour')).toEqual({ count: 10, windowMs: 3_600_000 });
    expect(parseRateLimit('1/second')).toEqual({ count: 1, windowMs: 1_000 });
    for (const bad of ['0/hour', '10/week', '10 / hour', '-1/day', '1.5/minute']) expect(parseRateLimit(bad)).toBeUndefined();
  });
});
