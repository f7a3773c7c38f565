import { describe, expect, it } from '@jest/globals';
import { randomUUID, createHash } from 'node:crypto';
import {
  createEvent as createUnsigned,
  LedgerKeyCompletedV1,
  LedgerKeyExpiredV1,
  LedgerKeyFailedV1,
  LedgerKeyReconciledV1,
  LedgerKeyReservedV1,
  LedgerKeyResolvedV1,
  LedgerKeyTakenOverV1,
  LedgerRateConsumedV1,
  signEvent,
} from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS, testSigningKey } from '@gatehouse/contracts/testing';
import { applyLedgerEvent, foldLedger, type LedgerEvent } from './fold.js';
import { ledgerBudgetKeyOf, ledgerKeyOf } from './scope.js';
import { createLedgerState } from './state.js';

// Every ledger event is an outcome the ledger service grants: the fixtures are signed as it signs them.
const createEvent: typeof createUnsigned = (schema, meta, payload) => signEvent(createUnsigned(schema, meta, payload), TEST_KEYS.ledger);
const key = createHash('sha256').update('k').digest('hex');
const budget = createHash('sha256').update('b').digest('hex');
const meta = { source: 'service:idempotency-ledger', tenant: 'acme', subject: key };

const reserved = (lease: string, ttl = 1_000) => createEvent(LedgerKeyReservedV1, meta, { key, connectorId: 'c', leaseToken: lease, holder: 'h', pendingTtlMs: ttl });
const takenOver = (previous: string, lease: string) => createEvent(LedgerKeyTakenOverV1, meta, { key, previousLeaseToken: previous, leaseToken: lease, holder: 'h2', pendingTtlMs: 1_000 });
const completed = (lease: string, result: unknown = { ok: 1 }) => createEvent(LedgerKeyCompletedV1, meta, { key, leaseToken: lease, result: result as never });
const expired = (before: number) => createEvent(LedgerKeyExpiredV1, meta, { key, before });
const failed = (lease: string) => createEvent(LedgerKeyFailedV1, meta, { key, leaseToken: lease, code: 'X', retryable: true });
const consume = (algorithm: 'fixed-window' | 'sliding-window', count: number, windowMs: number) =>
  createEvent(LedgerRateConsumedV1, { ...meta, subject: budget }, { budgetKey: budget, claimId: randomUUID(), algorithm, count, windowMs });

