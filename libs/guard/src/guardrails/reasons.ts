// The one catalogue of guardrail reasons. A verdict names a reason by code; what reaches an audit
// record, a refusal the model reads, a tripwire or a halt is the code's fixed sentence, never text a
// guardrail wrote. A guardrail that judged a value could otherwise repeat it, encode it or paraphrase
// it in its reason, and no filter over the value can tell (a number, a short id, base64, uppercase).
import { type GuardrailAction } from './types.js';

/** Every reason a guardrail decision may carry: a stable code and the fixed sentence records show. */
export const GUARDRAIL_REASONS = Object.freeze({
  // The fallback of each action, for a verdict that names no reason (or one outside the catalogue).
  'guardrail.allowed': 'guardrails passed',
  'guardrail.observed': 'recorded by a guardrail, not enforced',
  'guardrail.masked': 'masked by a guardrail',
  'guardrail.rewritten': 'rewritten by a guardrail',
  'guardrail.denied': 'refused by a guardrail',
  'approval.required': 'a guardrail requires a person to approve this',
  'guardrail.halted': 'stopped by a guardrail',
  // The runner's and the agent loop's own.
  'guardrail.fault': 'guardrail check failed',
  'guardrail.invalid-verdict': 'guardrail returned an invalid verdict',
  'guardrail.timeout': 'guardrail check timed out',
  'guardrail.unrecorded': 'guardrail decision could not be recorded',
  'guardrail.failed': 'guardrail check failed outright',
  'guardrail.journal-unavailable': 'the recorded guardrail verdicts could not be read or written',
  'guardrail.not-json': 'the value is not JSON, so no guardrail could judge it',
  'approval.unavailable': 'approval required but no approvals gateway is configured for this tool',
  // Shipped guardrails.
  'pii.detected': 'personal data detected',
  'pii.masked': 'personal data masked',
  'schema.invalid': 'tool arguments do not match the input schema',
  'schema.unusable': 'the tool arguments could not be validated against the input schema',
  'schema.missing': 'the tool has no input schema to validate its arguments against',
  'schema.wrong-placement': 'the schema guardrail judges tool arguments only',
  'moderation.flagged': 'content flagged by moderation',
  'moderation.failed': 'moderation classifier failed',
  'moderation.timeout': 'moderation classifier timed out',
  'moderation.no-score': 'moderation classifier gave no score',
  'moderation.no-classifier': 'moderation guardrail has no classifier',
  'policy.allowed': 'allowed by policy',
  'policy.observed': 'policy in audit mode: recorded, not enforced',
  'policy.denied': 'denied by policy',
  'policy.approval-required': 'approval required by policy',
  'policy.rewritten': 'input rewritten by policy',
  'policy.no-match': 'no policy allows this call (default deny)',
  'policy.fault': 'policy evaluation failed (fail closed)',
  'policy.wrong-placement': 'the gatekeeper judges tool calls only',
  // For guardrails users write.
  'content.blocked': 'the content is not allowed',
  'limit.exceeded': 'a limit was exceeded',
  'scope.denied': 'the request is outside what this agent may do',
  'secret.detected': 'a secret or credential was detected',
  'injection.detected': 'a prompt injection attempt was detected',
} as const);

/** A code of the reason catalogue (`pii.detected`, `schema.invalid`, `limit.exceeded`, ...). */
export type GuardrailReasonCode = keyof typeof GUARDRAIL_REASONS;

/** The reason code each action falls back to. */
export const ACTION_REASON: Readonly<Record<GuardrailAction, GuardrailReasonCode>> = Object.freeze({
  allow: 'guardrail.allowed',
  observe: 'guardrail.observed',
  mask: 'guardrail.masked',
  rewrite: 'guardrail.rewritten',
  deny: 'guardrail.denied',
  approve: 'approval.required',
  halt: 'guardrail.halted',
});

/** True for a code of the catalogue (own keys only: `toString` or `__proto__` are not codes). */
export function isGuardrailReasonCode(value: unknown): value is GuardrailReasonCode {
  return typeof value === 'string' && Object.hasOwn(GUARDRAIL_REASONS, value);
}
