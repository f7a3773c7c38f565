import { sha256Hex } from '../digest.js';

/**
 * The opaque storage key of a business idempotency key: a hash over the JSON array of its
 * scope, so `a:b` in one scope can never collide with `a` + `b` in another. Anyone can compute
 * it, so it is not a secret and grants nothing: the ledger service stores it again scoped by the
 * tenant it authenticated the caller for, and answers only that caller's tenant.
 */
export function idempotencyStorageKey(scope: { readonly tenant: string; readonly connectorId: string; readonly key: string }): string {
  return sha256Hex(JSON.stringify(['gatehouse.idempotency.v2', scope.tenant, scope.connectorId, scope.key]));
}

/** The storage key of a rate-limit budget, scoped the same way. */
export function rateLimitStorageKey(scope: { readonly tenant: string; readonly connectorId: string }): string {
  return sha256Hex(JSON.stringify(['gatehouse.rate.v1', scope.tenant, scope.connectorId]));
}
