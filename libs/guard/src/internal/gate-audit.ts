import { TripWire } from '@mastra/core/agent';
import { type AuditLogger } from '../audit/audit-logger.js';
import { type AuditEvent } from '../audit/types.js';

/** A processor-side abort: Mastra's `abort(reason, options)`, which throws a TripWire. */
export type Abort = (reason?: string, options?: { retry?: boolean; metadata?: unknown }) => never;

/** The static reason a caller sees when a decision could not be recorded where it must be. */
export const AUDIT_UNAVAILABLE_REASON = 'Decision could not be recorded';

/**
 * Records a gate decision. Returns false when a required audit sink refused it: the gate
 * must then fail closed. Best-effort sink failures are the logger's business.
 */
export async function recordGateDecision(audit: AuditLogger | undefined, event: Omit<AuditEvent, 'id' | 'timestamp'>): Promise<boolean> {
  if (!audit) return true;
  try {
    await audit.record(event);
    return true;
  } catch {
    return false;
  }
}

/** True for Mastra's TripWire (thrown by `abort`), which must propagate untouched. */
export function isTripWire(error: unknown): boolean {
  return error instanceof TripWire;
}
