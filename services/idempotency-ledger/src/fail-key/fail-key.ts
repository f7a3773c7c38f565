import { createEvent, LedgerKeyFailedV1 } from '@gatehouse/contracts';
import { ledgerKeyOf } from '@gatehouse/ledger';
import { z } from 'zod';
import { type Caller, TenantName } from '../auth/agent-auth.js';
import { type LedgerPort } from '../engine/ledger-port.js';
import { codeForRejection, ok, type Outcome, refused } from '../errors.js';
import { IdentifierField, LeaseTokenField, LedgerKeyField } from '../http/request-fields.js';
import { ledgerMeta } from '@gatehouse/ledger-projection';

export const FailKeyRequest = z.object({
  tenant: TenantName.optional(),
  key: LedgerKeyField,
  leaseToken: LeaseTokenField,
  /** The execution's stable error code (never its message). */
  code: IdentifierField,
  retryable: z.boolean(),
});
export type FailKeyRequest = z.infer<typeof FailKeyRequest>;

/** `ambiguous`: the holder had taken the key over, so the earlier attempt's effect is unknown. */
export type FailKeyAnswer = { readonly status: 'failed'; readonly keyStatus: 'free' | 'ambiguous' };

/** Gives a key of the caller's tenant back after a failed execution; after a takeover it stays ambiguous instead. */
export async function failKey(ledger: LedgerPort, caller: Caller, request: FailKeyRequest): Promise<Outcome<FailKeyAnswer>> {
  const key = ledgerKeyOf(caller.tenant, request.key);
  const { leaseToken, code, retryable } = request;
  const verdict = await ledger.decide(createEvent(LedgerKeyFailedV1, ledgerMeta(key, caller.tenant), { key, leaseToken, code, retryable }));
  if (verdict.kind === 'accepted') return ok({ status: 'failed', keyStatus: ledger.key(key)?.status === 'ambiguous' ? 'ambiguous' : 'free' });
  return refused(verdict.kind === 'rejected' ? codeForRejection(verdict.reason) : 'LEDGER.INTERNAL');
}
