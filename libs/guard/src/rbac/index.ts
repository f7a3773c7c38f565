export * from './actor.js';
export * from './rbac-middleware.js';
export { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY, auditContextFromRequestContext } from '../context.js';
// breakwater's rbac subpath also carried these; kept for code that imports them from here.
export { isPermissionIdentifier } from '../connector-sdk/manifest.js';
export { isPrincipalPermissions } from '../connector-sdk/trusted-context.js';
export { PRINCIPAL_PERMISSIONS_CONTEXT_KEY } from '../connector-sdk/context-keys.js';
export type { PrincipalPermissions } from '../connector-sdk/types.js';
export { AuditLogger, type AuditLoggerOptions } from '../audit/audit-logger.js';
export type { AuditEvent, AuditSink } from '../audit/types.js';
