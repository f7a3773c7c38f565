import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { activeTraceContext, traceHeaders } from '@gatehouse/kafka';
import { ConnectorPolicyError } from '../errors.js';
import { type IdempotencyLookup, type IdempotencyReservation, type IdempotencyStore, type RateLimitAlgorithm, type RateLimitDecision, type RateLimitStore, type StoreScope } from '../types.js';

export interface LedgerClientOptions {
  /** Base URL of the idempotency-ledger service, e.g. `http://127.0.0.1:4103`. */
  readonly baseUrl: string;
  /**
   * This agent's API key for the ledger (required): the ledger knows its sha-256 and the tenants
   * it is bound to (GATEHOUSE_LEDGER_AGENTS). Sent as `Authorization: Bearer`, never logged.
   */
  readonly apiKey: string;
  /**
   * The tenant this store acts for: the tenant of a call that names none, and the only one it
   * serves (a call for another is refused without a request). Unset: each call's own tenant (a
   * connector always names it), or the agent's only tenant when a call names none.
   */
  readonly tenant?: string;
  /** Deadline of one request, ms (default 5,000). Past it the call fails closed. */
  readonly timeoutMs?: number;
  /** Transport (default: global fetch). */
  readonly fetch?: typeof fetch;
  /** Connector id recorded with reservations (default `unknown`). */
  readonly connectorId?: string;
}

const OPTION_FIELDS = new Set(['baseUrl', 'apiKey', 'tenant', 'timeoutMs', 'fetch', 'connectorId']);

interface ClientConfig {
  readonly base: URL;
  readonly authorization: string;
  readonly tenant: string | undefined;
  readonly timeoutMs: number;
  readonly transport: typeof fetch;
  readonly connectorId: string;
}

function unavailable(): GatehouseError {
  return new GatehouseError('LEDGER.UNAVAILABLE', 'the idempotency ledger did not answer', { category: 'unavailable', retryable: true });
}

function leaseLost(): ConnectorPolicyError {
  return new ConnectorPolicyError('CONNECTOR.IDEMPOTENCY_LEASE_LOST', 'the reservation was taken over; the late result was not recorded', {
    connectorId: 'ledger', policy: 'idempotency', category: 'idempotency',
  });
}

/** The ledger's refusals a caller can act on, with static texts (nothing of the answer is repeated). */
const REFUSALS = {
  'LEDGER.UNAUTHENTICATED': { message: 'the idempotency ledger did not accept this API key', category: 'security', retryable: false },
  'LEDGER.FORBIDDEN': { message: 'this API key is not bound to the tenant of the call', category: 'security', retryable: false },
  'LEDGER.PENDING_LIMIT': { message: 'this agent holds as many pending keys as the ledger allows', category: 'conflict', retryable: true },
  'LEDGER.BUDGET_LIMIT': { message: 'this agent created as many budgets as the ledger allows', category: 'conflict', retryable: false },
  'LEDGER.INVALID_REQUEST': { message: 'the idempotency ledger refused the request as invalid', category: 'validation', retryable: false },
} as const;
type RefusalCode = keyof typeof REFUSALS;

function refusal(answered: string): GatehouseError {
  const code: RefusalCode = Object.hasOwn(REFUSALS, answered) ? (answered as RefusalCode) : 'LEDGER.INVALID_REQUEST';
  const { message, category, retryable } = REFUSALS[code];
  return new GatehouseError(code, message, { category, retryable });
}

/** A non-200 answer as the error the store throws: a typed refusal for 4xx, unavailable otherwise. */
function failure(status: number, json: Record<string, unknown>): GatehouseError {
  if (status === 401) return refusal('LEDGER.UNAUTHENTICATED');
  if (status === 403) return refusal('LEDGER.FORBIDDEN');
  if (status === 429 || status === 400) return refusal(typeof json['code'] === 'string' ? json['code'] : 'LEDGER.INVALID_REQUEST');
  return unavailable();
}

function resolveOptions(options: LedgerClientOptions): ClientConfig {
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
  // The ledger's own bound on a credential; the key itself is never part of an error.
  if (typeof options.apiKey !== 'string' || !/^[\x21-\x7e]{16,4096}$/.test(options.apiKey)) throw new TypeError('createLedgerStores: apiKey must be 16 to 4096 visible ASCII characters');
  if (options.tenant !== undefined && (typeof options.tenant !== 'string' || options.tenant.length < 1 || options.tenant.length > 256)) throw new TypeError('createLedgerStores: tenant must be 1 to 256 characters');
  const timeoutMs = options.timeoutMs ?? 5_000;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new TypeError('createLedgerStores: timeoutMs must be a positive integer');
  return { base, authorization: `Bearer ${options.apiKey}`, tenant: options.tenant, timeoutMs, transport: options.fetch ?? fetch, connectorId: options.connectorId ?? 'unknown' };
}

/**
 * Sends one request for the call's tenant (in a POST's body, or a GET's query) and reads the
 * JSON answer; anything but an answer below 500 is unavailable.
 */
