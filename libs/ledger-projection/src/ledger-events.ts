/** The envelope fields of every event the ledger service appends. */
export const LEDGER_SOURCE = 'service:idempotency-ledger';

/**
 * The envelope tenant of events the service writes on its own (an expiry, an operator's
 * resolution), which do not come from a caller of a tenant. Events a caller's request causes
 * carry the tenant the service authenticated it for.
 */
export const LEDGER_TENANT = 'ledger';

/** Envelope metadata for an event about `subject` (a stored idempotency or budget key: the record key). */
export function ledgerMeta(subject: string, tenant: string = LEDGER_TENANT): { source: string; tenant: string; subject: string } {
  return { source: LEDGER_SOURCE, tenant, subject };
}
