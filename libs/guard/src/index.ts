// @gatehouse/guard: what an agent process imports. Subpaths: ./agent, ./policy-engine,
// ./rbac, ./audit, ./connector-sdk, ./agent-cli, ./approvals, ./guardrails, ./gatekeeper (and ./testing for tests). The root
// re-exports all of them.
export * from './agent/index.js';
export * from './policy-engine/index.js';
export * from './rbac/index.js';
export * from './audit/index.js';
export * from './connector-sdk/index.js';
export * from './agent-cli/index.js';
export * from './approvals/index.js';
export * from './guardrails/index.js';
export * from './gatekeeper/index.js';
export * from './telemetry/index.js';
// Both the schema guardrail and the gatekeeper name a `verdictOf`; at the root it is the gatekeeper's
// (the schema one stays on ./guardrails).
export { verdictOf } from './gatekeeper/index.js';
export { GatehouseError, isGatehouseError } from '@gatehouse/contracts';
