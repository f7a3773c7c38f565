import { GatehouseError, type ErrorCategory } from '@gatehouse/contracts';

/** Why waiting for an approval did not end in a grant. Every code fails the call closed. */
export type ApprovalErrorCode =
  | 'APPROVAL.DENIED'
  | 'APPROVAL.EXPIRED'
  | 'APPROVAL.CANCELLED'
  | 'APPROVAL.ABORTED'
  | 'APPROVAL.TIMEOUT'
  | 'APPROVAL.UNAVAILABLE'
  | 'APPROVAL.REQUEST_INVALID'
  | 'APPROVAL.USED'
  | 'APPROVAL.CLOSED';

const MESSAGES: Record<ApprovalErrorCode, string> = {
  'APPROVAL.DENIED': 'a reviewer denied the approval',
  'APPROVAL.EXPIRED': 'the approval expired before a decision',
  'APPROVAL.CANCELLED': 'the approval request was withdrawn',
  'APPROVAL.ABORTED': 'the caller aborted while waiting for the approval',
  'APPROVAL.TIMEOUT': 'no decision arrived within the wait time',
  'APPROVAL.UNAVAILABLE': 'the approvals log could not be read or written',
  'APPROVAL.REQUEST_INVALID': 'the approval request does not satisfy its contract',
  'APPROVAL.USED': 'the approval grant was already used',
  'APPROVAL.CLOSED': 'the approval gateway is closed',
};

const CATEGORIES: Record<ApprovalErrorCode, ErrorCategory> = {
  'APPROVAL.DENIED': 'security',
  'APPROVAL.EXPIRED': 'conflict',
  'APPROVAL.CANCELLED': 'conflict',
  'APPROVAL.ABORTED': 'conflict',
  'APPROVAL.TIMEOUT': 'unavailable',
  'APPROVAL.UNAVAILABLE': 'unavailable',
  'APPROVAL.REQUEST_INVALID': 'validation',
  'APPROVAL.USED': 'conflict',
  'APPROVAL.CLOSED': 'unavailable',
};

/** Retrying finds the same approval on the log (its id comes from the scope), so these are safe to retry. */
const RETRYABLE: ReadonlySet<ApprovalErrorCode> = new Set(['APPROVAL.TIMEOUT', 'APPROVAL.UNAVAILABLE']);

/**
 * The approval gateway's one error type: a stable code, a static message, and at most the
 * approval id in its details — never arguments, reviewer comments or broker messages.
 */
export class ApprovalGatewayError extends GatehouseError {
  override readonly code: ApprovalErrorCode;

  constructor(code: ApprovalErrorCode, approvalId?: string) {
    super(code, MESSAGES[code], { category: CATEGORIES[code], retryable: RETRYABLE.has(code), details: approvalId === undefined ? {} : { approvalId } });
    this.name = 'ApprovalGatewayError';
    this.code = code;
  }
}

export function isApprovalGatewayError(value: unknown): value is ApprovalGatewayError {
  return value instanceof ApprovalGatewayError;
}
