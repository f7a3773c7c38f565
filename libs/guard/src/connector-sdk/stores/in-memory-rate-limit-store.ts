import { applyLedgerEvent, createLedgerState } from '@gatehouse/ledger';
import { rateConsumed } from './ledger-events.js';
import { type RateLimitAlgorithm, type RateLimitDecision, type RateLimitStore } from '../types.js';

/**
 * Development store: the ledger's budget fold in one process (fixed or sliding windows).
 * Budget keys are hex sha-256 (`rateLimitStorageKey`). Use the idempotency-ledger service
 * for budgets shared across processes.
 */
export class InMemoryRateLimitStore implements RateLimitStore {
  // In process: these events are made here and never read from a log, so none carries a signature.
  private readonly state = createLedgerState('in-process');
  private readonly now: () => number;

  constructor(options: { now?: () => number } = {}) {
    const unknown = Object.keys(options).filter((k) => k !== 'now');
    if (unknown.length > 0) throw new TypeError(`InMemoryRateLimitStore: unknown option ${unknown.map((k) => `"${k}"`).join(', ')}`);
    this.now = options.now ?? Date.now;
  }

  async consume(key: string, limit: { count: number; windowMs: number; algorithm?: RateLimitAlgorithm }): Promise<RateLimitDecision> {
    // Built without a zod pass where none could fail; a malformed key or limit fails as the codec fails.
    const event = rateConsumed(key, limit.algorithm ?? 'fixed-window', limit.count, limit.windowMs);
    const verdict = applyLedgerEvent(this.state, event, this.now());
    if (verdict.kind === 'admitted') return { allowed: true, remaining: verdict.remaining, resetAt: verdict.resetAt };
    if (verdict.kind === 'refused') return { allowed: false, remaining: 0, resetAt: verdict.resetAt };
    throw new Error('unexpected budget verdict');
  }
}
