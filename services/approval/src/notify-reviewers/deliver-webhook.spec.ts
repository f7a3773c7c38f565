import { describe, expect, it } from '@jest/globals';
import { type DeliveryDeps, deliverWebhook, type WebhookRequest } from './deliver-webhook.js';
import { type AttemptOutcome, DEFAULT_RETRY, judgeStatus, retryDelayMs, type RetryPolicy } from './retry-policy.js';
import { SIGNATURE_HEADER, verifySignature } from './webhook-signature.js';

const secret = Buffer.from('k'.repeat(32));
const request: WebhookRequest = { url: new URL('https://hooks.example.com/approvals'), secret, body: '{"type":"approval.requested"}', eventType: 'approval.requested', eventId: 'e-1' };
const policy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 8_000, totalMs: 60_000, timeoutMs: 5_000 };

type Answer = number | 'network-error' | { status: number; retryAfter: string };

/** A receiver answering `answers` in turn, on a clock that only the delivery's waits move. */
function harness(answers: readonly Answer[], options: { policy?: RetryPolicy; abortAfterAttempts?: number } = {}) {
  // 0.6 s into a second: the first wait (750 ms) crosses into the next one, so a retry's timestamp differs.
  let now = Date.UTC(2026, 0, 15) + 600;
  const sent: { headers: Record<string, string>; body: string; at: number; redirect: RequestInit['redirect'] }[] = [];
  const waits: number[] = [];
  const attempts: [number, AttemptOutcome][] = [];
  const stop = new AbortController();
  const deps: DeliveryDeps = {
    send: async (_url, init) => {
      sent.push({ headers: init.headers as Record<string, string>, body: String(init.body), at: now, redirect: init.redirect });
      if (sent.length === options.abortAfterAttempts) stop.abort();
      const answer = answers[sent.length - 1] ?? 200;
      if (answer === 'network-error') throw new TypeError('fetch failed');
      if (typeof answer === 'number') return new Response(null, { status: answer });
      return new Response(null, { status: answer.status, headers: { 'retry-after': answer.retryAfter } });
    },
    policy: options.policy ?? policy,
    now: () => now,
    random: () => 0.5,
    sleep: async (ms, signal) => {
      waits.push(ms);
      if (!signal.aborted) now += ms;
    },
    signal: stop.signal,
    onAttempt: async (attempt, outcome) => void attempts.push([attempt, outcome]),
  };
  return { deps, sent, waits, attempts, stop };
}

describe('judging an answer', () => {
  it('delivers on 2xx, retries 429 and 5xx, and refuses every other status (a redirect included)', () => {
    expect([200, 202, 204].map((s) => judgeStatus(s).kind)).toEqual(['delivered', 'delivered', 'delivered']);
    expect([429, 500, 502, 503, 504].map((s) => judgeStatus(s).kind)).toEqual(Array(5).fill('retryable'));
    expect([301, 302, 400, 401, 404, 408, 410, 422].map((s) => judgeStatus(s).kind)).toEqual(Array(8).fill('refused'));
  });

  it("reads a receiver's Retry-After in seconds, and ignores a date", () => {
    expect(judgeStatus(429, '7')).toEqual({ kind: 'retryable', status: 429, retryAfterMs: 7_000 });
    expect(judgeStatus(503, 'Wed, 21 Oct 2026 07:28:00 GMT')).toEqual({ kind: 'retryable', status: 503 });
  });
});

