// @gatehouse/guard/gatekeeper: the gatekeeper as a `tool-args` guardrail, plus everything
// @gatehouse/gatekeeper exports (bundles as data, the condition language, modes,
// evaluate/simulate/explain, hot reload), re-exported so existing imports keep working.
export * from '@gatehouse/gatekeeper';
export { gatekeeperGuardrail, verdictOf, bundleDetection, type GatekeeperVerdict, type GatekeeperGuardrailOptions } from './guardrail.js';
