import { createEvent, LedgerKeyReconciledV1 } from '@gatehouse/contracts';
import { ledgerKeyOf } from '@gatehouse/ledger';
import { z } from 'zod';
import { type Caller, TenantName } from '../auth/agent-auth.js';
import { type LedgerPort } from '../engine/ledger-port.js';
import { codeForRejection, ok, type Outcome, refused } from '../errors.js';
import { LeaseTokenField, LedgerKeyField, ResultField } from '../http/request-fields.js';
import { ledgerMeta } from '@gatehouse/ledger-projection';

export const ReconcileKeyRequest = z.object({
  tenant: TenantName.optional(),
  key: LedgerKeyField,
  leaseToken: LeaseTokenField,
  outcome: z.enum(['already-applied', 'not-applied']),
  /** The outside world's result when the effect was already applied; it becomes the recorded result. */
  result: ResultField.optional(),
});
export type ReconcileKeyRequest = z.infer<typeof ReconcileKeyRequest>;

/** `completed`: the earlier attempt's result is recorded. `reserved`: the holder keeps a clean lease and executes. */
export type ReconcileKeyAnswer = { readonly status: 'completed' } | { readonly status: 'reserved'; readonly leaseToken: string };

/** Records a connector's reconcile answer on a key of the caller's tenant it took over (an ambiguous lease). */
export async function reconcileKey(ledger: LedgerPort, caller: Caller, request: ReconcileKeyRequest): Promise<Outcome<ReconcileKeyAnswer>> {
  const key = ledgerKeyOf(caller.tenant, request.key);
  const { leaseToken, outcome, result } = request;
  const payload = result === undefined ? { key, leaseToken, outcome } : { key, leaseToken, outcome, result };
  const verdict = await ledger.decide(createEvent(LedgerKeyReconciledV1, ledgerMeta(key, caller.tenant), payload));
  if (verdict.kind === 'accepted') return ok(outcome === 'already-applied' ? { status: 'completed' } : { status: 'reserved', leaseToken });
  return refused(verdict.kind === 'rejected' ? codeForRejection(verdict.reason) : 'LEDGER.INTERNAL');
}
