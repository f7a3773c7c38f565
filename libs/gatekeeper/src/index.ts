// @gatehouse/gatekeeper: declarative gatekeeper policies (bundles as data, a safe condition
// language, enforce/audit/disabled modes), evaluate/simulate/explain, compile-only validation
// and hot reload. No agent framework: the policy service and the CLI compile and evaluate
// bundles with it; the guard adapts it to its guardrail port (`@gatehouse/guard/gatekeeper`).
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
  assertGatekeeperOptions,
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
export { followPolicyBundles, type BundleFollower, type BundleFollowerOptions } from './follow.js';
