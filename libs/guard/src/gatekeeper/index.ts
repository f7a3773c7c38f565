// @gatehouse/guard/gatekeeper: declarative gatekeeper policies (bundles as data, a safe condition
// language, enforce/audit/disabled modes), evaluate/simulate/explain, hot reload, and the
// gatekeeper as a `tool-args` guardrail.
export {
  GatekeeperBundleSchema,
  GatekeeperPolicySchema,
  PolicyMatchSchema,
  PolicyRulesSchema,
  RewriteSchema,
  ConditionSchema,
  MatchPatternSchema,
  MAX_BUNDLE_TEXT,
  MAX_POLICIES,
  parseGatekeeperBundle,
  type BundleIssue,
  type GatekeeperBundle,
  type GatekeeperPolicy,
  type GatekeeperPolicyMatch,
  type GatekeeperCondition,
  type GatekeeperRewrite,
} from './schema.js';
export { EXPRESSION_LIMITS, parseExpression, evaluateExpression, type Expr, type ExpressionScope, type PathRoot, type BinaryOperator } from './expression.js';
export {
  createGatekeeper,
  compileGatekeeperBundle,
  assertGatekeeperMode,
  matchesPattern,
  GATEKEEPER_MODES,
  type Gatekeeper,
  type GatekeeperOptions,
  type GatekeeperMode,
  type GatekeeperEffect,
  type GatekeeperRuleId,
  type GatekeeperIdentity,
  type GatekeeperContext,
  type GatekeeperDecision,
  type GatekeeperPredicate,
  type GatekeeperInputValidator,
  type GatekeeperExplanation,
  type FactsDecision,
  type PolicyExplanation,
  type PolicyExplanationStatus,
  type BundleVersion,
} from './gatekeeper.js';
export { gatekeeperGuardrail, verdictOf, bundleDetection, type GatekeeperVerdict, type GatekeeperGuardrailOptions } from './guardrail.js';
export { followPolicyBundles, type BundleFollower, type BundleFollowerOptions } from './follow.js';
