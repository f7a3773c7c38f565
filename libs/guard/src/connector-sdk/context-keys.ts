// Request-context keys of the tool boundary. Grants, permissions, identity and isolation are
// capabilities: only trusted host code sets them, never a request body, model output or tool result.
export { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';

/** `ConnectorApprovalGrant[]`, minted by the approval service (or replayed from its log). */
export const CONNECTOR_GRANTS_CONTEXT_KEY = 'gatehouse.connectorGrants';
/** `ConnectorExecutionIdentity`: workflow, run and suspension of the current leg. */
export const CONNECTOR_EXECUTION_CONTEXT_KEY = 'gatehouse.connectorExecution';
/** `PrincipalPermissions`: the permissions the executing principal holds. */
export const PRINCIPAL_PERMISSIONS_CONTEXT_KEY = 'gatehouse.principalPermissions';
/** `true` when the caller asks for a side-effect-free simulation. */
export const DRY_RUN_CONTEXT_KEY = 'gatehouse.dryRun';
/** Host-derived operation identity for idempotent connectors. */
export const IDEMPOTENCY_KEY_CONTEXT_KEY = 'gatehouse.idempotencyKey';
/** Opaque tenant isolation scope of the current request. */
export const ISOLATION_SCOPE_CONTEXT_KEY = 'gatehouse.isolationScope';
/**
 * `{ by: <guardrail name> }`: a guardrail's `approve` verdict parked this call on a person, so the
 * connector asks its approvals gateway even if its manifest does not require approval. It can
 * only make a call stricter; the guard sets it on a per-call copy of the context.
 */
export const GUARDRAIL_APPROVAL_CONTEXT_KEY = 'gatehouse.guardrailApproval';
/** Workflow id the current code runs under. */
export const WORKFLOW_SCOPE_CONTEXT_KEY = 'gatehouse.workflowScope';
