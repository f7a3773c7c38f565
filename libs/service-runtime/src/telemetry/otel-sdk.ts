import { metrics } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, type Resource, resourceFromAttributes } from '@opentelemetry/resources';
import { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { type SignalExport, type TelemetryConfig, telemetryConfigFromEnv } from './otel-config.js';
import { OtlpHttpMetricExporter } from './otlp-metric-exporter.js';

/** The SDK a process started: what it exports, and how to flush and stop it. */
export interface TelemetryHandle {
  readonly tracing: boolean;
  readonly metrics: boolean;
  /** Exports what is buffered and stops the providers; never rejects. */
  shutdown(): Promise<void>;
}

function spanExporter(signal: Exclude<SignalExport, { exporter: 'none' }>): SpanExporter {
  switch (signal.exporter) {
    case 'console':
      return new ConsoleSpanExporter();
    case 'otlp':
      return signal.protocol === 'http/json' ? new OtlpJsonTraceExporter() : new OtlpProtobufTraceExporter();
    default: {
      const exhaustive: never = signal;
      return exhaustive;
    }
  }
}

function metricExporter(signal: Exclude<SignalExport, { exporter: 'none' }>): PushMetricExporter {
  switch (signal.exporter) {
    case 'console':
      return new ConsoleMetricExporter();
    case 'otlp':
      return new OtlpHttpMetricExporter(signal.protocol);
    default: {
      const exhaustive: never = signal;
      return exhaustive;
    }
  }
}

/** `service.name` is the process's own unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise. */
function resourceOf(serviceName: string): Resource {
  return defaultResource()
    .merge(resourceFromAttributes({ 'service.name': serviceName, 'service.namespace': 'gatehouse' }))
    .merge(detectResources({ detectors: [envDetector] }));
}

/**
 * Starts the OpenTelemetry SDK the standard `OTEL_*` variables ask for (`telemetryConfigFromEnv`):
 * a tracer provider (registered with the AsyncLocalStorage context manager and the W3C propagator)
 * and a meter provider, each exporting over OTLP/HTTP or to stdout. Nothing is registered when both
 * are off, the default: the API stays a no-op. Call it before anything creates a meter (the
 * services: `runService`); throws `CONFIG.INVALID` for a variable it cannot honour. It reads
 * `process.env` only: the OTLP exporters and the resource detector read their variables there too.
 */
export function startTelemetry(serviceName: string): TelemetryHandle {
  const config: TelemetryConfig = telemetryConfigFromEnv(process.env);
  const { traces, metrics: metricsExport } = config;
  if (traces.exporter === 'none' && metricsExport.exporter === 'none') return { tracing: false, metrics: false, shutdown: async () => undefined };
  const resource = resourceOf(serviceName);
  let tracerProvider: NodeTracerProvider | undefined;
  if (traces.exporter !== 'none') {
    tracerProvider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(spanExporter(traces))] });
    tracerProvider.register();
  }
  let meterProvider: MeterProvider | undefined;
  if (metricsExport.exporter !== 'none') {
    const reader = new PeriodicExportingMetricReader({ exporter: metricExporter(metricsExport), exportIntervalMillis: metricsExport.intervalMs, exportTimeoutMillis: metricsExport.timeoutMs });
    meterProvider = new MeterProvider({ resource, readers: [reader] });
    metrics.setGlobalMeterProvider(meterProvider);
  }
  return {
    tracing: tracerProvider !== undefined,
    metrics: meterProvider !== undefined,
    shutdown: async () => {
      await Promise.allSettled([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
    },
  };
}
