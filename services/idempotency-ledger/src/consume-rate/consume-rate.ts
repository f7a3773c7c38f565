import { randomUUID } from 'node:crypto';
import { createEvent, LedgerRateConsumedV1 } from '@gatehouse/contracts';
import { ledgerBudgetKeyOf } from '@gatehouse/ledger';
import { z } from 'zod';
import { type Caller, TenantName } from '../auth/agent-auth.js';
import { type LedgerPort, reachedBound } from '../engine/ledger-port.js';
import { LedgerError, ok, type Outcome, refused } from '../errors.js';
import { LedgerKeyField } from '../http/request-fields.js';
import { ledgerMeta } from '@gatehouse/ledger-projection';

/** The algorithms the contract knows, so the API never accepts one the fold cannot apply. */
const Algorithm = LedgerRateConsumedV1.shape.payload.shape.algorithm;

/** A sliding window keeps one log time per admission: bound it. */
const MAX_SLIDING_COUNT = 10_000;
const MAX_WINDOW_MS = 31 * 24 * 60 * 60 * 1000;

export const ConsumeRateRequest = z
  .object({
    tenant: TenantName.optional(),
    budgetKey: LedgerKeyField,
    algorithm: Algorithm,
    count: z.number().int().positive().max(1_000_000),
    windowMs: z.number().int().positive().max(MAX_WINDOW_MS),
  })
  .refine((r) => r.algorithm !== 'sliding-window' || r.count <= MAX_SLIDING_COUNT, {
    path: ['count'],
    message: `must be at most ${MAX_SLIDING_COUNT} for a sliding window`,
  });
export type ConsumeRateRequest = z.infer<typeof ConsumeRateRequest>;

export interface ConsumeRateAnswer {
  readonly allowed: boolean;
  readonly remaining: number;
  /** Epoch ms (log time) when one more unit frees up. */
  readonly resetAt: number;
}

/**
 * Asks for one unit of a shared budget of the caller's tenant; the fold admits or refuses it by
 * log time, and a refusal consumes nothing. A request that would create a budget past the
 * caller's `maxBudgets` is refused (LEDGER.BUDGET_LIMIT) before anything is appended.
 */
export async function consumeRate(ledger: LedgerPort, caller: Caller, request: ConsumeRateRequest, maxBudgets: number): Promise<Outcome<ConsumeRateAnswer>> {
  const budgetKey = ledgerBudgetKeyOf(caller.tenant, request.budgetKey);
  if (ledger.budget(budgetKey) === undefined && reachedBound(ledger.budgetsOf(caller.principal, budgetKey), maxBudgets)) return refused('LEDGER.BUDGET_LIMIT');
  const { algorithm, count, windowMs } = request;
  const payload = { budgetKey, claimId: randomUUID(), algorithm, count, windowMs, principal: caller.principal };
  const verdict = await ledger.decide(createEvent(LedgerRateConsumedV1, ledgerMeta(budgetKey, caller.tenant), payload));
  switch (verdict.kind) {
    case 'admitted':
      return ok({ allowed: true, remaining: verdict.remaining, resetAt: verdict.resetAt });
    case 'refused':
      return ok({ allowed: false, remaining: 0, resetAt: verdict.resetAt });
    case 'accepted':
    case 'rejected':
      throw new LedgerError('LEDGER.INTERNAL', { reason: 'unexpected-verdict' });
    default: {
      const exhaustive: never = verdict;
      return exhaustive;
    }
  }
}
