import { afterEach, describe, expect, it } from '@jest/globals';
import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { recordTelemetry } from '../testing/telemetry.js';
import { activeTraceContext, parentContext, traceContextFromHeaders, traceContextOf, traceHeaders } from './trace-context.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

describe('parentContext', () => {
  it('reads a W3C traceparent as a remote, sampled parent, with its tracestate', () => {
    const parent = trace.getSpanContext(parentContext({ traceparent: TRACEPARENT, tracestate: 'vendor=abc' }));
    expect(parent).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    expect(parent?.traceState?.get('vendor')).toBe('abc');
  });

  it.each([
    ['none', undefined],
    ['the invalid version ff', `ff-${TRACE_ID}-${SPAN_ID}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN_ID}-01`],
    ['an all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['a malformed one', 'not-a-traceparent'],
  ])('starts a new trace (ROOT_CONTEXT) for %s', (_what, traceparent) => {
    expect(parentContext(traceparent === undefined ? undefined : { traceparent })).toBe(ROOT_CONTEXT);
  });
});

describe('trace context of a span', () => {
  afterEach(() => trace.disable());

  it('is none for the API no-op span (no SDK registered)', () => {
    expect(traceContextOf(trace.getTracer('t').startSpan('x').spanContext())).toBeUndefined();
    expect(activeTraceContext()).toBeUndefined();
  });

  it('is the active span while it runs, and round-trips through record headers as string or bytes', () => {
    const telemetry = recordTelemetry();
    try {
      const span = trace.getTracer('t').startSpan('x');
      const active = context.with(trace.setSpan(context.active(), span), () => activeTraceContext());
      expect(active).toEqual({ traceparent: `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01` });
      const headers = traceHeaders({ ...active!, tracestate: 'a=1' });
      expect(traceContextFromHeaders(headers)).toEqual({ ...active, tracestate: 'a=1' });
      expect(traceContextFromHeaders({ traceparent: Buffer.from(active!.traceparent) })).toEqual(active);
    } finally {
      telemetry.stop();
    }
  });
});

describe('traceContextFromHeaders', () => {
  it('ignores a missing or malformed traceparent: a header never breaks a record', () => {
    expect(traceContextFromHeaders(undefined)).toBeUndefined();
    expect(traceContextFromHeaders({ 'gatehouse-type': 'X' })).toBeUndefined();
    expect(traceContextFromHeaders({ traceparent: 'garbage' })).toBeUndefined();
  });

  it('keeps the parent when only the tracestate is past its bound', () => {
    expect(traceContextFromHeaders({ traceparent: TRACEPARENT, tracestate: 'x'.repeat(600) })).toEqual({ traceparent: TRACEPARENT });
  });

  it('writes no headers without a trace context', () => {
    expect(traceHeaders(undefined)).toEqual({});
  });
});
