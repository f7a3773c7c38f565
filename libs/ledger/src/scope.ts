import { createHash } from 'node:crypto';

/**
 * The key the ledger stores for a caller's idempotency key `clientKey` in `tenant`. The ledger
 * service derives it from the tenant it authenticated the caller for, never from anything the
 * caller says the stored key is: the same client key in two tenants is two keys, and a caller who
 * knows another tenant's stored key cannot address it (what it sends is hashed into its own tenant).
 * A hash over the JSON array, so no tenant or key can be spliced into another.
 */
export function ledgerKeyOf(tenant: string, clientKey: string): string {
  return createHash('sha256').update(JSON.stringify(['gatehouse.ledger.key.v1', tenant, clientKey])).digest('hex');
}

/** The budget key the ledger stores for a caller's budget key in `tenant`, scoped the same way. */
export function ledgerBudgetKeyOf(tenant: string, clientBudgetKey: string): string {
  return createHash('sha256').update(JSON.stringify(['gatehouse.ledger.budget.v1', tenant, clientBudgetKey])).digest('hex');
}
