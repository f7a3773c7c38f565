// The guard's spans and metrics, through `@opentelemetry/api` only: with no SDK registered in the
// agent process (the default) every call here is the API's no-op. The host registers an SDK before
// it builds its guarded agents and connectors; the guard never does.
import { type Attributes, context, type Context, type Counter, type Histogram, type MeterProvider, metrics, trace, type Tracer } from '@opentelemetry/api';
import { parentContext, traceContextOf } from '@gatehouse/kafka';
import { bundleRefOf } from '../audit/to-decision-event.js';
import { type AuditBoundary, type AuditContext, type AuditEvent } from '../audit/types.js';

/** Instrumentation scope (tracer and meter name) of every span and metric of the guard. */
export const GUARD_TELEMETRY_SCOPE = '@gatehouse/guard';

/** The guard's metric names; attributes are codes, enums and configured names, never content. */
export const GUARD_METRIC = {
  /** Every gate decision, by boundary, decision and code. */
  decisions: 'gatehouse.decisions',
  /** How long a gate took from its start to its decision, ms, by gate and decision. */
  gateLatency: 'gatehouse.gate.latency',
  /** How long a tool call waited for a reviewer, ms, by the connector code it ended with. */
  approvalWait: 'gatehouse.approval.wait',
  /** Decisions or expiries the approval gateway ignored for their signature, by reason. */
  untrustedGrants: 'gatehouse.untrusted_grants',
} as const;

/** Where in the agent loop a decision was taken: the boundary, or a guardrail's placement, or egress. */
export type Gate = Exclude<AuditBoundary, 'guardrail'> | 'pre-prompt' | 'post-model' | 'tool-args' | 'tool-result' | 'guardrail';

interface Instruments {
  readonly provider: MeterProvider;
  readonly decisions: Counter;
  readonly gateLatency: Histogram;
  readonly approvalWait: Histogram;
  readonly untrustedGrants: Counter;
}

let current: Instruments | undefined;

/** The instruments of the global MeterProvider, made again when the host registers another. */
export function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  if (current?.provider === provider) return current;
  const meter = provider.getMeter(GUARD_TELEMETRY_SCOPE);
  current = {
    provider,
    decisions: meter.createCounter(GUARD_METRIC.decisions, { description: 'Gate decisions, by boundary, decision and code' }),
    gateLatency: meter.createHistogram(GUARD_METRIC.gateLatency, { description: 'From a gate starting to judge to its decision', unit: 'ms' }),
    approvalWait: meter.createHistogram(GUARD_METRIC.approvalWait, { description: 'How long a tool call waited for a reviewer', unit: 'ms' }),
    untrustedGrants: meter.createCounter(GUARD_METRIC.untrustedGrants, { description: 'Granting events the approval gateway ignored for their signature' }),
  };
  return current;
}

/** The guard's tracer, fresh from the global provider each time (a test may register another). */
export function guardTracer(): Tracer {
  return trace.getTracer(GUARD_TELEMETRY_SCOPE);
}

/**
 * The context a guard span starts in: the active one when it has a span (the turn, the tool call),
 * else the trace the host gave in the trusted audit context (`traceparent`), else none.
 */
export function spanParent(auditContext: AuditContext | undefined): Context {
  const active = context.active();
  if (trace.getSpanContext(active) !== undefined) return active;
  return auditContext?.traceparent === undefined ? active : parentContext({ traceparent: auditContext.traceparent });
}

const PLACEMENT_GATES: Readonly<Record<string, Gate>> = { 'pre-prompt': 'pre-prompt', 'post-model': 'post-model', 'tool-args': 'tool-args', 'tool-result': 'tool-result', egress: 'egress' };

