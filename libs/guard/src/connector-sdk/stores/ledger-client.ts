import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { ConnectorPolicyError } from '../errors.js';
import { type IdempotencyReservation, type IdempotencyStore, type RateLimitAlgorithm, type RateLimitDecision, type RateLimitStore } from '../types.js';

export interface LedgerClientOptions {
  /** Base URL of the idempotency-ledger service, e.g. `http://127.0.0.1:4103`. */
  readonly baseUrl: string;
  /** Deadline of one request, ms (default 5,000). Past it the call fails closed. */
  readonly timeoutMs?: number;
  /** Transport (default: global fetch). */
  readonly fetch?: typeof fetch;
  /** Connector id recorded with reservations (default `unknown`). */
  readonly connectorId?: string;
}

const OPTION_FIELDS = new Set(['baseUrl', 'timeoutMs', 'fetch', 'connectorId']);

function unavailable(): GatehouseError {
  return new GatehouseError('LEDGER.UNAVAILABLE', 'the idempotency ledger did not answer', { category: 'unavailable', retryable: true });
}

function leaseLost(): ConnectorPolicyError {
  return new ConnectorPolicyError('CONNECTOR.IDEMPOTENCY_LEASE_LOST', 'the reservation was taken over; the late result was not recorded', {
    connectorId: 'ledger', policy: 'idempotency', category: 'idempotency',
  });
}

/**
 * The durable stores: idempotency and shared budgets decided by the idempotency-ledger
 * service (the log is the arbiter there). Every failure to get an answer throws, so the
 * connector gate fails closed; nothing is ever assumed.
 */
export function createLedgerStores(options: LedgerClientOptions): { idempotencyStore: IdempotencyStore; rateLimitStore: RateLimitStore } {
  if (options === null || typeof options !== 'object') throw new TypeError('createLedgerStores: options are required');
  const unknown = Object.keys(options).filter((k) => !OPTION_FIELDS.has(k));
  if (unknown.length > 0) throw new TypeError(`createLedgerStores: unknown option ${unknown.map((k) => `"${k}"`).join(', ')}`);
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch {
    throw new TypeError('createLedgerStores: baseUrl must be an absolute http(s) URL');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError('createLedgerStores: baseUrl must be an absolute http(s) URL');
  const timeoutMs = options.timeoutMs ?? 5_000;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new TypeError('createLedgerStores: timeoutMs must be a positive integer');
  const transport = options.fetch ?? fetch;
  const connectorId = options.connectorId ?? 'unknown';

  async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    let response: Response;
    try {
      response = await transport(new URL(path, base), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch {
      throw unavailable();
    }
    let json: Record<string, unknown>;
    try {
      json = (await response.json()) as Record<string, unknown>;
    } catch {
      throw unavailable();
    }
    if (response.status >= 500 || json === null || typeof json !== 'object') throw unavailable();
    return { status: response.status, json };
  }

  const idempotencyStore: IdempotencyStore = {
    async reserve(key, { holder, pendingTtlMs }): Promise<IdempotencyReservation> {
      const { status, json } = await post('/v1/idempotency/reservations', { key, connectorId, holder, pendingTtlMs });
      if (status !== 200) throw unavailable();
      switch (json['status']) {
        case 'reserved':
          if (typeof json['leaseToken'] !== 'string') throw unavailable();
          return { status: 'reserved', leaseToken: json['leaseToken'], takenOver: json['takenOver'] === true };
        case 'completed':
          return { status: 'completed', result: json['result'] as JsonValue | undefined };
        case 'pending':
          return { status: 'pending' };
        case 'ambiguous':
          return { status: 'ambiguous' };
        default:
          throw unavailable();
      }
    },
    async complete(key, leaseToken, result) {
      const { status } = await post('/v1/idempotency/completions', { key, leaseToken, ...(result === undefined ? {} : { result }) });
      if (status === 409) throw leaseLost();
      if (status !== 200) throw unavailable();
    },
    async fail(key, leaseToken, failure) {
      const { status } = await post('/v1/idempotency/failures', { key, leaseToken, code: failure.code, retryable: failure.retryable });
      if (status === 409) throw leaseLost();
      if (status !== 200) throw unavailable();
    },
    async reconcile(key, leaseToken, outcome) {
      const { status } = await post('/v1/idempotency/reconciliations', { key, leaseToken, outcome: outcome.outcome, ...(outcome.result === undefined ? {} : { result: outcome.result }) });
      if (status === 409) throw leaseLost();
      if (status !== 200) throw unavailable();
    },
  };

  const rateLimitStore: RateLimitStore = {
    async consume(budgetKey, limit: { count: number; windowMs: number; algorithm?: RateLimitAlgorithm }): Promise<RateLimitDecision> {
      const { status, json } = await post('/v1/rate/consumptions', { budgetKey, algorithm: limit.algorithm ?? 'fixed-window', count: limit.count, windowMs: limit.windowMs });
      if (status !== 200 || typeof json['allowed'] !== 'boolean' || typeof json['remaining'] !== 'number' || typeof json['resetAt'] !== 'number') throw unavailable();
      return { allowed: json['allowed'], remaining: json['remaining'], resetAt: json['resetAt'] };
    },
  };
  return Object.freeze({ idempotencyStore: Object.freeze(idempotencyStore), rateLimitStore: Object.freeze(rateLimitStore) });
}
