import { TripWire } from '@mastra/core/agent';
import { type AuditLogger } from '../audit/audit-logger.js';
import { type AuditEvent } from '../audit/types.js';
import { takeAuditContextProblem } from '../context.js';
import { gateDecided } from '../telemetry/guard-telemetry.js';

/** A processor-side abort: Mastra's `abort(reason, options)`, which throws a TripWire. */
export type Abort = (reason?: string, options?: { retry?: boolean; metadata?: unknown }) => never;

/** The static reason of an `audit.context` error: the trusted correlation was malformed. */
export const AUDIT_CONTEXT_INVALID_REASON = 'trusted audit context is malformed; only its well-formed fields were kept';

/** The static reason a caller sees when a decision could not be recorded where it must be. */
export const AUDIT_UNAVAILABLE_REASON = 'Decision could not be recorded';

/**
 * Records a gate decision. Returns false when a required audit sink refused it: the gate
 * must then fail closed. Best-effort sink failures are the logger's business. Every decision is
 * also counted and traced (`guard.<gate>`, a no-op without an OpenTelemetry SDK); `startedAt`, the
 * gate's `performance.now()` when it began to judge, gives its latency.
 */
export async function recordGateDecision(audit: AuditLogger | undefined, event: Omit<AuditEvent, 'id' | 'timestamp'>, startedAt?: number): Promise<boolean> {
  const problem = takeAuditContextProblem(event.context);
  // With a recording tracer the record names the decision's span, so its readers (audit-export)
  // continue that trace; without one it keeps the host's traceparent.
  const traceparent = gateDecided(event, startedAt);
  if (!audit) return true;
  if (problem !== undefined) {
    // A host that sends a malformed correlation learns it from the trail, before the decision it
    // belongs to, instead of finding its fields silently missing. Best effort: the decision's own
    // record is what a required sink must take.
    await audit
      .record({
        boundary: event.boundary,
        action: 'audit.context',
        resource: event.resource,
        decision: 'error',
        code: 'AUDIT.CONTEXT_INVALID',
        reason: AUDIT_CONTEXT_INVALID_REASON,
        context: event.context,
        ...(event.actor ? { actor: event.actor } : {}),
        detail: { problem },
      })
      .catch(() => undefined);
  }
  try {
    await audit.record(traceparent === undefined ? event : { ...event, context: { ...event.context, traceparent } });
    return true;
  } catch {
    return false;
  }
}

/** True for Mastra's TripWire (thrown by `abort`), which must propagate untouched. */
export function isTripWire(error: unknown): boolean {
  return error instanceof TripWire;
}
