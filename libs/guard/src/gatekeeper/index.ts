// @gatehouse/guard/gatekeeper: the gatekeeper as a `tool-args` guardrail, plus everything
// @gatehouse/gatekeeper exports (bundles as data, the condition language, modes,
// evaluate/simulate/explain, hot reload), re-exported so existing imports keep working.
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
} from '@gatehouse/gatekeeper';
export { EXPRESSION_LIMITS, parseExpression, evaluateExpression, type Expr, type ExpressionScope, type PathRoot, type BinaryOperator } from '@gatehouse/gatekeeper';
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
} from '@gatehouse/gatekeeper';
export { gatekeeperGuardrail, verdictOf, bundleDetection, type GatekeeperVerdict, type GatekeeperGuardrailOptions } from './guardrail.js';
export { followPolicyBundles, type BundleFollower, type BundleFollowerOptions } from '@gatehouse/gatekeeper';
