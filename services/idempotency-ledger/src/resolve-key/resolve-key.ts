import { createEvent, LedgerKeyResolvedV1 } from '@gatehouse/contracts';
import { z } from 'zod';
import { type LedgerPort } from '../engine/ledger-port.js';
import { codeForRejection, ok, type Outcome, refused } from '../errors.js';
import { ResultField } from '../http/request-fields.js';
import { ledgerMeta } from '@gatehouse/ledger-projection';
import { type Operator } from './operator-auth.js';

export const ResolveKeyRequest = z
  .object({
    decision: z.enum(['re-execute', 'mark-completed']),
    /** The result to record with `mark-completed`. */
    result: ResultField.optional(),
    comment: z.string().max(2000).optional(),
  })
  .refine((r) => r.decision === 'mark-completed' || r.result === undefined, { path: ['result'], message: 'is only recorded with mark-completed' });
export type ResolveKeyRequest = z.infer<typeof ResolveKeyRequest>;

export type ResolveKeyAnswer = { readonly status: 'resolved'; readonly decision: ResolveKeyRequest['decision'] };

/**
 * An operator's decision on an ambiguous key: `re-execute` frees it (the next reservation runs
 * the call again), `mark-completed` records a result. Refused for a key that is not ambiguous.
 */
export async function resolveKey(ledger: LedgerPort, key: string, request: ResolveKeyRequest, operator: Operator): Promise<Outcome<ResolveKeyAnswer>> {
  const { decision, result, comment } = request;
  const payload = {
    key,
    decision,
    operator: { id: operator.id, role: operator.role },
    ...(result === undefined ? {} : { result }),
    ...(comment === undefined ? {} : { comment }),
  };
  const verdict = await ledger.decide(createEvent(LedgerKeyResolvedV1, ledgerMeta(key), payload));
  if (verdict.kind === 'accepted') return ok({ status: 'resolved', decision });
  return refused(verdict.kind === 'rejected' ? codeForRejection(verdict.reason) : 'LEDGER.INTERNAL');
}
