import { type RequestContext } from '@mastra/core/request-context';
import { type AuditContext } from './audit/types.js';

/** Request-context key of the trusted caller (`Actor`), set by host code after authentication. */
export const ACTOR_CONTEXT_KEY = 'gatehouse.actor';
/** Request-context key of the trusted audit correlation (`AuditContext`). */
export const AGENT_AUDIT_CONTEXT_KEY = 'gatehouse.auditContext';

const AUDIT_CONTEXT_FIELDS = ['tenant', 'agentId', 'runId', 'threadId', 'resourceId', 'entryPath', 'traceparent'] as const;
const TRACEPARENT = /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/;

/** Reads a value from a `RequestContext` or the plain object Mastra passes in some hooks. */
export function readContextValue(requestContext: unknown, key: string): unknown {
  if (requestContext === null || typeof requestContext !== 'object') return undefined;
  const maybe = requestContext as { get?: (k: string) => unknown };
  if (typeof maybe.get === 'function') return maybe.get(key);
  return (requestContext as Record<string, unknown>)[key];
}

/**
 * The trusted audit correlation of a call: only the known scalar fields, each a non-empty
 * string of at most 256 characters; anything else in the context value is ignored.
 */
export function auditContextFromRequestContext(requestContext: RequestContext | unknown): AuditContext {
  const raw = readContextValue(requestContext, AGENT_AUDIT_CONTEXT_KEY);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return {};
  const out: Record<string, string> = {};
  for (const field of AUDIT_CONTEXT_FIELDS) {
    const value = (raw as Record<string, unknown>)[field];
    if (typeof value !== 'string' || value.length === 0 || value.length > 256) continue;
    if (field === 'traceparent' && !TRACEPARENT.test(value)) continue;
    out[field] = value;
  }
  return Object.freeze(out);
}
