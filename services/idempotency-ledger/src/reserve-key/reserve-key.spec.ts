import { describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { createEvent, LedgerKeyCompletedV1, LedgerKeyReservedV1 } from '@gatehouse/contracts';
import { ledgerKeyOf } from '@gatehouse/ledger';
import { type Caller } from '../auth/agent-auth.js';
import { completeKey as completeAs } from '../complete-key/complete-key.js';
import { failKey as failAs } from '../fail-key/fail-key.js';
import { ledgerMeta } from '@gatehouse/ledger-projection';
import { InMemoryLedger } from '../testing/in-memory-ledger.js';
import { reserveKey as reserveAs, type ReserveKeyAnswer, type ReserveKeyRequest } from './reserve-key.js';

const acme: Caller = { principal: 'agent:acme', tenant: 'acme' };
const key = () => createHash('sha256').update(randomUUID()).digest('hex');
const request = (k: string, holder = 'agent-1', pendingTtlMs = 1_000) => ({ key: k, connectorId: 'refunds', holder, pendingTtlMs });
/** The key the ledger stores for acme's `k`. */
const stored = (k: string) => ledgerKeyOf('acme', k);
const foreignReservation = (k: string) =>
  createEvent(LedgerKeyReservedV1, ledgerMeta(stored(k), 'acme'), { key: stored(k), connectorId: 'refunds', leaseToken: randomUUID(), holder: 'other', pendingTtlMs: 1_000 });

/** acme's reservation, answered (the bound is far away here; its own tests are below). */
async function reserveKey(ledger: InMemoryLedger, r: ReserveKeyRequest, clock: InMemoryLedger): Promise<ReserveKeyAnswer> {
  const outcome = await reserveAs(ledger, acme, r, { clock, maxPendingKeys: 10_000 });
  if (!outcome.ok) throw new Error(`refused: ${outcome.code}`);
  return outcome.value;
}
const completeKey = (ledger: InMemoryLedger, r: Parameters<typeof completeAs>[2]) => completeAs(ledger, acme, r);
const failKey = (ledger: InMemoryLedger, r: Parameters<typeof failAs>[2]) => failAs(ledger, acme, r);

describe('reserveKey', () => {
  it('reserves a free key with a fresh lease', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    const answer = await reserveKey(ledger, request(k), ledger);
    expect(answer).toEqual({ status: 'reserved', leaseToken: expect.any(String), takenOver: false });
    expect(ledger.appended.map((e) => e.type)).toEqual(['LedgerKeyReserved']);
  });

  it('answers pending for a held key without writing, with a bounded retry hint', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    await reserveKey(ledger, request(k), ledger);
    ledger.wallClock += 900;
    expect(await reserveKey(ledger, request(k, 'agent-2'), ledger)).toEqual({ status: 'pending', retryAfterMs: 100 });
    ledger.wallClock -= 800;
    expect(await reserveKey(ledger, request(k, 'agent-2'), ledger)).toEqual({ status: 'pending', retryAfterMs: 250 });
    expect(ledger.appended).toHaveLength(1);
  });

  it('answers from the state the fold reached when another writer got there first', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    ledger.beforeDecide = () => ledger.apply(foreignReservation(k));
    const answer = await reserveKey(ledger, request(k), ledger);
    expect(answer).toMatchObject({ status: 'pending' });
    expect(ledger.appended.map((e) => e.type)).toEqual(['LedgerKeyReserved', 'LedgerKeyReserved']);
  });

  it('takes a stale reservation over, and says so', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    const first = await reserveKey(ledger, request(k), ledger);
    ledger.wallClock += 1_000;
    ledger.logTime += 1_000;
    const second = await reserveKey(ledger, request(k, 'agent-2'), ledger);
    expect(second).toEqual({ status: 'reserved', leaseToken: expect.any(String), takenOver: true });
    expect(second).not.toEqual(first);
    const takeover = ledger.appended[1];
    expect(takeover?.type).toBe('LedgerKeyTakenOver');
    if (takeover?.type === 'LedgerKeyTakenOver' && first.status === 'reserved') expect(takeover.payload.previousLeaseToken).toBe(first.leaseToken);
  });

  it('answers pending when the wall clock says stale but the log time does not (the fold decides)', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    await reserveKey(ledger, request(k), ledger);
    ledger.wallClock += 5_000; // this replica's clock runs ahead of the broker's
    ledger.logTime += 500;
    const answer = await reserveKey(ledger, request(k, 'agent-2'), ledger);
    expect(answer).toMatchObject({ status: 'pending' });
    expect(ledger.appended.map((e) => e.type)).toEqual(['LedgerKeyReserved', 'LedgerKeyTakenOver']);
  });

  it('returns the recorded result, and ambiguous for an ambiguous key', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    const won = await reserveKey(ledger, request(k), ledger);
    if (won.status !== 'reserved') throw new Error('expected a reservation');
    ledger.apply(createEvent(LedgerKeyCompletedV1, ledgerMeta(stored(k), 'acme'), { key: stored(k), leaseToken: won.leaseToken, result: [1, { a: null }] }));
    expect(await reserveKey(ledger, request(k), ledger)).toEqual({ status: 'completed', result: [1, { a: null }] });

    const a = key();
    await reserveKey(ledger, request(a, 'dies'), ledger);
    ledger.wallClock += 1_000;
    ledger.logTime += 1_000;
    const taken = await reserveKey(ledger, request(a, 'agent-2'), ledger);
    if (taken.status !== 'reserved') throw new Error('expected a takeover');
    expect(await failKey(ledger, { key: a, leaseToken: taken.leaseToken, code: 'X', retryable: true })).toEqual({ ok: true, value: { status: 'failed', keyStatus: 'ambiguous' } });
    expect(await reserveKey(ledger, request(a, 'agent-3'), ledger)).toEqual({ status: 'ambiguous' });
  });
});

