// What the facade records, through the one AuditLogger: each gatekeeper decision exactly as the
// gatekeeper guardrail records it (boundary `guardrail`, `tool:<name>`, the bundle and policy in
// the detections, so the SIEM feeds and `gatehouse policy what-if` read it alike), the approval
// steps and the tool's outcome. Never the arguments or the output.
import { GatehouseError } from '@gatehouse/contracts';
import { type GatekeeperDecision } from '@gatehouse/gatekeeper';
import { AuditLogger } from '../audit/audit-logger.js';
import { toAuditSink } from '../audit/sinks.js';
import { type AuditBoundary, type AuditSink, type DecisionOutcome } from '../audit/types.js';
import { AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { verdictOf } from '../gatekeeper/guardrail.js';
import { recordGuardrailDecision } from '../guardrails/audit-guardrail.js';
import { recordGateDecision } from '../internal/gate-audit.js';
import { configError } from '@gatehouse/gatekeeper/hazeljs';

/** Correlation of a record: the call's trusted ids (all optional: a malformed call has none). */
export interface RecordTarget {
  readonly toolName?: string;
  readonly invocationId?: string;
  readonly correlation: { readonly tenant?: string; readonly agentId?: string; readonly runId?: string };
}

export interface StepRecord {
  readonly boundary: AuditBoundary;
  readonly action: string;
  readonly decision: DecisionOutcome;
  readonly code: string;
  /** Static text, never content. */
  readonly reason: string;
  readonly detail?: Readonly<Record<string, string | number | boolean>>;
}

/**
 * The sink as the facade uses it. Critical (HazelJS's `audit.critical`, on by default in enforce
 * mode): any failure of it, a best-effort part of a combined sink included, fails the call closed,
 * as HazelJS's awaited sink did. Otherwise failures are the sink's own business (a `required` one
 * still fails closed).
 */
export function facadeSink(sink: unknown, critical: boolean): AuditSink {
  if (sink !== null && typeof sink === 'object' && typeof (sink as { write?: unknown }).write !== 'function' && typeof (sink as { emit?: unknown }).emit === 'function') {
    throw configError('auditSink has emit() (a HazelJS sink): gatehouse sinks implement write(event) with a gatehouse AuditEvent; use ConsoleAuditSink, InMemoryAuditSink, CompositeAuditSink, createKafkaAuditSink or createOtelAuditSink, or write your own', { field: 'auditSink' });
  }
  let inner: AuditSink;
  try {
    inner = toAuditSink(sink, 'auditSink');
  } catch (cause) {
    throw configError(cause instanceof Error ? cause.message : 'auditSink is not a sink', { field: 'auditSink' });
  }
  return {
    required: critical || inner.required === true,
    write: async (event) => {
      try {
        await inner.write(event);
      } catch (error) {
        // Critical: no part may fail quietly, so the error no longer reads as "best-effort parts only".
        if (!critical) throw error;
        throw new GatehouseError('HAZELJS.AUDIT_SINK_FAILED', 'the gatekeeper audit sink failed', { category: 'unavailable', retryable: true, cause: error });
      }
    },
    ...(inner.flush === undefined ? {} : { flush: () => inner.flush!() }),
    ...(inner.close === undefined ? {} : { close: () => inner.close!() }),
  };
}

const requestContextOf = (target: RecordTarget) => ({ [AGENT_AUDIT_CONTEXT_KEY]: target.correlation });
const detailOf = (target: RecordTarget): Record<string, string> => (target.invocationId === undefined ? {} : { invocationId: target.invocationId });
const resourceOf = (target: RecordTarget) => `tool:${target.toolName ?? 'unknown'}`;

/** Records a gatekeeper decision as the gatekeeper guardrail does; false when a required sink refused it. */
export function recordDecision(audit: AuditLogger, decision: GatekeeperDecision, target: RecordTarget): Promise<boolean> {
  return recordGuardrailDecision(audit, { verdict: verdictOf(decision), by: 'gatekeeper', ran: ['gatekeeper'] }, {
    placement: 'tool-args',
    resource: resourceOf(target),
    requestContext: requestContextOf(target),
    detail: detailOf(target),
  });
}

/** Records one step (an approval, the tool's outcome, a refused call); false when a required sink refused it. */
export function recordStep(audit: AuditLogger, step: StepRecord, target: RecordTarget): Promise<boolean> {
  return recordGateDecision(audit, {
    boundary: step.boundary,
    action: step.action,
    resource: resourceOf(target),
    decision: step.decision,
    code: step.code,
    reason: step.reason,
    context: target.correlation,
    policy: { name: 'gatekeeper' },
    detail: { ...detailOf(target), ...step.detail },
  });
}

export { AuditLogger };
