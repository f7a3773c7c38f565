/** How a delivery is retried: bounded in attempts and in total time, each wait jittered. */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly maxAttempts: number;
  /** The wait before the second attempt is between half of this and this, ms; it doubles per attempt. */
  readonly baseDelayMs: number;
  /** No wait is longer, ms (a receiver's `Retry-After` included). */
  readonly maxDelayMs: number;
  /** No attempt starts later than this after the first, ms. */
  readonly totalMs: number;
  /** Per attempt (connect, send, response headers), ms. */
  readonly timeoutMs: number;
}

/** Six attempts within two minutes: waits of 0.5-1, 1-2, 2-4, 4-8 and 8-16 s between them. */
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({ maxAttempts: 6, baseDelayMs: 1_000, maxDelayMs: 30_000, totalMs: 120_000, timeoutMs: 10_000 });

/** What one attempt came to: only `retryable` is tried again. */
export type AttemptOutcome =
  | { readonly kind: 'delivered'; readonly status: number }
  /** A network error, a timeout, a 5xx or a 429; `retryAfterMs` from the receiver's `Retry-After`. */
  | { readonly kind: 'retryable'; readonly status?: number; readonly error?: 'network' | 'timeout'; readonly retryAfterMs?: number }
  /** Any other status (a 4xx, a redirect, which is never followed): the receiver will not take it. */
  | { readonly kind: 'refused'; readonly status: number };

/** The outcome of an HTTP answer: 2xx delivered, 429 and 5xx retryable, the rest refused. */
export function judgeStatus(status: number, retryAfter: string | null = null): AttemptOutcome {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status === 429 || (status >= 500 && status < 600)) {
    const seconds = retryAfter !== null && /^\d{1,6}$/.test(retryAfter.trim()) ? Number(retryAfter.trim()) : undefined;
    return { kind: 'retryable', status, ...(seconds !== undefined && { retryAfterMs: seconds * 1000 }) };
  }
  return { kind: 'refused', status };
}

/**
 * The wait after failed attempt `attempt` (1-based): exponential, with "equal jitter" (uniform in
 * the upper half of the step, so receivers that failed together are not hit together again, and
 * no wait collapses to nothing), at least what the receiver asked for, at most `maxDelayMs`.
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random, retryAfterMs = 0): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const jittered = step / 2 + random() * (step / 2);
  return Math.round(Math.min(policy.maxDelayMs, Math.max(jittered, retryAfterMs)));
}
