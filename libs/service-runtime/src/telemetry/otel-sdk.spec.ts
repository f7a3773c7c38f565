import { afterEach, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { context, createContextKey, isSpanContextValid, metrics, ProxyTracerProvider, trace } from '@opentelemetry/api';
import { startTelemetry } from './otel-sdk.js';

const VARIABLES = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_TRACES_EXPORTER', 'OTEL_METRICS_EXPORTER', 'OTEL_SDK_DISABLED', 'OTEL_SERVICE_NAME'];
const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));

/** Sets exactly these OTEL_* variables for the test (the SDK's exporters read process.env themselves). */
function withEnv(values: Record<string, string>): void {
  for (const name of VARIABLES) delete process.env[name];
  Object.assign(process.env, values);
}

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  trace.disable();
  context.disable();
  metrics.disable();
});

const tracerDelegate = () => (trace.getTracerProvider() as ProxyTracerProvider).getDelegate();
const KEY = createContextKey('otel-sdk-spec');
/** Whether a context manager carries values into a callback: the API's default one does not. */
const carriesContext = () => context.with(context.active().setValue(KEY, 1), () => context.active().getValue(KEY)) === 1;

describe('startTelemetry', () => {
  it('registers nothing without OTEL_* variables: the API stays its no-op, spans record nothing', async () => {
    withEnv({});
    const before = { tracer: tracerDelegate(), meter: metrics.getMeterProvider() };
    const handle = startTelemetry('gatehouse-spec');
    expect(handle).toMatchObject({ tracing: false, metrics: false });
    expect(tracerDelegate()).toBe(before.tracer);
    expect(metrics.getMeterProvider()).toBe(before.meter);
    expect(carriesContext()).toBe(false);
    const span = trace.getTracer('spec').startSpan('nothing');
    expect([span.isRecording(), isSpanContextValid(span.spanContext())]).toEqual([false, false]);
    await handle.shutdown();
  });

  it('registers nothing with OTEL_SDK_DISABLED=true, whatever else is set', () => {
    withEnv({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(startTelemetry('gatehouse-spec')).toMatchObject({ tracing: false, metrics: false });
    expect(carriesContext()).toBe(false);
  });

  it('with an OTLP endpoint, traces and meters and sends both there on shutdown, under the service name', async () => {
    const received: { path: string | undefined; type: string | undefined; body: string }[] = [];
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ path: request.url, type: request.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') });
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(server.address() as { port: number }).port}`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
      const handle = startTelemetry('gatehouse-spec');
      expect(handle).toMatchObject({ tracing: true, metrics: true });
      expect(carriesContext()).toBe(true);
      const span = trace.getTracer('spec').startSpan('spec.work');
      expect(span.isRecording()).toBe(true);
      span.end();
      metrics.getMeterProvider().getMeter('spec').createCounter('spec.count').add(1, { code: 'SPEC.OK' });
      await handle.shutdown();
      expect(received.map((r) => [r.path, r.type]).sort()).toEqual([
        ['/v1/metrics', 'application/json'],
        ['/v1/traces', 'application/json'],
      ]);
      const traces = received.find((r) => r.path === '/v1/traces')?.body ?? '';
      expect(traces).toContain('"spec.work"');
      expect(traces).toContain('"gatehouse-spec"');
      expect(received.find((r) => r.path === '/v1/metrics')?.body).toContain('"spec.count"');
    } finally {
      server.close();
    }
  });
});
