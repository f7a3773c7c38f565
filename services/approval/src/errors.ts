import { GatehouseError, type JsonSafe } from '@gatehouse/contracts';

/** The stable codes the approval service answers with; the HTTP edge maps each to a status. */
export type ApprovalCode =
  | 'APPROVAL.INVALID_REQUEST'
  | 'APPROVAL.UNAUTHENTICATED'
  | 'APPROVAL.FORBIDDEN'
  | 'APPROVAL.SELF_APPROVAL'
  | 'APPROVAL.NOT_FOUND'
  | 'APPROVAL.ALREADY_DECIDED'
  | 'APPROVAL.CANCELLED'
  | 'APPROVAL.EXPIRED'
  | 'APPROVAL.EDITS_INVALID'
  | 'APPROVAL.ALREADY_VOTED'
  | 'APPROVAL.UNAVAILABLE'
  | 'APPROVAL.INTERNAL';

const MESSAGES: Record<ApprovalCode, string> = {
  'APPROVAL.INVALID_REQUEST': 'the request is invalid',
  'APPROVAL.UNAUTHENTICATED': 'a reviewer API key or token is required',
  'APPROVAL.FORBIDDEN': 'this reviewer may not decide approvals of this tenant or connector',
  'APPROVAL.SELF_APPROVAL': 'a requester cannot decide their own request',
  'APPROVAL.NOT_FOUND': 'no such approval',
  'APPROVAL.ALREADY_DECIDED': 'another decision came first',
  'APPROVAL.CANCELLED': 'the requester withdrew the request',
  'APPROVAL.EXPIRED': 'the approval expired before a decision',
  'APPROVAL.EDITS_INVALID': "the edited arguments fail the tool's input schema",
  'APPROVAL.ALREADY_VOTED': 'this reviewer already approved; the quorum needs other reviewers',
  'APPROVAL.UNAVAILABLE': 'the approval log could not confirm the decision in time',
  'APPROVAL.INTERNAL': 'the approval service failed',
};

function categoryOf(code: ApprovalCode): GatehouseError['category'] {
  switch (code) {
    case 'APPROVAL.INVALID_REQUEST':
    case 'APPROVAL.NOT_FOUND':
    case 'APPROVAL.EDITS_INVALID':
      return 'validation';
    case 'APPROVAL.UNAUTHENTICATED':
    case 'APPROVAL.FORBIDDEN':
    case 'APPROVAL.SELF_APPROVAL':
      return 'security';
    case 'APPROVAL.UNAVAILABLE':
      return 'unavailable';
    case 'APPROVAL.INTERNAL':
      return 'internal';
    default:
      return 'conflict';
  }
}

/** An approval-service refusal with a stable code; details never carry request values. */
export class ApprovalError extends GatehouseError {
  constructor(code: ApprovalCode, details: Record<string, JsonSafe> = {}, cause?: unknown, message = MESSAGES[code]) {
    super(code, message, { category: categoryOf(code), retryable: code === 'APPROVAL.UNAVAILABLE', details, cause });
  }
}

/** The HTTP status of each code: the one place where outcomes become statuses. */
export const STATUS_BY_CODE: Readonly<Record<ApprovalCode, number>> = {
  'APPROVAL.INVALID_REQUEST': 400,
  'APPROVAL.UNAUTHENTICATED': 401,
  'APPROVAL.FORBIDDEN': 403,
  'APPROVAL.SELF_APPROVAL': 403,
  'APPROVAL.NOT_FOUND': 404,
  'APPROVAL.ALREADY_DECIDED': 409,
  'APPROVAL.CANCELLED': 409,
  'APPROVAL.EXPIRED': 410,
  'APPROVAL.EDITS_INVALID': 422,
  'APPROVAL.ALREADY_VOTED': 409,
  'APPROVAL.UNAVAILABLE': 503,
  'APPROVAL.INTERNAL': 500,
};
