/** Nest injection tokens of the policy service. */
export const POLICY_ENGINE = Symbol('POLICY_ENGINE');
export const POLICY_OPTIONS = Symbol('POLICY_OPTIONS');
export const POLICY_DECISIONS = Symbol('POLICY_DECISIONS');
export const POLICY_EVALUATOR = Symbol('POLICY_EVALUATOR');
