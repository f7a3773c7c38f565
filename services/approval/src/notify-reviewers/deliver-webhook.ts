import { type AttemptOutcome, judgeStatus, retryDelayMs, type RetryPolicy } from './retry-policy.js';
import { SIGNATURE_HEADER, signatureHeader } from './webhook-signature.js';

/** One body for one target. */
export interface WebhookRequest {
  readonly url: URL;
  readonly secret: Buffer;
  readonly body: string;
  /** `approval.requested` and so on: the `x-gatehouse-event` header. */
  readonly eventType: string;
  readonly eventId: string;
}

/** What a delivery needs from its surroundings (`fetch`, clocks, timers): injected so a spec can drive it. */
export interface DeliveryDeps {
  readonly send: (url: URL, init: RequestInit) => Promise<Response>;
  readonly policy: RetryPolicy;
  readonly now: () => number;
  readonly random: () => number;
  /** Resolves after `ms`, or early once `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Aborted when the service stops: no further attempt, the current one is cut off. */
  readonly signal: AbortSignal;
  /** Told after every attempt, before the next one (the delivery table records it). */
  readonly onAttempt: (attempt: number, outcome: AttemptOutcome) => Promise<void>;
}

/** How a delivery ended. */
export interface DeliveryResult {
  readonly delivered: boolean;
  readonly attempts: number;
  /** The last attempt's outcome (none when stopped before the first). */
  readonly last?: AttemptOutcome;
  /** The service stopped before it was delivered or given up. */
  readonly stopped: boolean;
}

/** Resolves after `ms` or once `signal` aborts, whichever is first. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

async function attemptOnce(request: WebhookRequest, attempt: number, deps: DeliveryDeps): Promise<AttemptOutcome> {
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'gatehouse-approval-webhooks/1',
    // Signed per attempt: a retry carries a fresh timestamp, so a receiver's age check never refuses it.
    [SIGNATURE_HEADER]: signatureHeader(request.secret, request.body, deps.now()),
    'x-gatehouse-event': request.eventType,
    'x-gatehouse-event-id': request.eventId,
    'x-gatehouse-delivery-attempt': String(attempt),
  };
  const timeout = AbortSignal.timeout(deps.policy.timeoutMs);
  try {
    // A redirect is not followed: the signed body goes only where it was configured to go.
    const response = await deps.send(request.url, { method: 'POST', headers, body: request.body, redirect: 'manual', signal: AbortSignal.any([deps.signal, timeout]) });
    // What the receiver answered is never read, logged or stored: only its status counts.
    await response.body?.cancel().catch(() => undefined);
    return judgeStatus(response.status, response.headers.get('retry-after'));
  } catch {
    return { kind: 'retryable', error: timeout.aborted ? 'timeout' : 'network' };
  }
}

/**
 * POSTs one signed body until a 2xx, a refusal (any status but 429 and 5xx), `maxAttempts`
 * attempts, or the next wait would pass `totalMs` after the first attempt. Retries only network
 * errors, timeouts, 429 and 5xx, with jittered exponential waits.
 */
export async function deliverWebhook(request: WebhookRequest, deps: DeliveryDeps): Promise<DeliveryResult> {
  const started = deps.now();
  let last: AttemptOutcome | undefined;
  for (let attempt = 1; attempt <= deps.policy.maxAttempts; attempt += 1) {
    if (deps.signal.aborted) return { delivered: false, attempts: attempt - 1, ...(last && { last }), stopped: true };
    last = await attemptOnce(request, attempt, deps);
    await deps.onAttempt(attempt, last);
    if (last.kind !== 'retryable') return { delivered: last.kind === 'delivered', attempts: attempt, last, stopped: false };
    if (attempt === deps.policy.maxAttempts) break;
    const wait = retryDelayMs(attempt, deps.policy, deps.random, last.retryAfterMs);
    if (deps.now() + wait - started > deps.policy.totalMs) return { delivered: false, attempts: attempt, last, stopped: false };
    await deps.sleep(wait, deps.signal);
  }
  return { delivered: false, attempts: deps.policy.maxAttempts, ...(last && { last }), stopped: false };
}