describe('the backoff', () => {
  it('doubles per attempt, each wait in the upper half of its step, never above the cap', () => {
    for (const random of [0, 0.3, 0.999]) {
      const waits = [1, 2, 3, 4, 5, 6].map((attempt) => retryDelayMs(attempt, policy, () => random));
      const steps = [1_000, 2_000, 4_000, 8_000, 8_000, 8_000];
      waits.forEach((wait, i) => {
        expect(wait).toBeGreaterThanOrEqual((steps[i] as number) / 2);
        expect(wait).toBeLessThanOrEqual(steps[i] as number);
      });
    }
  });

  it("is jittered: two deliveries that failed together wait differently", () => {
    const waits = new Set(Array.from({ length: 20 }, () => retryDelayMs(3, policy)));
    expect(waits.size).toBeGreaterThan(1);
  });

  it("waits at least what the receiver asked for, but never longer than the cap", () => {
    expect(retryDelayMs(1, policy, () => 0, 5_000)).toBe(5_000);
    expect(retryDelayMs(1, policy, () => 0, 3_600_000)).toBe(policy.maxDelayMs);
  });

  it('by default tries six times within two minutes', () => {
    const worst = [1, 2, 3, 4, 5].reduce((sum, attempt) => sum + retryDelayMs(attempt, DEFAULT_RETRY, () => 1), 0);
    expect(DEFAULT_RETRY.maxAttempts).toBe(6);
    expect(worst).toBeLessThan(DEFAULT_RETRY.totalMs);
  });
});

describe('a delivery', () => {
  it('retries a refused first attempt and delivers the same body, each attempt signed at its own time', async () => {
    const h = harness([503, 200]);
    const result = await deliverWebhook(request, h.deps);
    expect(result).toMatchObject({ delivered: true, attempts: 2, stopped: false });
    expect(h.waits).toEqual([750]);
    expect(h.sent.map((s) => s.body)).toEqual([request.body, request.body]);
    expect(h.sent.map((s) => s.headers['x-gatehouse-delivery-attempt'])).toEqual(['1', '2']);
    for (const s of h.sent) {
      expect(s.headers['x-gatehouse-event']).toBe('approval.requested');
      expect(s.headers['x-gatehouse-event-id']).toBe('e-1');
      expect(verifySignature(secret, s.headers[SIGNATURE_HEADER], s.body, s.at)).toBe('ok');
    }
    expect(h.sent[0]?.headers[SIGNATURE_HEADER]).not.toBe(h.sent[1]?.headers[SIGNATURE_HEADER]);
    expect(h.attempts.map(([n, o]) => [n, o.kind])).toEqual([[1, 'retryable'], [2, 'delivered']]);
  });

  it('retries network errors and 429 and follows no redirect', async () => {
    const h = harness(['network-error', { status: 429, retryAfter: '3' }, 204]);
    expect(await deliverWebhook(request, h.deps)).toMatchObject({ delivered: true, attempts: 3 });
    expect(h.waits).toEqual([750, 3_000]);
    expect(h.attempts[0]?.[1]).toEqual({ kind: 'retryable', error: 'network' });
    expect(h.sent.every((s) => s.redirect === 'manual')).toBe(true);
  });

  it('does not retry a 4xx or a redirect', async () => {
    for (const status of [400, 410, 302]) {
      const h = harness([status]);
      expect(await deliverWebhook(request, h.deps)).toEqual({ delivered: false, attempts: 1, last: { kind: 'refused', status }, stopped: false });
      expect(h.waits).toEqual([]);
    }
  });

  it('gives up after the last attempt', async () => {
    const h = harness([500, 500, 500, 500, 200]);
    expect(await deliverWebhook(request, h.deps)).toMatchObject({ delivered: false, attempts: 4, last: { kind: 'retryable', status: 500 } });
    expect(h.sent).toHaveLength(4);
  });

  it('gives up when the next wait would end past the total time', async () => {
    const h = harness([503, 503, 503, 503], { policy: { ...policy, totalMs: 5_000 } });
    // Waits of 750 and 1,500 ms fit in 5 s; the third (3,000 ms) would end at 5,250 ms.
    expect(await deliverWebhook(request, h.deps)).toMatchObject({ delivered: false, attempts: 3 });
    expect(h.waits).toEqual([750, 1_500]);
  });

  it('stops at once when the service stops, without another attempt', async () => {
    const h = harness([503, 503, 200], { abortAfterAttempts: 1 });
    expect(await deliverWebhook(request, h.deps)).toMatchObject({ delivered: false, attempts: 1, stopped: true });
    expect(h.sent).toHaveLength(1);
  });
});
