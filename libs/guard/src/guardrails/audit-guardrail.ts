import { type AuditLogger } from '../audit/audit-logger.js';
import { type AuditEvent, type DecisionOutcome } from '../audit/types.js';
import { auditContextFromRequestContext } from '../context.js';
import { recordGateDecision } from '../internal/gate-audit.js';
import { actorFromRequestContext } from '../rbac/actor.js';
import { ACTION_REASON, GUARDRAIL_REASONS, type GuardrailReasonCode, isGuardrailReasonCode } from './reasons.js';
import { GUARDRAIL_FAULT_REASON, type GuardrailDecision } from './run-guardrails.js';
import { type GuardrailAction, type GuardrailPlacement } from './types.js';

/** Stable codes of guardrail decisions, as audit events and refusals carry them. */
export type GuardrailCode =
  | 'GUARDRAIL.ALLOWED'
  | 'GUARDRAIL.OBSERVED'
  | 'GUARDRAIL.MASKED'
  | 'GUARDRAIL.REWRITTEN'
  | 'GUARDRAIL.DENIED'
  | 'GUARDRAIL.APPROVAL_REQUIRED'
  | 'GUARDRAIL.HALTED'
  | 'GUARDRAIL.FAULT'
  | 'GUARDRAIL.APPROVAL_UNAVAILABLE'
  | 'GUARDRAIL.AUDIT_UNAVAILABLE';

const CODE_OF: Record<GuardrailAction, GuardrailCode> = {
  allow: 'GUARDRAIL.ALLOWED',
  observe: 'GUARDRAIL.OBSERVED',
  mask: 'GUARDRAIL.MASKED',
  rewrite: 'GUARDRAIL.REWRITTEN',
  deny: 'GUARDRAIL.DENIED',
  approve: 'GUARDRAIL.APPROVAL_REQUIRED',
  halt: 'GUARDRAIL.HALTED',
};

const OUTCOME_OF: Record<GuardrailAction, DecisionOutcome> = {
  allow: 'allowed',
  observe: 'observed',
  mask: 'masked',
  rewrite: 'rewritten',
  deny: 'denied',
  approve: 'approval-required',
  halt: 'denied',
};

/** The stable code of a decision: a fault is `GUARDRAIL.FAULT`, whatever action it became. */
export function guardrailCode(decision: GuardrailDecision): GuardrailCode {
  return decision.fault ? 'GUARDRAIL.FAULT' : CODE_OF[decision.verdict.action];
}

/**
 * The catalogue code of a decision's reason: the verdict's, when it names one of the catalogue, else
 * the fault's, else the action's. Never text a guardrail wrote.
 */
export function guardrailReasonCode(decision: GuardrailDecision): GuardrailReasonCode {
  const { reason, action } = decision.verdict;
  if (isGuardrailReasonCode(reason)) return reason;
  if (decision.fault) return GUARDRAIL_FAULT_REASON[decision.fault];
  return ACTION_REASON[action];
}

/** The sentence of a decision's reason, as records, refusals, tripwires and halts show it. */
export function guardrailReason(decision: GuardrailDecision): string {
  return GUARDRAIL_REASONS[guardrailReasonCode(decision)];
}

export interface GuardrailAuditTarget {
  readonly placement: GuardrailPlacement;
  /** `agent:<id>`, `tool:<id>`, `check:<name>` ... */
  readonly resource: string;
  readonly requestContext?: unknown;
  /** Extra scalar facts (tool id, toolCallId): never content. */
  readonly detail?: Readonly<Record<string, string | number | boolean>>;
  /** `performance.now()` when the guardrails began to judge: the gate's latency. */
  readonly startedAt?: number;
}

/**
 * Records one guardrail decision (boundary `guardrail`; placement and guardrail name in `policy`
 * and `detail`; detections; never the value). Returns false when a required sink refused it.
 */
export function recordGuardrailDecision(audit: AuditLogger | undefined, decision: GuardrailDecision, target: GuardrailAuditTarget): Promise<boolean> {
  const actor = actorFromRequestContext(target.requestContext);
  const event: Omit<AuditEvent, 'id' | 'timestamp'> = {
    boundary: 'guardrail',
    action: `guardrail.${target.placement}`,
    resource: target.resource,
    decision: decision.fault ? 'error' : OUTCOME_OF[decision.verdict.action],
    code: guardrailCode(decision),
    reason: guardrailReason(decision),
    context: auditContextFromRequestContext(target.requestContext),
    ...(actor ? { actor: { ...actor, kind: actor.kind ?? 'human' } } : {}),
    policy: { name: decision.by ?? 'all', phase: target.placement },
    detections: decision.verdict.detections,
    detail: {
      ...target.detail,
      placement: target.placement,
      guardrail: decision.by ?? 'all',
      verdict: decision.verdict.action,
      outcome: decision.verdict.outcome,
      reasonCode: guardrailReasonCode(decision),
      checked: decision.ran.length,
      ...(decision.fault ? { fault: decision.fault } : {}),
    },
  };
  return recordGateDecision(audit, event, target.startedAt);
}
