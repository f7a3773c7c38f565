import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { activeTraceContext } from '@gatehouse/kafka';
import { type RecordedTelemetry, recordTelemetry } from '@gatehouse/kafka/testing';
import { continueTrace } from './continue-trace.js';
import { HTTP_METRIC, httpTelemetry } from './http-telemetry.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const TRACEPARENT = `00-${TRACE_ID}-b7ad6b7169203331-01`;

/** An express-like request and response: routing sets `route` before the handler answers. */
function exchange(method: string, headers: Record<string, string> = {}) {
  const request: { method: string; headers: Record<string, string>; baseUrl: string; route?: { path: string } } = { method, headers, baseUrl: '' };
  const response = Object.assign(new EventEmitter(), { statusCode: 200 });
  return { request, response };
}

describe('httpTelemetry', () => {
  let telemetry: RecordedTelemetry;
  beforeEach(() => {
    telemetry = recordTelemetry();
  });
  afterEach(() => telemetry.stop());

  it("continues the caller's traceparent in a server span named by the route template; the handler runs in it", () => {
    const { request, response } = exchange('POST', { traceparent: TRACEPARENT, authorization: 'Bearer sk_secret' });
    let inHandler: string | undefined;
    httpTelemetry()(request, response, () => {
      request.route = { path: '/v1/approvals/:approvalId/decision' };
      inHandler = activeTraceContext()?.traceparent;
    });
    response.emit('finish');
    const [span] = telemetry.spans;
    expect(span).toMatchObject({ name: 'POST /v1/approvals/:approvalId/decision', kind: SpanKind.SERVER, traceId: TRACE_ID, parentSpanId: 'b7ad6b7169203331', ended: true });
    expect(inHandler).toBe(`00-${TRACE_ID}-${span?.spanId}-01`);
    // Method, route template and status only: never the path with its ids, the query or a header.
    expect(span?.attributes).toEqual({ 'http.request.method': 'POST', 'http.route': '/v1/approvals/:approvalId/decision', 'http.response.status_code': 200 });
    expect(telemetry.measurements(HTTP_METRIC.duration).map((m) => m.attributes)).toEqual([span?.attributes]);
  });

  it('starts a trace of its own without a (valid) traceparent, marks a 5xx failed, and ends once however the exchange ends', () => {
    const { request, response } = exchange('BREW', { traceparent: 'forged' });
    httpTelemetry()(request, response, () => undefined);
    response.statusCode = 503;
    response.emit('close');
    response.emit('finish');
    expect(telemetry.spans).toHaveLength(1);
    expect(telemetry.spans[0]).toMatchObject({ name: '_OTHER', parentSpanId: undefined, status: { code: SpanStatusCode.ERROR } });
    expect(telemetry.measurements(HTTP_METRIC.duration)).toHaveLength(1);
  });
});

describe('continueTrace', () => {
  let telemetry: RecordedTelemetry;
  beforeEach(() => {
    telemetry = recordTelemetry();
  });
  afterEach(() => telemetry.stop());

  it("runs the work in a span of the named trace, linked to the caller's span, and what it appends carries that trace", async () => {
    const { request, response } = exchange('POST');
    let work: Promise<string | undefined> = Promise.resolve(undefined);
    httpTelemetry()(request, response, () => {
      work = continueTrace('test', 'approval.decide', { traceparent: TRACEPARENT }, { 'gatehouse.approval_id': 'a-1' }, async () => activeTraceContext()?.traceparent);
    });
    const carried = await work;
    response.emit('finish');
    const [server, decide] = telemetry.spans;
    expect(decide).toMatchObject({ name: 'approval.decide', traceId: TRACE_ID, parentSpanId: 'b7ad6b7169203331', ended: true, attributes: { 'gatehouse.approval_id': 'a-1' } });
    expect(decide?.links).toEqual([{ context: expect.objectContaining({ traceId: server?.traceId, spanId: server?.spanId }) }]);
    expect(carried).toBe(`00-${TRACE_ID}-${decide?.spanId}-01`);
  });

  it('without a trace to continue, is a child of the active span; a failure marks it and is rethrown', async () => {
    await expect(continueTrace('test', 'x', undefined, {}, () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(telemetry.spans[0]).toMatchObject({ name: 'x', parentSpanId: undefined, links: [], status: { code: SpanStatusCode.ERROR }, ended: true });
  });
});
