import { randomUUID } from 'node:crypto';
import { type JsonValue } from '@gatehouse/contracts';
import { ConnectorPolicyError } from '../errors.js';
import { type IdempotencyReservation, type IdempotencyStore } from '../types.js';
import { cloneJson, isJsonNative } from './json-native.js';

type Entry =
  | { status: 'pending'; leaseToken: string; holder: string; expiresAt: number }
  | { status: 'completed'; result: JsonValue | undefined };

/**
 * Development store: atomic within one process (reservation is synchronous), bounded replay
 * storage (oldest completed entries evicted past `maxEntries`). Its reach is the process:
 * use the ledger service's store when the promise must hold across processes.
 */
export class InMemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, Entry>();
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
    const entry = this.entries.get(key);
    if (entry?.status === 'completed') return { status: 'completed', result: entry.result };
    if (entry?.status === 'pending' && entry.expiresAt > this.now()) return { status: 'pending' };
    const leaseToken = randomUUID();
    this.entries.set(key, { status: 'pending', leaseToken, holder: options.holder, expiresAt: this.now() + options.pendingTtlMs });
    this.evict();
    return { status: 'reserved', leaseToken, takenOver: entry?.status === 'pending' };
  }

  async complete(key: string, leaseToken: string, result: JsonValue | undefined): Promise<void> {
    const entry = this.entries.get(key);
    if (entry?.status !== 'pending' || entry.leaseToken !== leaseToken) throw leaseLost();
    if (!isJsonNative(result)) {
      // A result JSON would change is not recorded: free the key rather than replay a different type.
      this.entries.delete(key);
      throw new ConnectorPolicyError('CONNECTOR.IDEMPOTENCY_RESULT_NOT_JSON', 'connector result is not JSON-native and was not recorded', {
        connectorId: 'idempotency-store', policy: 'idempotency', category: 'idempotency',
      });
    }
    this.entries.delete(key);
    this.entries.set(key, { status: 'completed', result: cloneJson(result) });
    this.evict();
  }

  async fail(key: string, leaseToken: string): Promise<void> {
    const entry = this.entries.get(key);
    if (entry?.status === 'pending' && entry.leaseToken === leaseToken) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  private evict(): void {
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries) return;
      if (entry.status === 'completed') this.entries.delete(key);
    }
  }
}

function leaseLost(): ConnectorPolicyError {
  return new ConnectorPolicyError('CONNECTOR.IDEMPOTENCY_LEASE_LOST', 'the reservation was taken over; the late result was not recorded', {
    connectorId: 'idempotency-store', policy: 'idempotency', category: 'idempotency',
  });
}
