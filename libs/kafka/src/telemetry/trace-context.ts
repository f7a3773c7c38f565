import { type Context, context, createTraceState, isSpanContextValid, ROOT_CONTEXT, type SpanContext, trace, TraceFlags } from '@opentelemetry/api';
import { type TraceContext, TraceContextSchema } from '@gatehouse/contracts';
import { type IHeaders } from 'kafkajs';

/** The W3C record headers a producer adds and a consumer reads (`traceparent`, `tracestate`). */
export const TRACE_HEADERS = { parent: 'traceparent', state: 'tracestate' } as const;

const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/**
 * A W3C trace context as a remote parent context, without a registered propagator (none is, with
 * the SDK off): ROOT_CONTEXT when there is none, or its traceparent is of the invalid version ff or
 * has an all-zero id.
 */
export function parentContext(traceContext: TraceContext | undefined): Context {
  const match = traceContext === undefined ? null : TRACEPARENT.exec(traceContext.traceparent);
  if (!match) return ROOT_CONTEXT;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
    ...(traceContext?.tracestate ? { traceState: createTraceState(traceContext.tracestate) } : {}),
  });
}

/** The W3C trace context of a span context; undefined for an invalid one (the API's no-op spans). */
export function traceContextOf(spanContext: SpanContext | undefined): TraceContext | undefined {
  if (!spanContext || !isSpanContextValid(spanContext)) return undefined;
  const flags = (spanContext.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
  // A tracestate past the contract's bound is dropped whole: cut, its last entry would be garbage.
  const state = spanContext.traceState?.serialize();
  return { traceparent: `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`, ...(state && state.length <= 512 ? { tracestate: state } : {}) };
}

/** The trace context of the span active now; undefined with no span (always, with the SDK off). */
export function activeTraceContext(): TraceContext | undefined {
  return traceContextOf(trace.getSpanContext(context.active()));
}

/** The record headers carrying `traceContext` (none without one). */
export function traceHeaders(traceContext: TraceContext | undefined): Record<string, string> {
  if (!traceContext) return {};
  return traceContext.tracestate === undefined
    ? { [TRACE_HEADERS.parent]: traceContext.traceparent }
    : { [TRACE_HEADERS.parent]: traceContext.traceparent, [TRACE_HEADERS.state]: traceContext.tracestate };
}

function headerText(value: IHeaders[string]): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  if (first === undefined) return undefined;
  return typeof first === 'string' ? first : first.toString('utf8');
}

/**
 * The trace context a record's headers carry; undefined when absent or malformed. Headers are not
 * signed: they only join spans to a trace, never grant or decide anything.
 */
export function traceContextFromHeaders(headers: IHeaders | undefined): TraceContext | undefined {
  const traceparent = headers ? headerText(headers[TRACE_HEADERS.parent]) : undefined;
  if (traceparent === undefined) return undefined;
  const tracestate = headerText(headers?.[TRACE_HEADERS.state]);
  const parsed = TraceContextSchema.safeParse({ traceparent, ...(tracestate === undefined ? {} : { tracestate }) });
  if (parsed.success) return parsed.data;
  // A malformed tracestate does not cost the parent.
  const parentOnly = TraceContextSchema.safeParse({ traceparent });
  return parentOnly.success ? parentOnly.data : undefined;
}