describe('idempotency keys', () => {
  it('lets the first claim on a free key win and rejects a second while it is pending', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [a, b] = [randomUUID(), randomUUID()];
    expect(applyLedgerEvent(state, reserved(a), 0)).toEqual({ kind: 'accepted' });
    expect(applyLedgerEvent(state, reserved(b), 10)).toEqual({ kind: 'rejected', reason: 'key-held' });
    expect(state.keys.get(key)).toMatchObject({ status: 'pending', leaseToken: a });
  });

  it('records the result of the holder and rejects a completion by anyone else', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [a, b] = [randomUUID(), randomUUID()];
    applyLedgerEvent(state, reserved(a), 0);
    expect(applyLedgerEvent(state, completed(b), 5)).toEqual({ kind: 'rejected', reason: 'lease-lost' });
    expect(applyLedgerEvent(state, completed(a, { refund: 'r-1' }), 6)).toEqual({ kind: 'accepted' });
    expect(state.keys.get(key)).toMatchObject({ status: 'completed', result: { refund: 'r-1' } });
    expect(applyLedgerEvent(state, reserved(b), 7)).toEqual({ kind: 'rejected', reason: 'key-completed' });
  });

  it('frees the key after a failure', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [a, b] = [randomUUID(), randomUUID()];
    applyLedgerEvent(state, reserved(a), 0);
    applyLedgerEvent(state, failed(a), 1);
    expect(applyLedgerEvent(state, reserved(b), 2)).toEqual({ kind: 'accepted' });
  });

  it('allows a takeover only after the TTL by log time, and refuses the old holder afterwards', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [a, b] = [randomUUID(), randomUUID()];
    applyLedgerEvent(state, reserved(a, 1_000), 10_000);
    expect(applyLedgerEvent(state, takenOver(a, b), 10_999)).toEqual({ kind: 'rejected', reason: 'not-stale' });
    expect(applyLedgerEvent(state, takenOver(a, b), 11_000)).toEqual({ kind: 'accepted' });
    expect(state.keys.get(key)).toMatchObject({ status: 'pending', leaseToken: b, ambiguous: true });
    expect(applyLedgerEvent(state, completed(a), 11_001)).toEqual({ kind: 'rejected', reason: 'lease-lost' });
  });

  it('needs a reconcile answer (or an operator) before an ambiguous key completes or re-runs', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [a, b] = [randomUUID(), randomUUID()];
    applyLedgerEvent(state, reserved(a, 100), 0);
    applyLedgerEvent(state, takenOver(a, b), 200);
    expect(applyLedgerEvent(state, completed(b), 201)).toEqual({ kind: 'rejected', reason: 'key-ambiguous' });
    const notApplied = createEvent(LedgerKeyReconciledV1, meta, { key, leaseToken: b, outcome: 'not-applied' });
    expect(applyLedgerEvent(state, notApplied, 202)).toEqual({ kind: 'accepted' });
    expect(applyLedgerEvent(state, completed(b, { refund: 'r-2' }), 203)).toEqual({ kind: 'accepted' });
  });

  it('records a reconcile that finds the side effect already applied as the result', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [a, b] = [randomUUID(), randomUUID()];
    applyLedgerEvent(state, reserved(a, 100), 0);
    applyLedgerEvent(state, takenOver(a, b), 100);
    applyLedgerEvent(state, createEvent(LedgerKeyReconciledV1, meta, { key, leaseToken: b, outcome: 'already-applied', result: { refund: 'r-1' } }), 101);
    expect(state.keys.get(key)).toMatchObject({ status: 'completed', result: { refund: 'r-1' } });
  });

  it('parks an ambiguous key whose holder walks away until an operator decides', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    applyLedgerEvent(state, reserved(a, 100), 0);
    applyLedgerEvent(state, takenOver(a, b), 100);
    applyLedgerEvent(state, failed(b), 101);
    expect(state.keys.get(key)?.status).toBe('ambiguous');
    expect(applyLedgerEvent(state, reserved(c), 102)).toEqual({ kind: 'rejected', reason: 'key-ambiguous' });
    const resolved = createEvent(LedgerKeyResolvedV1, meta, { key, decision: 're-execute', operator: { id: 'ops-1', role: 'operator' } });
    expect(applyLedgerEvent(state, resolved, 103)).toEqual({ kind: 'accepted' });
    expect(applyLedgerEvent(state, reserved(c), 104)).toEqual({ kind: 'accepted' });
  });

  it('reaches the same state on every replay of the same records', () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const records: { event: LedgerEvent; logTime: number }[] = [
      { event: reserved(a, 100), logTime: 0 },
      { event: reserved(b), logTime: 1 },
      { event: takenOver(a, b), logTime: 150 },
      { event: consume('sliding-window', 3, 1_000), logTime: 150 },
    ];
    expect(foldLedger(records, TEST_KEYRING)).toEqual(foldLedger(records, TEST_KEYRING));
  });
});

describe('retention of completed keys', () => {
  it('forgets a completion older than `before`: the next call with the key runs again', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [a, b] = [randomUUID(), randomUUID()];
    applyLedgerEvent(state, reserved(a), 0);
    applyLedgerEvent(state, completed(a), 10);
    expect(applyLedgerEvent(state, expired(10), 500)).toEqual({ kind: 'rejected', reason: 'not-expired' }); // completed at `before`, not before it
    expect(state.keys.get(key)).toMatchObject({ status: 'completed' });
    expect(applyLedgerEvent(state, expired(11), 500)).toEqual({ kind: 'accepted' });
    expect(state.keys.has(key)).toBe(false);
    expect(applyLedgerEvent(state, reserved(b), 501)).toEqual({ kind: 'accepted' });
    // A second expiry (another replica sweeping) finds nothing completed to expire.
    expect(applyLedgerEvent(state, expired(600), 600)).toEqual({ kind: 'rejected', reason: 'not-expired' });
    expect(state.keys.get(key)).toMatchObject({ status: 'pending', leaseToken: b });
  });

  it('never expires a key that is pending or ambiguous, nor ahead of the log: `before` is clamped to the append time', () => {
    const state = createLedgerState(TEST_KEYRING);
    const a = randomUUID();
    expect(applyLedgerEvent(state, expired(100), 100)).toEqual({ kind: 'rejected', reason: 'unknown-key' });
    applyLedgerEvent(state, reserved(a), 0);
    expect(applyLedgerEvent(state, expired(1_000_000), 1_000_000)).toEqual({ kind: 'rejected', reason: 'not-expired' });
    applyLedgerEvent(state, completed(a), 2_000_000);
    // A sweeper whose clock runs ahead asks for a `before` the log has not reached: the append time wins.
    expect(applyLedgerEvent(state, expired(9_000_000), 2_000_000)).toEqual({ kind: 'rejected', reason: 'not-expired' });
    expect(applyLedgerEvent(state, expired(9_000_000), 2_000_001)).toEqual({ kind: 'accepted' });
  });

  it('takes an expiry only from the ledger service', () => {
    const state = createLedgerState(TEST_KEYRING);
    const a = randomUUID();
    applyLedgerEvent(state, reserved(a), 0);
    applyLedgerEvent(state, completed(a), 1);
    const forged = createUnsigned(LedgerKeyExpiredV1, meta, { key, before: 100 });
    expect(applyLedgerEvent(state, forged, 100)).toEqual({ kind: 'rejected', reason: 'untrusted-signature' });
    expect(applyLedgerEvent(state, signEvent(forged, TEST_KEYS.approval), 100)).toEqual({ kind: 'rejected', reason: 'untrusted-signature' });
    expect(state.keys.get(key)).toMatchObject({ status: 'completed' });
  });
});

