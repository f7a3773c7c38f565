import { createEvent, LedgerKeyCompletedV1 } from '@gatehouse/contracts';
import { z } from 'zod';
import { type LedgerPort } from '../engine/ledger-port.js';
import { codeForRejection, ok, type Outcome, refused } from '../errors.js';
import { LeaseTokenField, LedgerKeyField, ResultField } from '../http/request-fields.js';
import { ledgerMeta } from '../ledger-events.js';

export const CompleteKeyRequest = z.object({
  key: LedgerKeyField,
  leaseToken: LeaseTokenField,
  /** Omitted when the execution returned nothing. */
  result: ResultField.optional(),
});
export type CompleteKeyRequest = z.infer<typeof CompleteKeyRequest>;

const completedBy = (ledger: LedgerPort, key: string, leaseToken: string) => {
  const current = ledger.key(key);
  return current?.status === 'completed' && current.leaseToken === leaseToken;
};

/**
 * Records the holder's result. Only the current lease holder's completion counts (the fold
 * refuses a late one after a takeover); a repeated completion by the same holder is answered
 * as completed without writing again.
 */
export async function completeKey(ledger: LedgerPort, request: CompleteKeyRequest): Promise<Outcome<{ status: 'completed' }>> {
  if (completedBy(ledger, request.key, request.leaseToken)) return ok({ status: 'completed' });
  const { key, leaseToken, result } = request;
  const verdict = await ledger.decide(createEvent(LedgerKeyCompletedV1, ledgerMeta(key), result === undefined ? { key, leaseToken } : { key, leaseToken, result }));
  if (verdict.kind === 'accepted' || completedBy(ledger, key, leaseToken)) return ok({ status: 'completed' });
  return refused(verdict.kind === 'rejected' ? codeForRejection(verdict.reason) : 'LEDGER.INTERNAL');
}
