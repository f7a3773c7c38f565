import { type RateLimitDecision, type RateLimitStore } from '../types.js';

/**
 * Development store: fixed windows per process. A fixed window can admit close to twice the
 * budget across a boundary; the ledger service offers a token bucket.
 */
export class InMemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, { start: number; used: number }>();
  private readonly now: () => number;

  constructor(options: { now?: () => number } = {}) {
    const unknown = Object.keys(options).filter((k) => k !== 'now');
    if (unknown.length > 0) throw new TypeError(`InMemoryRateLimitStore: unknown option ${unknown.map((k) => `"${k}"`).join(', ')}`);
    this.now = options.now ?? Date.now;
  }

  async consume(key: string, limit: { count: number; windowMs: number }): Promise<RateLimitDecision> {
    const now = this.now();
    const start = now - (now % limit.windowMs);
    let window = this.windows.get(key);
    if (!window || window.start !== start) {
      window = { start, used: 0 };
      this.windows.set(key, window);
    }
    const resetAt = start + limit.windowMs;
    // A refused call consumes nothing.
    if (window.used >= limit.count) return { allowed: false, remaining: 0, resetAt };
    window.used += 1;
    return { allowed: true, remaining: limit.count - window.used, resetAt };
  }
}