describe('rate budgets', () => {
  it('fixed window admits count per window and a refused request consumes nothing', () => {
    const state = createLedgerState(TEST_KEYRING);
    const verdicts = [0, 1, 2, 3].map((t) => applyLedgerEvent(state, consume('fixed-window', 3, 1_000), t).kind);
    expect(verdicts).toEqual(['admitted', 'admitted', 'admitted', 'refused']);
    expect(state.budgets.get(budget)).toMatchObject({ used: 3 });
    expect(applyLedgerEvent(state, consume('fixed-window', 3, 1_000), 1_000).kind).toBe('admitted');
  });

  it('fixed window admits up to twice the budget across a boundary; the sliding window does not', () => {
    const times = [990, 991, 992, 1_000, 1_001, 1_002];
    const fixed = createLedgerState(TEST_KEYRING);
    const bucket = createLedgerState(TEST_KEYRING);
    const admittedFixed = times.filter((t) => applyLedgerEvent(fixed, consume('fixed-window', 3, 1_000), t).kind === 'admitted').length;
    const admittedBucket = times.filter((t) => applyLedgerEvent(bucket, consume('sliding-window', 3, 1_000), t).kind === 'admitted').length;
    expect(admittedFixed).toBe(6);
    expect(admittedBucket).toBe(3);
  });

  it('sliding window never admits more than count in any window-length interval', () => {
    const state = createLedgerState(TEST_KEYRING);
    const admitted: number[] = [];
    for (let t = 0; t < 5_000; t += 37) if (applyLedgerEvent(state, consume('sliding-window', 10, 1_000), t).kind === 'admitted') admitted.push(t);
    for (const start of admitted) expect(admitted.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(10);
    expect(admitted.length).toBeGreaterThan(40);
  });
});

describe('signed outcomes', () => {
  it('ignores a reservation nobody signed, or one signed by a key the keyring does not trust', () => {
    const state = createLedgerState(TEST_KEYRING);
    const unsigned = createUnsigned(LedgerKeyReservedV1, meta, { key, connectorId: 'c', leaseToken: randomUUID(), holder: 'agent', pendingTtlMs: 1_000 });
    expect(applyLedgerEvent(state, unsigned, 1)).toEqual({ kind: 'rejected', reason: 'untrusted-signature' });
    expect(applyLedgerEvent(state, signEvent(unsigned, testSigningKey('ledger', 'agent-made')), 2)).toEqual({ kind: 'rejected', reason: 'untrusted-signature' });
    expect(applyLedgerEvent(state, signEvent(unsigned, TEST_KEYS.approval), 3)).toEqual({ kind: 'rejected', reason: 'untrusted-signature' });
    expect(state.keys.size).toBe(0);
    expect(state.untrusted.count).toBe(3);
    // The service's own reservation still wins the key.
    expect(applyLedgerEvent(state, reserved(randomUUID()), 4)).toEqual({ kind: 'accepted' });
  });

  it("takes every event as it is in an in-process ledger, which reads no log", () => {
    const state = createLedgerState('in-process');
    expect(applyLedgerEvent(state, createUnsigned(LedgerKeyReservedV1, meta, { key, connectorId: 'c', leaseToken: randomUUID(), holder: 'h', pendingTtlMs: 1_000 }), 1)).toEqual({ kind: 'accepted' });
  });
});

describe('per-principal counts', () => {
  const as = (principal: string) => ({ principal });
  const claim = (k: string, lease: string, principal?: string, ttl = 100) =>
    createEvent(LedgerKeyReservedV1, { ...meta, subject: k }, { key: k, connectorId: 'c', leaseToken: lease, holder: 'h', pendingTtlMs: ttl, ...(principal === undefined ? {} : as(principal)) });
  const keyOf = (s: string) => createHash('sha256').update(s).digest('hex');

  it('counts the pending and ambiguous keys of each principal through every transition, and not claims without one', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [k1, k2, k3] = ['1', '2', '3'].map(keyOf) as [string, string, string];
    const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    applyLedgerEvent(state, claim(k1, a, 'agent:a'), 0);
    applyLedgerEvent(state, claim(k2, b, 'agent:a'), 0);
    applyLedgerEvent(state, claim(k3, c), 0); // before callers authenticated: counted for nobody
    expect(Object.fromEntries(state.openKeysByPrincipal)).toEqual({ 'agent:a': 2 });
    applyLedgerEvent(state, createEvent(LedgerKeyCompletedV1, { ...meta, subject: k1 }, { key: k1, leaseToken: a }), 1);
    expect(Object.fromEntries(state.openKeysByPrincipal)).toEqual({ 'agent:a': 1 });
    // A takeover moves the key to the principal that took it; its failure leaves it ambiguous, still counted.
    applyLedgerEvent(state, createEvent(LedgerKeyTakenOverV1, { ...meta, subject: k2 }, { key: k2, previousLeaseToken: b, leaseToken: d, holder: 'h2', pendingTtlMs: 100, principal: 'agent:b' }), 200);
    expect(Object.fromEntries(state.openKeysByPrincipal)).toEqual({ 'agent:b': 1 });
    applyLedgerEvent(state, createEvent(LedgerKeyFailedV1, { ...meta, subject: k2 }, { key: k2, leaseToken: d, code: 'X', retryable: true }), 201);
    expect(state.keys.get(k2)).toMatchObject({ status: 'ambiguous', principal: 'agent:b' });
    expect(Object.fromEntries(state.openKeysByPrincipal)).toEqual({ 'agent:b': 1 });
    const resolved = createEvent(LedgerKeyResolvedV1, { ...meta, subject: k2 }, { key: k2, decision: 're-execute', operator: { id: 'ops-1', role: 'operator' } });
    applyLedgerEvent(state, resolved, 202);
    expect(state.openKeysByPrincipal.size).toBe(0);
  });

  it('counts each budget once, against the principal whose admitted request created it', () => {
    const state = createLedgerState(TEST_KEYRING);
    const spend = (budgetKey: string, principal: string, count = 1) =>
      createEvent(LedgerRateConsumedV1, { ...meta, subject: budgetKey }, { budgetKey, claimId: randomUUID(), algorithm: 'fixed-window', count, windowMs: 1_000, principal });
    const [x, y] = [keyOf('x'), keyOf('y')];
    applyLedgerEvent(state, spend(x, 'agent:a'), 0);
    applyLedgerEvent(state, spend(x, 'agent:b', 5), 1);
    applyLedgerEvent(state, spend(y, 'agent:b'), 2);
    expect(Object.fromEntries(state.budgetsByPrincipal)).toEqual({ 'agent:a': 1, 'agent:b': 1 });
    expect(state.budgets.get(x)).toMatchObject({ principal: 'agent:a', used: 2 });
  });

  it('derives the same counts on every replay', () => {
    const records = [
      { event: claim(keyOf('r1'), randomUUID(), 'agent:a'), logTime: 0 },
      { event: claim(keyOf('r2'), randomUUID(), 'agent:b'), logTime: 1 },
    ];
    const [first, second] = [foldLedger(records, TEST_KEYRING), foldLedger(records, TEST_KEYRING)];
    expect(Object.fromEntries(first.openKeysByPrincipal)).toEqual({ 'agent:a': 1, 'agent:b': 1 });
    expect(Object.fromEntries(second.openKeysByPrincipal)).toEqual(Object.fromEntries(first.openKeysByPrincipal));
  });
});

describe('keys scoped by tenant', () => {
  it('stores the same client key of two tenants as two keys, and cannot be steered into another tenant', () => {
    const client = createHash('sha256').update('refund-o-1').digest('hex');
    const [a, b] = [ledgerKeyOf('acme', client), ledgerKeyOf('globex', client)];
    expect(a).toMatch(/^[\da-f]{64}$/);
    expect(a).not.toBe(b);
    // Knowing acme's stored key does not help a globex caller: what it sends is scoped into globex.
    expect(ledgerKeyOf('globex', a)).not.toBe(a);
    expect(ledgerKeyOf('acme', 'x:y')).not.toBe(ledgerKeyOf('acme:x', 'y'));
    expect(ledgerBudgetKeyOf('acme', client)).not.toBe(a);
  });
});
