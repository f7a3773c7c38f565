// The connector decision catalogue: every stable code the tool boundary decides, refuses or fails
// with, its static reason, its failure class and whether the same call may be retried once the
// condition clears. One table, read by the gate, by its errors and by callers that branch on codes
// (breakwater's `ConnectorDecisionCode`, `CONNECTOR_DECISIONS`, `connectorDecisionRetryable`).
import { type ConnectorErrorCategory } from './errors.js';

/** What the catalogue says of one code. `reason` is static: never tool input, output or secrets. */
export interface ConnectorDecision {
  readonly reason: string;
  readonly category: ConnectorErrorCategory;
  /** True when the same call may be retried as it is (retrying keeps its idempotency key and grant). */
  readonly retryable: boolean;
}

const d = (category: ConnectorErrorCategory, reason: string, retryable = false): ConnectorDecision => Object.freeze({ category, reason, retryable });

const TABLE = {
  'CONNECTOR.ALLOWED': d('execution', 'tool call allowed'),
  'CONNECTOR.DRY_RUN': d('execution', 'dry run executed instead of the tool'),
  'CONNECTOR.REPLAYED': d('idempotency', 'recorded result replayed for the idempotency key'),
  'CONNECTOR.RECONCILED': d('idempotency', 'an interrupted attempt had already applied; its result was recorded'),
  'CONNECTOR.APPROVAL_PENDING': d('approval', 'the call waits for a reviewer decision'),
  'CONNECTOR.APPROVAL_GRANTED': d('approval', 'a reviewer approved the call'),
  'CONNECTOR.CONTEXT_INVALID': d('authorization', 'trusted request context is malformed'),
  'CONNECTOR.POLICY_FAILED': d('authorization', 'a tool policy could not be evaluated'),
  'CONNECTOR.PERMISSION_MISSING': d('authorization', 'the principal lacks a required permission'),
  'CONNECTOR.DRY_RUN_UNSUPPORTED': d('validation', 'the connector cannot simulate'),
  'CONNECTOR.APPROVAL_REQUIRED': d('approval', 'the call requires an approval grant'),
  'CONNECTOR.APPROVAL_DENIED': d('approval', 'a reviewer denied the call'),
  'CONNECTOR.APPROVAL_EXPIRED': d('approval', 'the approval expired before a decision'),
  'CONNECTOR.APPROVAL_CANCELLED': d('approval', 'the approval request was withdrawn'),
  'CONNECTOR.APPROVAL_USED': d('approval', 'the approval grant was already used for this call'),
  'CONNECTOR.GRANT_UNBOUND': d('approval', 'the approval grant in context names no tenant and arguments hash'),
  'CONNECTOR.GRANT_USED': d('approval', 'the approval grant in context was already used'),
  // A retried call finds its approval on the log (the id comes from the scope) and waits again.
  'CONNECTOR.APPROVAL_TIMEOUT': d('approval', 'no approval decision arrived in time', true),
  'CONNECTOR.APPROVAL_UNAVAILABLE': d('unavailable', 'the approvals log could not be read or written', true),
  'CONNECTOR.APPROVAL_REQUEST_INVALID': d('approval', 'the call cannot be put to a reviewer'),
  'CONNECTOR.APPROVAL_EDIT_INVALID': d('approval', 'the approved edit does not match the connector schema'),
  'CONNECTOR.APPROVAL_EDIT_REFUSED': d('approval', 'a tool-args guardrail refused the approved edit'),
  'CONNECTOR.APPROVAL_BUDGET': d('approval', 'the run has used up its approval budget; no reviewer was asked'),
  'CONNECTOR.GRANT_INVALID': d('approval', 'approval grants in context are malformed'),
  'CONNECTOR.IDEMPOTENCY_KEY_REQUIRED': d('idempotency', 'the call requires an idempotency key'),
  'CONNECTOR.IDEMPOTENCY_PENDING': d('idempotency', 'another call with this idempotency key is in progress', true),
  'CONNECTOR.IDEMPOTENCY_AMBIGUOUS': d('idempotency', 'an earlier attempt may have run; an operator or reconcile must decide'),
  'CONNECTOR.RECONCILE_FAILED': d('idempotency', 'reconcile could not decide whether an interrupted attempt applied'),
  'CONNECTOR.IDEMPOTENCY_STORE_FAILED': d('unavailable', 'the idempotency store could not be reached', true),
  'CONNECTOR.IDEMPOTENCY_LEASE_LOST': d('idempotency', 'the reservation was taken over; the late result was not recorded'),
  'CONNECTOR.IDEMPOTENCY_RESULT_NOT_JSON': d('idempotency', 'the result is not JSON-native and was not recorded for replay'),
  'CONNECTOR.RATE_LIMITED': d('rate-limit', 'the connector rate limit is exhausted', true),
  'CONNECTOR.RATE_LIMIT_STORE_FAILED': d('unavailable', 'the rate-limit store could not be reached', true),
  'CONNECTOR.EXECUTION_FAILED': d('execution', 'the connector failed'),
  'CONNECTOR.AUDIT_UNAVAILABLE': d('unavailable', 'the decision could not be recorded', true),
  'CONNECTOR.INPUT_INVALID': d('validation', 'input does not match the connector schema'),
  'CONNECTOR.OUTPUT_INVALID': d('validation', 'output does not match the connector schema'),
  'CONNECTOR.INVOCATION_OPTIONS_INVALID': d('validation', 'the invocation options are not accepted'),
  'CONNECTOR.NOT_A_CONNECTOR': d('integrity', 'only tools built by createConnector can be invoked'),
  'CONNECTOR.INTEGRITY_VIOLATION': d('integrity', 'the connector changed after construction'),
  'CONNECTOR.EGRESS_NOT_ALLOWED': d('egress', 'a declared egress host is outside the organization allowlist'),
  'CONNECTOR.EGRESS_HOST_NOT_DECLARED': d('egress', 'egress refused: the host is not in the declared egress allowlist'),
  'CONNECTOR.EGRESS_PRIVATE_ADDRESS': d('egress', 'egress refused: the host resolves to an address that is not public'),
  'CONNECTOR.EGRESS_TOO_MANY_REDIRECTS': d('egress', 'egress refused: too many redirects'),
  'CONNECTOR.EGRESS_BODY_NOT_REPLAYABLE': d('egress', 'egress refused: a one-shot request body cannot be replayed on a redirect'),
  'CONNECTOR.EGRESS_INVALID_URL': d('egress', 'egress refused: the target must be an absolute http(s) URL without credentials'),
  'CONNECTOR.EGRESS_GUARDRAIL_DENIED': d('egress', 'egress refused by a guardrail'),
  'CONNECTOR.WORKFLOW_SCOPE_MISMATCH': d('isolation', 'the workflow scope is not the workflow of the execution'),
  'CONNECTOR.ISOLATION_SCOPE_REQUIRED': d('isolation', 'the call carries no isolation scope'),
  'CONNECTOR.ISOLATION_SCOPE_MISMATCH': d('isolation', 'the isolation scope is not one of the expected tenants'),
  'CONNECTOR.BACKGROUND_NOT_ALLOWED': d('authorization', 'the connector may not run as a background task'),
} as const satisfies Record<`CONNECTOR.${string}`, ConnectorDecision>;

