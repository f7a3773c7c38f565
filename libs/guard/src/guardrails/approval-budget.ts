// The approval budget of one guarded run (Duraton's `approval-budget` ceiling): how many calls the
// run may park on a person. Kept beside the run's RequestContext, never in it, so no tool can read
// or reset it; a connector takes one approval from it before it asks a reviewer, and the loop ends
// before the next model step once a call was refused for want of one.
import { type Abort } from '../internal/gate-audit.js';

interface ApprovalBudget {
  readonly limit: number;
  used: number;
  exhausted: boolean;
}

const budgets = new WeakMap<object, ApprovalBudget>();

export const APPROVAL_BUDGET_PROCESSOR_ID = 'gatehouse-approval-budget';
/** The sentence a run stopped by its approval budget shows. */
export const APPROVAL_BUDGET_REASON = 'the run used up its approval budget';
/** Most approvals a budget may allow. */
export const MAX_APPROVAL_BUDGET = 1_000;

const keyOf = (rc: unknown): object | undefined => (rc !== null && typeof rc === 'object' ? rc : undefined);

/** Throws a TypeError unless `value` is a budget: an integer from 0 (no approvals) to 1,000. */
export function readApprovalBudget(value: unknown, where: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_APPROVAL_BUDGET) {
    throw new TypeError(`${where}: approvalBudget must be an integer from 0 to ${MAX_APPROVAL_BUDGET}`);
  }
  return value as number;
}

/** Gives the run of `requestContext` a budget of `limit` approvals. */
export function setApprovalBudget(requestContext: object, limit: number): void {
  budgets.set(requestContext, { limit, used: 0, exhausted: false });
}

/** The same budget for a copy of a run's context (a copy is the same run). */
export function shareApprovalBudget(from: unknown, to: object): void {
  const key = keyOf(from);
  const budget = key === undefined ? undefined : budgets.get(key);
  if (budget) budgets.set(to, budget);
}

/**
 * Takes one approval from the run's budget before a person is asked. False, and the run marked
 * exhausted, when none is left; true when the run has no budget.
 */
export function takeApproval(requestContext: unknown): boolean {
  const key = keyOf(requestContext);
  const budget = key === undefined ? undefined : budgets.get(key);
  if (!budget) return true;
  if (budget.used >= budget.limit) {
    budget.exhausted = true;
    return false;
  }
  budget.used += 1;
  return true;
}

/** True once a call of the run was refused for want of an approval. */
export function approvalBudgetExhausted(requestContext: unknown): boolean {
  const key = keyOf(requestContext);
  return key !== undefined && budgets.get(key)?.exhausted === true;
}

/** Ends the loop before the next model step once the run's approval budget ran out. */
export class ApprovalBudgetProcessor {
  readonly id = APPROVAL_BUDGET_PROCESSOR_ID;
  readonly name = 'gatehouse approval budget';

  processInputStep(args: { requestContext?: unknown; abort: Abort }): undefined {
    if (approvalBudgetExhausted(args.requestContext)) args.abort(APPROVAL_BUDGET_REASON, { metadata: { code: 'AGENT.APPROVAL_BUDGET' } });
    return undefined;
  }
}

/**
 * What a guarded call returns once its approval budget ran out: a ceiling that fired (like a halt),
 * not a run that broke; no text, since the loop ended before the model could answer.
 */
export function approvalBudgetStop(runId: string | undefined) {
  return Object.freeze({
    stopReason: 'approval-budget' as const,
    text: '',
    finishReason: 'tripwire',
    tripwire: Object.freeze({ reason: APPROVAL_BUDGET_REASON, code: 'AGENT.APPROVAL_BUDGET', processorId: APPROVAL_BUDGET_PROCESSOR_ID }),
    runId,
  });
}