describe('keys of a tenant, held by a principal', () => {
  const globex: Caller = { principal: 'agent:globex', tenant: 'globex' };

  it('stores a key scoped by the caller\'s tenant: the same client key in another tenant is another key', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    const mine = await reserveKey(ledger, request(k), ledger);
    if (mine.status !== 'reserved') throw new Error('expected a reservation');
    await completeKey(ledger, { key: k, leaseToken: mine.leaseToken, result: 'acme-result' });
    expect(ledger.key(stored(k))).toMatchObject({ status: 'completed', result: 'acme-result' });
    // globex asks for the same client key: a fresh key of its own, never acme's result.
    expect(await reserveAs(ledger, globex, request(k), { clock: ledger, maxPendingKeys: 10 })).toEqual({ ok: true, value: expect.objectContaining({ status: 'reserved' }) });
    // Naming acme's stored key does not reach it either.
    expect(await reserveAs(ledger, globex, request(stored(k)), { clock: ledger, maxPendingKeys: 10 })).toEqual({ ok: true, value: expect.objectContaining({ status: 'reserved' }) });
    const claims = ledger.appended.filter((e) => e.type === 'LedgerKeyReserved');
    expect(claims.map((e) => [e.tenant, e.type === 'LedgerKeyReserved' && e.payload.principal])).toEqual([
      ['acme', 'agent:acme'],
      ['globex', 'agent:globex'],
      ['globex', 'agent:globex'],
    ]);
  });

  it('refuses a claim past the principal\'s bound without appending, and still answers from state', async () => {
    const ledger = new InMemoryLedger();
    const context = { clock: ledger, maxPendingKeys: 2 };
    const [a, b, c] = [key(), key(), key()];
    for (const k of [a, b]) expect(await reserveAs(ledger, acme, request(k), context)).toMatchObject({ ok: true });
    expect(await reserveAs(ledger, acme, request(c), context)).toEqual({ ok: false, code: 'LEDGER.PENDING_LIMIT' });
    expect(ledger.appended).toHaveLength(2);
    // A key it holds is answered as before; another principal is not affected.
    expect(await reserveAs(ledger, acme, request(a), context)).toEqual({ ok: true, value: expect.objectContaining({ status: 'pending' }) });
    expect(await reserveAs(ledger, { principal: 'agent:other', tenant: 'acme' }, request(c), context)).toMatchObject({ ok: true, value: { status: 'reserved' } });
    // Completing one frees room.
    const held = ledger.key(stored(a));
    if (held?.status !== 'pending') throw new Error('expected a pending key');
    await completeKey(ledger, { key: a, leaseToken: held.leaseToken });
    expect(await reserveAs(ledger, acme, request(key()), context)).toMatchObject({ ok: true, value: { status: 'reserved' } });
  });
});

describe('completeKey', () => {
  it('refuses the old holder after a takeover with LEDGER.LEASE_LOST', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    const first = await reserveKey(ledger, request(k), ledger);
    ledger.wallClock += 1_000;
    ledger.logTime += 1_000;
    await reserveKey(ledger, request(k, 'agent-2'), ledger);
    if (first.status !== 'reserved') throw new Error('expected a reservation');
    expect(await completeKey(ledger, { key: k, leaseToken: first.leaseToken, result: 'late' })).toEqual({ ok: false, code: 'LEDGER.LEASE_LOST' });
  });

  it('treats a repeated completion by the holder as done without writing again', async () => {
    const ledger = new InMemoryLedger();
    const k = key();
    const won = await reserveKey(ledger, request(k), ledger);
    if (won.status !== 'reserved') throw new Error('expected a reservation');
    expect(await completeKey(ledger, { key: k, leaseToken: won.leaseToken })).toEqual({ ok: true, value: { status: 'completed' } });
    expect(await completeKey(ledger, { key: k, leaseToken: won.leaseToken, result: 'again' })).toEqual({ ok: true, value: { status: 'completed' } });
    expect(ledger.appended.map((e) => e.type)).toEqual(['LedgerKeyReserved', 'LedgerKeyCompleted']);
  });

  it('refuses a completion for a key nobody reserved', async () => {
    const ledger = new InMemoryLedger();
    expect(await completeKey(ledger, { key: key(), leaseToken: randomUUID() })).toEqual({ ok: false, code: 'LEDGER.UNKNOWN_KEY' });
  });
});
