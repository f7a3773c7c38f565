import { randomUUID } from 'node:crypto';
import { cloneJson, createEvent, type JsonValue, LedgerKeyReconciledV1, LedgerKeyTakenOverV1 } from '@gatehouse/contracts';
import { applyLedgerEvent, createLedgerState, isStale, type LedgerEvent, type Verdict } from '@gatehouse/ledger';
import { ConnectorPolicyError } from '../errors.js';
import { type IdempotencyLookup, type IdempotencyReservation, type IdempotencyStore } from '../types.js';
import { isJsonNative } from './json-native.js';
import { keyCompleted, keyFailed, keyReserved } from './ledger-events.js';

const SOURCE = { source: 'guard:in-memory-ledger', tenant: 'local' };

/**
 * Development store: the ledger fold over an in-process log, so its rules are exactly the
 * service's (lease tokens, stale takeover, ambiguous keys, JSON-native results). Atomic within
 * one process; bounded (oldest completed entries evicted past `maxEntries`). Its reach is the
 * process: use the idempotency-ledger service when the promise must hold across processes.
 */
export class InMemoryIdempotencyStore implements IdempotencyStore {
  // In process: these events are made here and never read from a log, so none carries a signature.
  private readonly state = createLedgerState('in-process');
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: { maxEntries?: number; now?: () => number } = {}) {
    const unknown = Object.keys(options).filter((k) => k !== 'maxEntries' && k !== 'now');
    if (unknown.length > 0) throw new TypeError(`InMemoryIdempotencyStore: unknown option ${unknown.map((k) => `"${k}"`).join(', ')}`);
    const max = options.maxEntries ?? 10_000;
    if (!Number.isSafeInteger(max) || max < 1) throw new TypeError('InMemoryIdempotencyStore: maxEntries must be a positive safe integer');
    this.maxEntries = max;
    this.now = options.now ?? Date.now;
  }

  async reserve(key: string, options: { holder: string; pendingTtlMs: number }): Promise<IdempotencyReservation> {
    const current = this.state.keys.get(key);
    if (current?.status === 'completed') return { status: 'completed', result: cloneJson(current.result) };
    if (current?.status === 'ambiguous') return { status: 'ambiguous' };
    const leaseToken = randomUUID();
    if (current?.status === 'pending') {
      if (!isStale(current, this.now())) return { status: 'pending' };
      this.apply(createEvent(LedgerKeyTakenOverV1, { ...SOURCE, subject: key }, { key, previousLeaseToken: current.leaseToken, leaseToken, holder: options.holder, pendingTtlMs: options.pendingTtlMs }));
      return { status: 'reserved', leaseToken, takenOver: true };
    }
    // The hot path (every idempotent call reserves, then completes) builds its events without a
    // zod pass where none could fail; a malformed key or option still fails as the codec fails.
    this.apply(keyReserved(key, leaseToken, options.holder, options.pendingTtlMs));
    this.evict();
    return { status: 'reserved', leaseToken, takenOver: false };
  }

  async lookup(key: string): Promise<IdempotencyLookup> {
    const current = this.state.keys.get(key);
    if (current?.status === 'completed') return { status: 'completed', result: cloneJson(current.result) };
    return { status: current?.status ?? 'absent' };
  }

  async complete(key: string, leaseToken: string, result: JsonValue | undefined): Promise<void> {
    if (!isJsonNative(result)) {
      // A result JSON would change is not recorded: fail the lease rather than replay a different type.
      await this.fail(key, leaseToken, { code: 'CONNECTOR.IDEMPOTENCY_RESULT_NOT_JSON', retryable: false });
      throw storeError('CONNECTOR.IDEMPOTENCY_RESULT_NOT_JSON', 'connector result is not JSON-native and was not recorded');
    }
    const verdict = this.apply(keyCompleted(key, leaseToken, result));
    if (verdict.kind !== 'accepted') throw leaseLost();
    this.evict();
  }

  async fail(key: string, leaseToken: string, failure: { code: string; retryable: boolean }): Promise<void> {
    this.apply(keyFailed(key, leaseToken, failure.code, failure.retryable));
  }

  async reconcile(key: string, leaseToken: string, outcome: { outcome: 'already-applied' | 'not-applied'; result?: JsonValue | undefined }): Promise<void> {
    const verdict = this.apply(
      createEvent(LedgerKeyReconciledV1, { ...SOURCE, subject: key }, { key, leaseToken, outcome: outcome.outcome, ...(outcome.result === undefined ? {} : { result: cloneJson(outcome.result) }) }),
    );
    if (verdict.kind !== 'accepted') throw leaseLost();
  }

  get size(): number {
    return this.state.keys.size;
  }

  private apply(event: LedgerEvent): Verdict {
    return applyLedgerEvent(this.state, event, this.now());
  }

  private evict(): void {
    for (const [key, entry] of this.state.keys) {
      if (this.state.keys.size <= this.maxEntries) return;
      if (entry.status === 'completed') this.state.keys.delete(key);
    }
  }
}

function storeError(code: `CONNECTOR.${string}`, message: string): ConnectorPolicyError {
  return new ConnectorPolicyError(code, message, { connectorId: 'idempotency-store', policy: 'idempotency', category: 'idempotency' });
}

function leaseLost(): ConnectorPolicyError {
  return storeError('CONNECTOR.IDEMPOTENCY_LEASE_LOST', 'the reservation was taken over; the late result was not recorded');
}
