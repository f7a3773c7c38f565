// The included content policies: each factory validates its options once and returns a
// frozen, stateless `PolicyEvaluator`.
export { denyPatterns, type DenyPatternsOptions } from './deny-patterns.js';
export { maxTextLength, type MaxTextLengthOptions } from './max-text-length.js';
export {
  PII_SECRETS_DETECTOR_IDS,
  piiSecrets,
  type PiiSecretsDetectorId,
  type PiiSecretsOptions,
} from './pii-secrets.js';
export {
  classifierPolicy,
  type ClassifierCadence,
  type ClassifierContext,
  type ClassifierPolicyOptions,
  type ClassifierVerdict,
} from './classifier-policy.js';
