export * from './actor.js';
export * from './rbac-middleware.js';
export { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY, auditContextFromRequestContext } from '../context.js';
