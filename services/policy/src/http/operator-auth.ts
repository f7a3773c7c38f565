import { admits, bearerCredential, findByApiKey } from '@gatehouse/service-runtime';
import { type PolicyOperator } from '../policy-config.js';
import { PolicyError } from '../errors.js';

/** The operator of `Authorization: Bearer <API key>`; there is no anonymous access. */
export function authenticateOperator(authorization: string | undefined, operators: readonly PolicyOperator[]): PolicyOperator {
  const credential = bearerCredential(authorization);
  const found = credential === undefined ? undefined : findByApiKey(credential, operators);
  if (!found) throw new PolicyError('POLICY.UNAUTHENTICATED');
  return found;
}

/** Refuses (403) an operator who may not act on `policySetId`, or may not publish when `publish`. */
export function assertMay(operator: PolicyOperator, policySetId: string, publish = false): void {
  if (!admits(operator.policySets, policySetId) || (publish && !operator.publish)) throw new PolicyError('POLICY.FORBIDDEN');
}

export const POLICY_SET_ID = /^[A-Za-z0-9][\w.:-]{0,127}$/;