/** A stable code of the tool boundary: what audit events and connector errors carry. */
export type ConnectorDecisionCode = keyof typeof TABLE;

/** The catalogue, frozen: code to reason, category and retryability. */
export const CONNECTOR_DECISIONS: Readonly<Record<ConnectorDecisionCode, ConnectorDecision>> = Object.freeze(TABLE);

/** True when `value` is a code of the catalogue (own key, so `toString` is not one). */
export function isConnectorDecisionCode(value: unknown): value is ConnectorDecisionCode {
  return typeof value === 'string' && Object.hasOwn(CONNECTOR_DECISIONS, value);
}

/** Whether the same call may be retried once the condition clears; a TypeError for an unknown code. */
export function connectorDecisionRetryable(code: ConnectorDecisionCode): boolean {
  if (!isConnectorDecisionCode(code)) throw new TypeError('connectorDecisionRetryable: not a connector decision code');
  return CONNECTOR_DECISIONS[code].retryable;
}

/** The catalogue entry of a code a gate produced; a code outside it is an authorization refusal. */
export function decisionOf(code: string): ConnectorDecision {
  return isConnectorDecisionCode(code) ? CONNECTOR_DECISIONS[code] : d('authorization', 'tool call refused');
}

/** The policy (gate) that owns a decision code, for the audit record. */
export function policyOf(code: string): string {
  if (code.includes('APPROVAL') || code.includes('GRANT')) return 'approval';
  if (code.includes('IDEMPOTENCY') || code === 'CONNECTOR.REPLAYED') return 'idempotency';
  if (code.includes('RATE_LIMIT')) return 'rate-limit';
  if (code.includes('PERMISSION')) return 'permissions';
  if (code.includes('DRY_RUN')) return 'dry-run';
  if (code.includes('EGRESS')) return 'egress';
  return 'manifest';
}
