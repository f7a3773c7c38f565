import { readOptions } from '@gatehouse/contracts';
import { declaredEgressWithin } from './egress/index.js';
import { type ToolCallContext, type ToolPolicyDecision, type ToolPolicyEvaluator } from './types.js';

const ALLOW: ToolPolicyDecision = Object.freeze({ allowed: true });
const EGRESS_NOT_ALLOWED: ToolPolicyDecision = Object.freeze({ allowed: false, code: 'CONNECTOR.EGRESS_NOT_ALLOWED' });

/** The input field through which a direct call could smuggle Mastra's background-task override. */
export const LLM_BACKGROUND_OVERRIDE_KEY = '_background';

// Evaluators built by tenantIsolation(): the single-tenant preset refuses them by identity, not by name.
const tenantIsolationEvaluators = new WeakSet<object>();

/** True for an evaluator `tenantIsolation()` built. */
export function isTenantIsolationEvaluator(value: unknown): boolean {
  return value !== null && typeof value === 'object' && tenantIsolationEvaluators.has(value);
}

/** Every declared egress host must fall within the organization allowlist, on every call. */
export function networkEgress(options: { readonly allowedDomains: readonly string[] }): ToolPolicyEvaluator {
  readOptions('networkEgress', options, ['allowedDomains']);
  const allowed = [...options.allowedDomains];
  // The verdict on a frozen declaration (every connector's resolved manifest) cannot change from
  // one call to the next, and the allowlist is this evaluator's own copy: judged once per list.
  const verdicts = new WeakMap<readonly string[], ToolPolicyDecision>();
  return Object.freeze({
    name: 'networkEgress',
    evaluate: (_input: unknown, call: ToolCallContext): ToolPolicyDecision => {
      const declared = call.manifest.egress ?? [];
      const frozen = Object.isFrozen(declared);
      const known = frozen ? verdicts.get(declared) : undefined;
      if (known !== undefined) return known;
      const verdict = declaredEgressWithin(declared, allowed).length === 0 ? ALLOW : EGRESS_NOT_ALLOWED;
      if (frozen) verdicts.set(declared, verdict);
      return verdict;
    },
  });
}

/** The workflow scope in context must be the workflow of the execution identity. */
export function crossWorkflowIsolation(): ToolPolicyEvaluator {
  return Object.freeze({
    name: 'crossWorkflowIsolation',
    evaluate: (_input: unknown, call: ToolCallContext): ToolPolicyDecision => {
      if (call.workflowScope === undefined) return ALLOW;
      if (!call.identity || call.identity.workflowId !== call.workflowScope) return { allowed: false, code: 'CONNECTOR.WORKFLOW_SCOPE_MISMATCH' };
      return ALLOW;
    },
  });
}

/** Calls must carry an isolation scope, and (when given) one of the expected tenants. */
export function tenantIsolation(options: { readonly tenants?: readonly string[] } = {}): ToolPolicyEvaluator {
  readOptions('tenantIsolation', options, ['tenants']);
  const tenants = options.tenants ? new Set(options.tenants) : undefined;
  const evaluator = Object.freeze({
    name: 'tenantIsolation',
    evaluate: (_input: unknown, call: ToolCallContext): ToolPolicyDecision => {
      if (call.isolationScope === undefined) return { allowed: false, code: 'CONNECTOR.ISOLATION_SCOPE_REQUIRED' };
      if (tenants && !tenants.has(call.isolationScope)) return { allowed: false, code: 'CONNECTOR.ISOLATION_SCOPE_MISMATCH' };
      return ALLOW;
    },
  });
  tenantIsolationEvaluators.add(evaluator);
  return evaluator;
}

/**
 * Refuses background execution for connectors that did not opt in, including a `_background`
 * override smuggled into a direct call's input.
 */
export function backgroundExecution(): ToolPolicyEvaluator {
  return Object.freeze({
    name: 'backgroundExecution',
    evaluate: (input: unknown, call: ToolCallContext): ToolPolicyDecision => {
      if (call.manifest.background === true) return ALLOW;
      const override = input !== null && typeof input === 'object' && Object.hasOwn(input, LLM_BACKGROUND_OVERRIDE_KEY);
      return call.background || override ? { allowed: false, code: 'CONNECTOR.BACKGROUND_NOT_ALLOWED' } : ALLOW;
    },
  });
}
