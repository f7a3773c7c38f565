export * from './context-keys.js';
export * from './types.js';
export * from './errors.js';
export { createConnector, connectorManifest, connectorEgressPosture, invokeConnector, type AnyConnector, type Connector, type ConnectorInvocationOptions } from './connector.js';
export { approvalRequired, isPermissionIdentifier, parseRateLimit, PERMISSION_IDENTIFIER } from './manifest.js';
export { backgroundExecution, crossWorkflowIsolation, LLM_BACKGROUND_OVERRIDE_KEY, networkEgress, tenantIsolation } from './tool-policies.js';
export { argumentsHashOf, bindGrant, grantMatches, isPrincipalPermissions } from './trusted-context.js';
export { CONNECTOR_DECISIONS, type ConnectorDecision, type ConnectorDecisionCode, connectorDecisionRetryable, isConnectorDecisionCode } from './decisions.js';
export {
  type SingleTenantAuditPosture,
  type SingleTenantConnectorPolicies,
  type SingleTenantConnectorPoliciesOptions,
  type SingleTenantDurableStores,
  type SingleTenantPermissionPosture,
  singleTenantConnectorPolicies,
  SingleTenantPresetError,
  type SingleTenantPresetErrorCode,
} from './single-tenant-preset.js';
export { InMemoryIdempotencyStore } from './stores/in-memory-idempotency-store.js';
export { InMemoryRateLimitStore } from './stores/in-memory-rate-limit-store.js';
export { idempotencyStorageKey, rateLimitStorageKey } from './stores/idempotency-key.js';
export { isJsonNative } from './stores/json-native.js';
// One copy of the JSON helpers, in @gatehouse/contracts; re-exported here for connector authors.
export { cloneJson } from '@gatehouse/contracts';
export { createLedgerStores, type LedgerClientOptions } from './stores/ledger-client.js';
export * from './egress/index.js';
