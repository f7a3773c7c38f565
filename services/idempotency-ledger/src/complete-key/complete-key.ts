import { createEvent, LedgerKeyCompletedV1 } from '@gatehouse/contracts';
import { ledgerKeyOf } from '@gatehouse/ledger';
import { z } from 'zod';
import { type Caller, TenantName } from '../auth/agent-auth.js';
import { type LedgerPort } from '../engine/ledger-port.js';
import { codeForRejection, ok, type Outcome, refused } from '../errors.js';
import { LeaseTokenField, LedgerKeyField, ResultField } from '../http/request-fields.js';
import { ledgerMeta } from '@gatehouse/ledger-projection';

export const CompleteKeyRequest = z.object({
  tenant: TenantName.optional(),
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
 * Records the holder's result on a key of the caller's tenant. Only the current lease holder's
 * completion counts (the fold refuses a late one after a takeover); a repeated completion by the
 * same holder is answered as completed without writing again.
 */
export async function completeKey(ledger: LedgerPort, caller: Caller, request: CompleteKeyRequest): Promise<Outcome<{ status: 'completed' }>> {
  const key = ledgerKeyOf(caller.tenant, request.key);
  const { leaseToken, result } = request;
  if (completedBy(ledger, key, leaseToken)) return ok({ status: 'completed' });
  const verdict = await ledger.decide(createEvent(LedgerKeyCompletedV1, ledgerMeta(key, caller.tenant), result === undefined ? { key, leaseToken } : { key, leaseToken, result }));
  if (verdict.kind === 'accepted' || completedBy(ledger, key, leaseToken)) return ok({ status: 'completed' });
  return refused(verdict.kind === 'rejected' ? codeForRejection(verdict.reason) : 'LEDGER.INTERNAL');
}
