import { type Context, type Span, type SpanContext, type SpanOptions, trace, type Tracer } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { ExportTelemetry } from '../telemetry/export-telemetry.js';

export interface RecordedSpan {
  readonly name: string;
  readonly attributes: SpanOptions['attributes'];
  readonly parent: SpanContext | undefined;
  ended: boolean;
}

/** A tracer that records what it was asked to start (the SDK's tracer is not a dependency). */
export function recordingTracer(): { tracer: Tracer; spans: RecordedSpan[] } {
  const spans: RecordedSpan[] = [];
  const noop = trace.getTracer('noop');
  const tracer: Tracer = {
    startSpan(name: string, options?: SpanOptions, context?: Context): Span {
      const recorded: RecordedSpan = { name, attributes: options?.attributes, parent: context ? trace.getSpanContext(context) : undefined, ended: false };
      spans.push(recorded);
      const span = noop.startSpan(name, options, context);
      const end = span.end.bind(span);
      span.end = (t) => {
        recorded.ended = true;
        end(t);
      };
      return span;
    },
    startActiveSpan: noop.startActiveSpan.bind(noop) as Tracer['startActiveSpan'],
  };
  return { tracer, spans };
}

/** ExportTelemetry wired to an in-memory metric exporter and a recording tracer. */
export function testTelemetry() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const { tracer, spans } = recordingTracer();
  const telemetry = new ExportTelemetry(provider.getMeter('test'), tracer);
  /** Data points of one metric after a flush. */
  const points = async (name: string) => {
    await reader.forceFlush();
    const all = exporter.getMetrics().at(-1);
    const metric = all?.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
    return metric?.dataPoints ?? [];
  };
  return { telemetry, spans, points, shutdown: () => provider.shutdown() };
}
