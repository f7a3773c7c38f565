import { describe, expect, it } from '@jest/globals';
import { parseRateLimit } from '../manifest.js';
import { idempotencyStorageKey } from './idempotency-key.js';
import { InMemoryIdempotencyStore } from './in-memory-idempotency-store.js';
import { isJsonNative } from './json-native.js';
import { createLedgerStores } from './ledger-client.js';

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

describe('createLedgerStores', () => {
  const apiKey = 'lk_test-agent-key-0123456789';
  const key = 'a'.repeat(64);
  /** A transport that records each request and answers with `status` and `body`. */
  function transport(status: number, body: unknown) {
    const sent: { url: string; headers: Record<string, string>; body: Record<string, unknown> }[] = [];
    const fetch = (async (url: URL, init: RequestInit) => {
      sent.push({ url: String(url), headers: init.headers as Record<string, string>, body: JSON.parse(String(init.body)) as Record<string, unknown> });
      return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    }) as unknown as typeof globalThis.fetch;
    return { sent, fetch };
  }

  it('needs an API key, refuses unknown options, and never repeats the key in an error', () => {
    expect(() => createLedgerStores({ baseUrl: 'http://127.0.0.1:9' } as never)).toThrow(/apiKey/);
    let message = '';
    try {
      createLedgerStores({ baseUrl: 'http://127.0.0.1:9', apiKey: 'short key' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/apiKey/);
    expect(message).not.toContain('short key');
    expect(() => createLedgerStores({ baseUrl: 'http://127.0.0.1:9', apiKey, tenants: ['acme'] } as never)).toThrow(/unknown option "tenants"/);
    expect(() => createLedgerStores({ baseUrl: 'http://127.0.0.1:9', apiKey, tenant: '' })).toThrow(/tenant/);
  });

  it("sends the agent's key and the call's tenant with every request", async () => {
    const { sent, fetch } = transport(200, { status: 'reserved', leaseToken: 'l-1', takenOver: false });
    const { idempotencyStore } = createLedgerStores({ baseUrl: 'http://127.0.0.1:9', apiKey, fetch, connectorId: 'refunds' });
    expect(await idempotencyStore.reserve(key, { holder: 'h', pendingTtlMs: 1_000 }, { tenant: 'acme' })).toEqual({ status: 'reserved', leaseToken: 'l-1', takenOver: false });
    await idempotencyStore.reserve(key, { holder: 'h', pendingTtlMs: 1_000 });
    expect(sent.map((r) => [r.url, r.headers['authorization'], r.body['tenant']])).toEqual([
      ['http://127.0.0.1:9/v1/idempotency/reservations', `Bearer ${apiKey}`, 'acme'],
      // No tenant named: the ledger takes the agent's only one.
      ['http://127.0.0.1:9/v1/idempotency/reservations', `Bearer ${apiKey}`, undefined],
    ]);
  });

  it('serves only its own tenant when bound to one: a call for another is refused without a request', async () => {
    const { sent, fetch } = transport(200, { allowed: true, remaining: 1, resetAt: 5 });
    const { rateLimitStore } = createLedgerStores({ baseUrl: 'http://127.0.0.1:9', apiKey, tenant: 'acme', fetch });
    expect(await rateLimitStore.consume(key, { count: 2, windowMs: 1_000 })).toEqual({ allowed: true, remaining: 1, resetAt: 5 });
    await expect(rateLimitStore.consume(key, { count: 2, windowMs: 1_000 }, { tenant: 'globex' })).rejects.toMatchObject({ code: 'LEDGER.FORBIDDEN', retryable: false });
    expect(sent.map((r) => r.body['tenant'])).toEqual(['acme']);
  });

  it("turns the ledger's refusals into typed errors, never an assumed answer", async () => {
    const cases: [number, unknown, string, boolean][] = [
      [401, { code: 'LEDGER.UNAUTHENTICATED' }, 'LEDGER.UNAUTHENTICATED', false],
      [403, { code: 'LEDGER.FORBIDDEN' }, 'LEDGER.FORBIDDEN', false],
      [429, { code: 'LEDGER.PENDING_LIMIT' }, 'LEDGER.PENDING_LIMIT', true],
      [429, { code: 'LEDGER.BUDGET_LIMIT' }, 'LEDGER.BUDGET_LIMIT', false],
      [400, { code: 'LEDGER.SOMETHING_ELSE', message: 'echo <script>' }, 'LEDGER.INVALID_REQUEST', false],
      [503, { code: 'LEDGER.UNAVAILABLE' }, 'LEDGER.UNAVAILABLE', true],
    ];
    for (const [status, body, code, retryable] of cases) {
      const { idempotencyStore } = createLedgerStores({ baseUrl: 'http://127.0.0.1:9', apiKey, fetch: transport(status, body).fetch });
      await expect(idempotencyStore.reserve(key, { holder: 'h', pendingTtlMs: 1_000 })).rejects.toMatchObject({ code, retryable });
    }
    const { idempotencyStore } = createLedgerStores({ baseUrl: 'http://127.0.0.1:9', apiKey, fetch: transport(409, { code: 'LEDGER.LEASE_LOST' }).fetch });
    await expect(idempotencyStore.complete(key, 'l-1', { ok: 1 }, { tenant: 'acme' })).rejects.toMatchObject({ code: 'CONNECTOR.IDEMPOTENCY_LEASE_LOST' });
  });
});