function caller(config: ClientConfig) {
  return async (method: 'GET' | 'POST', path: string, body: Record<string, unknown> | undefined, scope: StoreScope | undefined): Promise<{ status: number; json: Record<string, unknown> }> => {
    // A store bound to a tenant serves only that one: a call for another never leaves the process.
    if (config.tenant !== undefined && scope !== undefined && scope.tenant !== config.tenant) throw refusal('LEDGER.FORBIDDEN');
    const tenant = scope?.tenant ?? config.tenant;
    const url = new URL(path, config.base);
    if (method === 'GET' && tenant !== undefined) url.searchParams.set('tenant', tenant);
    let response: Response;
    try {
      response = await config.transport(url, {
        method,
        // The ledger's span continues the tool call's trace (no header with the SDK off).
        headers: { ...(method === 'POST' && { 'content-type': 'application/json' }), authorization: config.authorization, ...traceHeaders(activeTraceContext()) },
        ...(method === 'POST' && { body: JSON.stringify(tenant === undefined ? body : { ...body, tenant }) }),
        signal: AbortSignal.timeout(config.timeoutMs),
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
  };
}

function ledgerIdempotencyStore(send: ReturnType<typeof caller>, connectorId: string): IdempotencyStore {
  const post = (path: string, body: Record<string, unknown>, scope: StoreScope | undefined) => send('POST', path, body, scope);
  /** A write with a lease: 200 done, 409 the lease is lost, anything else fails closed. */
  const leased = async (path: string, body: Record<string, unknown>, scope: StoreScope | undefined): Promise<void> => {
    const { status, json } = await post(path, body, scope);
    if (status === 409) throw leaseLost();
    if (status !== 200) throw failure(status, json);
  };
  return {
    async reserve(key, { holder, pendingTtlMs }, scope): Promise<IdempotencyReservation> {
      const { status, json } = await post('/v1/idempotency/reservations', { key, connectorId, holder, pendingTtlMs }, scope);
      if (status !== 200) throw failure(status, json);
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
    complete: (key, leaseToken, result, scope) => leased('/v1/idempotency/completions', { key, leaseToken, ...(result === undefined ? {} : { result }) }, scope),
    fail: (key, leaseToken, f, scope) => leased('/v1/idempotency/failures', { key, leaseToken, code: f.code, retryable: f.retryable }, scope),
    reconcile: (key, leaseToken, outcome, scope) =>
      leased('/v1/idempotency/reconciliations', { key, leaseToken, outcome: outcome.outcome, ...(outcome.result === undefined ? {} : { result: outcome.result }) }, scope),
    // The projection's view: it may lag the log, so "absent" only means "not known here yet".
    async lookup(key, scope): Promise<IdempotencyLookup> {
      const { status, json } = await send('GET', `/v1/idempotency/keys/${encodeURIComponent(key)}`, undefined, scope);
      if (status === 404) return { status: 'absent' };
      if (status !== 200) throw failure(status, json);
      switch (json['status']) {
        case 'completed':
          return { status: 'completed', result: json['result'] as JsonValue | undefined };
        case 'pending':
        case 'ambiguous':
          return { status: json['status'] };
        default:
          throw unavailable();
      }
    },
  };
}

// Stores this module built: the single-tenant preset accepts only these as durable.
const durableStores = new WeakSet<object>();

/** True for a store `createLedgerStores` built (shared across processes through the ledger service). */
export function isDurableStore(store: unknown): boolean {
  return store !== null && typeof store === 'object' && durableStores.has(store);
}

/**
 * The durable stores: idempotency and shared budgets decided by the idempotency-ledger
 * service (the log is the arbiter there), as this agent (`apiKey`) and for the call's tenant.
 * Every failure to get an answer throws, so the connector gate fails closed; nothing is ever
 * assumed. A refusal of the key, of the tenant or past the ledger's bounds is a typed error
 * (`LEDGER.UNAUTHENTICATED`, `LEDGER.FORBIDDEN`, `LEDGER.PENDING_LIMIT`, `LEDGER.BUDGET_LIMIT`).
 */
export function createLedgerStores(options: LedgerClientOptions): { idempotencyStore: IdempotencyStore; rateLimitStore: RateLimitStore } {
  const config = resolveOptions(options);
  const send = caller(config);
  const rateLimitStore: RateLimitStore = {
    async consume(budgetKey, limit: { count: number; windowMs: number; algorithm?: RateLimitAlgorithm }, scope): Promise<RateLimitDecision> {
      const { status, json } = await send('POST', '/v1/rate/consumptions', { budgetKey, algorithm: limit.algorithm ?? 'fixed-window', count: limit.count, windowMs: limit.windowMs }, scope);
      if (status !== 200) throw failure(status, json);
      if (typeof json['allowed'] !== 'boolean' || typeof json['remaining'] !== 'number' || typeof json['resetAt'] !== 'number') throw unavailable();
      return { allowed: json['allowed'], remaining: json['remaining'], resetAt: json['resetAt'] };
    },
  };
  const stores = Object.freeze({ idempotencyStore: Object.freeze(ledgerIdempotencyStore(send, config.connectorId)), rateLimitStore: Object.freeze(rateLimitStore) });
  durableStores.add(stores.idempotencyStore);
  durableStores.add(stores.rateLimitStore);
  return stores;
}
