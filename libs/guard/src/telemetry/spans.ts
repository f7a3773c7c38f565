import { type Attributes, context, type Context, type Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { traceContextOf } from '@gatehouse/kafka';
import { type AuditContext } from '../audit/types.js';
import { guardTracer, instruments, spanParent } from './guard-telemetry.js';

/** The span names of the guard, besides each gate's `guard.<gate>` (`gateOf`). */
export const GUARD_SPAN = {
  /** One `generate()` or `stream()` of a guarded agent (gen_ai semantic conventions: `invoke_agent {agent}`). */
  turn: 'invoke_agent',
  /** One call of a connector, through all its gates (gen_ai: `execute_tool {tool}`). */
  tool: 'execute_tool',
  /** A tool call parked on a person, from the request until the decision reached the gateway. */
  approvalWait: 'guard.approval.wait',
} as const;

/** A span in progress and the context to run its work in. */
export interface GuardSpan {
  readonly context: Context;
  /** The span's W3C traceparent while a tracer records it, else undefined (the SDK off). */
  readonly traceparent: string | undefined;
  /** Ends the span with its outcome: a stable code, never a message. */
  end(outcome?: { readonly code?: string; readonly failed?: boolean; readonly attributes?: Attributes }): void;
}

const MAX_ID = 128;
const ids = (values: Record<string, string | undefined>): Attributes => {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(values)) if (value !== undefined && value.length > 0) out[key] = value.slice(0, MAX_ID);
  return out;
};

function started(span: Span, parent: Context): GuardSpan {
  let ended = false;
  return {
    context: trace.setSpan(parent, span),
    traceparent: traceContextOf(span.spanContext())?.traceparent,
    end(outcome = {}) {
      if (ended) return;
      ended = true;
      if (outcome.code !== undefined) span.setAttribute('gatehouse.code', outcome.code);
      if (outcome.attributes) span.setAttributes(outcome.attributes);
      if (outcome.failed === true) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}

/**
 * The span of one agent turn: `invoke_agent <agent id>`, child of the active span or of the trace
 * the host put in the trusted audit context. Run the turn in `context` so every gate is its child.
 */
export function startTurn(agent: { readonly id: string; readonly name: string }, entry: 'generate' | 'stream', auditContext: AuditContext): GuardSpan {
  const parent = spanParent(auditContext);
  const span = guardTracer().startSpan(
    `${GUARD_SPAN.turn} ${agent.id}`,
    {
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gatehouse.entry': entry,
        ...ids({ 'gen_ai.agent.id': agent.id, 'gen_ai.agent.name': agent.name, 'gatehouse.tenant': auditContext.tenant, 'gatehouse.run_id': auditContext.runId }),
      },
    },
    parent,
  );
  return started(span, parent);
}

/** The span of one connector call, `execute_tool <connector id>`; its gates and approval wait are its children. */
export function startToolCall(connectorId: string, toolCallId: string | undefined, entryPoint: string, auditContext: AuditContext): GuardSpan {
  const parent = spanParent(auditContext);
  const span = guardTracer().startSpan(
    `${GUARD_SPAN.tool} ${connectorId}`,
    {
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.type': 'function',
        'gatehouse.entry_point': entryPoint,
        ...ids({ 'gen_ai.tool.name': connectorId, 'gen_ai.tool.call.id': toolCallId, 'gatehouse.tenant': auditContext.tenant, 'gatehouse.run_id': auditContext.runId }),
      },
    },
    parent,
  );
  return started(span, parent);
}

/**
 * A tool call parked on a person: `guard.approval.wait`, from before the request is appended (the
 * request carries its traceparent, so the approval service continues this trace) until the
 * decision reaches the gateway. `end` also observes `gatehouse.approval.wait`.
 */
export function startApprovalWait(connectorId: string, toolCallId: string | undefined): GuardSpan & { setApprovalId(approvalId: string): void } {
  const parent = context.active();
  const span = guardTracer().startSpan(GUARD_SPAN.approvalWait, { attributes: ids({ 'gen_ai.tool.name': connectorId, 'gen_ai.tool.call.id': toolCallId }) }, parent);
  const from = performance.now();
  const inner = started(span, parent);
  let ended = false;
  return {
    ...inner,
    setApprovalId: (approvalId) => void span.setAttribute('gatehouse.approval_id', approvalId.slice(0, MAX_ID)),
    end(outcome = {}) {
      if (ended) return;
      ended = true;
      instruments().approvalWait.record(Math.max(0, performance.now() - from), { code: outcome.code ?? 'unknown' });
      inner.end(outcome);
    },
  };
}
