/** The envelope fields of every event the ledger service appends. */
export const LEDGER_SOURCE = 'service:idempotency-ledger';

/**
 * Ledger keys are opaque hashes that already scope tenant and connector (the caller hashes
 * them), so the service does not learn the tenant; the envelope says so plainly.
 */
export const LEDGER_TENANT = 'ledger';

/** Envelope metadata for an event about `subject` (an idempotency or budget key: the record key). */
export function ledgerMeta(subject: string): { source: string; tenant: string; subject: string } {
  return { source: LEDGER_SOURCE, tenant: LEDGER_TENANT, subject };
}
