import { type Attributes, context, type Histogram, type MeterProvider, metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { parentContext, traceContextFromHeaders } from '@gatehouse/kafka';

/** Instrumentation scope of the services' HTTP spans and metrics. */
export const SERVICE_TELEMETRY_SCOPE = '@gatehouse/service-runtime';

/** The HTTP metric (OpenTelemetry semantic conventions), by method, route template and status. */
export const HTTP_METRIC = { duration: 'http.server.request.duration' } as const;

const METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

/** What the middleware reads of an express request: never its URL, query, body or headers but the trace context. */
interface TracedRequest {
  readonly method: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly baseUrl?: string;
  readonly route?: { readonly path?: unknown };
}

interface TracedResponse {
  readonly statusCode: number;
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

let duration: { readonly provider: MeterProvider; readonly histogram: Histogram } | undefined;

function durationHistogram(): Histogram {
  const provider = metrics.getMeterProvider();
  if (duration?.provider !== provider) {
    const histogram = provider.getMeter(SERVICE_TELEMETRY_SCOPE).createHistogram(HTTP_METRIC.duration, { description: 'Duration of HTTP server requests', unit: 's' });
    duration = { provider, histogram };
  }
  return duration.histogram;
}

/** The route template the request matched (`/v1/approvals/:approvalId/decision`), never the path with its ids. */
function routeOf(request: TracedRequest): string | undefined {
  const path = request.route?.path;
  return typeof path === 'string' ? `${request.baseUrl ?? ''}${path}` : undefined;
}

/**
 * Express middleware every service runs first (`createServiceApp`): a server span per request that
 * continues the caller's W3C `traceparent` (parsed directly, no propagator needed), named by the
 * route template once routing matched, and the `http.server.request.duration` histogram. The
 * handler runs in the span's context, so what it appends carries the trace on. Attributes: method,
 * route template, status; never the URL, query, headers or body.
 */
export function httpTelemetry(): (request: TracedRequest, response: TracedResponse, next: () => void) => void {
  return (request, response, next) => {
    const started = performance.now();
    const method = METHODS.has(request.method) ? request.method : '_OTHER';
    const parent = parentContext(traceContextFromHeaders(request.headers as Parameters<typeof traceContextFromHeaders>[0]));
    const span = trace.getTracer(SERVICE_TELEMETRY_SCOPE).startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, parent);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const route = routeOf(request);
      const attributes: Attributes = { 'http.request.method': method, 'http.response.status_code': response.statusCode, ...(route === undefined ? {} : { 'http.route': route }) };
      if (route !== undefined) span.updateName(`${method} ${route}`);
      span.setAttributes(attributes);
      if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      durationHistogram().record((performance.now() - started) / 1_000, attributes);
    };
    response.once('finish', end);
    response.once('close', end);
    context.with(trace.setSpan(parent, span), next);
  };
}