/** The gate of a recorded decision: a guardrail's is its placement; a tool call refused by its egress policy is egress. */
export function gateOf(event: Pick<AuditEvent, 'boundary' | 'policy'>): Gate {
  const boundary = event.boundary;
  switch (boundary) {
    case 'guardrail':
      return PLACEMENT_GATES[event.policy?.phase ?? ''] ?? 'guardrail';
    case 'tool':
      return event.policy?.name === 'network-egress' ? 'egress' : 'tool';
    case 'agent-entry':
    case 'input':
    case 'output':
    case 'stream':
    case 'egress':
    case 'approval':
    case 'ledger':
    case 'policy':
      return boundary;
    default: {
      const exhaustive: never = boundary;
      return exhaustive;
    }
  }
}

const MAX_ID = 128;
const id = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value.slice(0, MAX_ID) : undefined);

/** The tool a resource names (`connector:<id>`, `tool:<id>`), for `gen_ai.tool.name`. */
function toolOf(resource: string): string | undefined {
  const match = /^(?:connector|tool):(.+)$/.exec(resource);
  return match ? id(match[1]) : undefined;
}

/**
 * A decision's span attributes: codes, enums, configured names and correlation ids from trusted
 * context. Never the reason, detections, detail values other than the ids named here, or anything
 * a caller, a model or a tool wrote.
 */
export function decisionAttributes(event: Omit<AuditEvent, 'id' | 'timestamp'>, gate: Gate): Attributes {
  const bundle = bundleRefOf(event as AuditEvent);
  const attributes: Attributes = {
    'gatehouse.gate': gate,
    'gatehouse.boundary': event.boundary,
    'gatehouse.action': event.action,
    'gatehouse.decision': event.decision,
    'gatehouse.code': event.code,
  };
  const optional: Record<string, string | number | undefined> = {
    'gatehouse.policy': id(event.policy?.name),
    'gatehouse.policy.phase': id(event.policy?.phase),
    'gatehouse.policy.channel': id(event.policy?.channel),
    'gatehouse.policy.bundle': id(bundle?.bundleId),
    'gatehouse.policy.revision': bundle?.revision,
    'gatehouse.tenant': id(event.context.tenant),
    'gatehouse.run_id': id(event.context.runId),
    'gen_ai.agent.id': id(event.context.agentId),
    'gen_ai.tool.name': toolOf(event.resource),
    'gen_ai.tool.call.id': id(event.detail?.['toolCallId']),
    'gatehouse.approval_id': id(event.detail?.['approvalId']),
  };
  for (const [key, value] of Object.entries(optional)) if (value !== undefined) attributes[key] = value;
  return attributes;
}

/**
 * One gate decision: counted, its latency observed when the gate said when it started
 * (`performance.now()`), and a span `guard.<gate>` from that start to now, under the turn or tool
 * call in progress. Returns the span's W3C traceparent, for the decision's audit record, when a
 * tracer is recording; undefined otherwise. Never throws: telemetry must not change a decision.
 */
export function gateDecided(event: Omit<AuditEvent, 'id' | 'timestamp'>, startedAt?: number): string | undefined {
  try {
    const gate = gateOf(event);
    const { decisions, gateLatency } = instruments();
    decisions.add(1, { boundary: event.boundary, decision: event.decision, code: event.code });
    const elapsed = startedAt === undefined ? undefined : Math.max(0, performance.now() - startedAt);
    if (elapsed !== undefined) gateLatency.record(elapsed, { gate, decision: event.decision });
    const span = guardTracer().startSpan(`guard.${gate}`, elapsed === undefined ? {} : { startTime: Date.now() - elapsed }, spanParent(event.context));
    // Without a recording tracer (no SDK, the default) the attributes are not even built.
    if (span.isRecording()) span.setAttributes(decisionAttributes(event, gate));
    span.end();
    return traceContextOf(span.spanContext())?.traceparent;
  } catch {
    return undefined;
  }
}

/** Counts a decision or expiry the approval gateway ignored for its signature. */
export function untrustedGrantIgnored(reason: string): void {
  instruments().untrustedGrants.add(1, { reason });
}
