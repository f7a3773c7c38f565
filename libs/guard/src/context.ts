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

/** Why a present audit context value was not a well-formed one. */
export type AuditContextProblem = 'not-an-object' | 'unknown-field' | 'invalid-field';

// Audit contexts read from a malformed value, by the object returned: the gate that records with it
// first records an `audit.context` error (internal/gate-audit.ts). Fresh per read, so each read
// is reported once.
const malformed = new WeakMap<AuditContext, AuditContextProblem>();

/** The problem of the value `context` was read from, once: later calls answer undefined. */
export function takeAuditContextProblem(context: AuditContext): AuditContextProblem | undefined {
  const problem = malformed.get(context);
  malformed.delete(context);
  return problem;
}

/**
 * The trusted audit correlation of a call: only the known scalar fields, each a non-empty
 * string of at most 256 characters. A present value that is not a plain object, carries another
 * field or a known field of another shape is still read this way (the decision is unchanged), and
 * the gate recording with it reports the malformed context first.
 */
export function auditContextFromRequestContext(requestContext: RequestContext | unknown): AuditContext {
  const raw = readContextValue(requestContext, AGENT_AUDIT_CONTEXT_KEY);
  const out: Record<string, string> = {};
  let problem: AuditContextProblem | undefined;
  const proto = raw !== null && typeof raw === 'object' ? (Object.getPrototypeOf(raw) as unknown) : undefined;
  if (raw === undefined) {
    // Absent: nothing to correlate, nothing wrong.
  } else if (raw === null || typeof raw !== 'object' || Array.isArray(raw) || (proto !== Object.prototype && proto !== null)) {
    problem = 'not-an-object';
  } else {
    if (Object.keys(raw).some((key) => !(AUDIT_CONTEXT_FIELDS as readonly string[]).includes(key))) problem = 'unknown-field';
    for (const field of AUDIT_CONTEXT_FIELDS) {
      const value = (raw as Record<string, unknown>)[field];
      if (value === undefined) continue;
      if (typeof value !== 'string' || value.length === 0 || value.length > 256 || (field === 'traceparent' && !TRACEPARENT.test(value))) {
        problem ??= 'invalid-field';
        continue;
      }
      out[field] = value;
    }
  }
  const context = Object.freeze(out);
  if (problem !== undefined) malformed.set(context, problem);
  return context;
}
