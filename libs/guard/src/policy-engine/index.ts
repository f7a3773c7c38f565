export * from './types.js';
export * from './policy-engine.js';
export * from './content-policy-gate.js';
export { extractMessageText } from './extract-text.js';
export { normalizedView } from './normalized-view.js';
export * from './policies/index.js';
export { ACCEPTED_CALL_PROVIDER_OPTIONS, assertAcceptedCallProviderOptions } from './provider-options.js';
// breakwater's policy-engine subpath also carried the tool-boundary evaluators and helpers; they
// live with the connectors and are re-exported here so its imports keep working.
export { backgroundExecution, crossWorkflowIsolation, LLM_BACKGROUND_OVERRIDE_KEY, networkEgress, tenantIsolation } from '../connector-sdk/tool-policies.js';
export { approvalRequired } from '../connector-sdk/manifest.js';
export { egressDomainAllowed } from '../connector-sdk/egress/hosts.js';
export { ISOLATION_SCOPE_CONTEXT_KEY, WORKFLOW_SCOPE_CONTEXT_KEY } from '../connector-sdk/context-keys.js';
export type { SideEffect, ToolCallContext, ToolPolicyEvaluator } from '../connector-sdk/types.js';
