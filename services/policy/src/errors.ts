import { GatehouseError, type JsonSafe } from '@gatehouse/contracts';

/** The stable codes the policy service answers with; the HTTP edge maps each to a status. */
export type PolicyCode =
  | 'POLICY.INVALID_REQUEST'
  | 'POLICY.INVALID_BUNDLE'
  | 'POLICY.UNAUTHENTICATED'
  | 'POLICY.FORBIDDEN'
  | 'POLICY.NOT_FOUND'
  | 'POLICY.CONFLICT'
  | 'POLICY.UNAVAILABLE'
  | 'POLICY.INTERNAL';

const MESSAGES: Record<PolicyCode, string> = {
  'POLICY.INVALID_REQUEST': 'the request is invalid',
  'POLICY.INVALID_BUNDLE': 'the policy bundle is invalid',
  'POLICY.UNAUTHENTICATED': 'an operator API key is required',
  'POLICY.FORBIDDEN': 'this operator may not do this for this policy set',
  'POLICY.NOT_FOUND': 'no such policy set or version',
  'POLICY.CONFLICT': 'another version was published first; publish again on top of it',
  'POLICY.UNAVAILABLE': 'the policies log could not confirm the publication in time',
  'POLICY.INTERNAL': 'the policy service failed',
};

const CATEGORY: Record<PolicyCode, GatehouseError['category']> = {
  'POLICY.INVALID_REQUEST': 'validation',
  'POLICY.INVALID_BUNDLE': 'validation',
  'POLICY.UNAUTHENTICATED': 'security',
  'POLICY.FORBIDDEN': 'security',
  'POLICY.NOT_FOUND': 'validation',
  'POLICY.CONFLICT': 'conflict',
  'POLICY.UNAVAILABLE': 'unavailable',
  'POLICY.INTERNAL': 'internal',
};

/** A policy-service refusal with a stable code; details never carry bundle or request values. */
export class PolicyError extends GatehouseError {
  constructor(code: PolicyCode, details: Record<string, JsonSafe> = {}, cause?: unknown, message = MESSAGES[code]) {
    super(code, message, { category: CATEGORY[code], retryable: code === 'POLICY.UNAVAILABLE' || code === 'POLICY.CONFLICT', details, cause });
  }
}

export const STATUS_BY_CODE: Readonly<Record<PolicyCode, number>> = {
  'POLICY.INVALID_REQUEST': 400,
  'POLICY.INVALID_BUNDLE': 422,
  'POLICY.UNAUTHENTICATED': 401,
  'POLICY.FORBIDDEN': 403,
  'POLICY.NOT_FOUND': 404,
  'POLICY.CONFLICT': 409,
  'POLICY.UNAVAILABLE': 503,
  'POLICY.INTERNAL': 500,
};
