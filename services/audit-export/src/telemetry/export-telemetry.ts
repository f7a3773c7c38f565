import { type Attributes, type Counter, type Histogram, type Meter, metrics, type Span, SpanKind, trace, type Tracer } from '@opentelemetry/api';
import { type TraceContext } from '@gatehouse/contracts';
import { parentContext } from '@gatehouse/kafka';
import { type ExportLine } from '../feeds/export-line.js';

/** Instrumentation scope of the service's metrics and spans: its package name, as every scope of the suite (docs/telemetry.md). */
export const TELEMETRY_SCOPE = '@gatehouse/audit-export-service';

export const METRIC = {
  exported: 'gatehouse.audit.exported',
  latency: 'gatehouse.audit.export.latency',
  lag: 'gatehouse.audit.export.lag',
  sinkFailures: 'gatehouse.audit.export.sink_failures',
  unexportable: 'gatehouse.audit.export.unexportable',
} as const;

/**
 * The export's counters, histogram, lag gauge and spans, through `@opentelemetry/api` only:
 * with no SDK registered they are no-ops; a host (or a test) registers a MeterProvider and
 * TracerProvider, or passes its own meter and tracer here.
 */
export class ExportTelemetry {
  private readonly exported: Counter;
  private readonly latency: Histogram;
  private readonly sinkFailures: Counter;
  private readonly unexportable: Counter;
  private readonly tracer: Tracer;
  private readonly lags = new Map<string, { attributes: Attributes; value: number }>();

  constructor(meter: Meter = metrics.getMeter(TELEMETRY_SCOPE), tracer: Tracer = trace.getTracer(TELEMETRY_SCOPE)) {
    this.tracer = tracer;
    this.exported = meter.createCounter(METRIC.exported, { description: 'Audit feed lines acknowledged by a sink, by outcome and boundary' });
    this.latency = meter.createHistogram(METRIC.latency, { description: 'Broker append time to sink acknowledgement', unit: 'ms' });
    this.sinkFailures = meter.createCounter(METRIC.sinkFailures, { description: 'Batch writes a sink did not acknowledge (the export pauses and retries)' });
    this.unexportable = meter.createCounter(METRIC.unexportable, { description: 'Audit records that failed their contract and were skipped by the export' });
    meter.createObservableGauge(METRIC.lag, { description: 'Records on the audit topic not yet exported, per partition' }).addCallback((result) => {
      for (const { attributes, value } of this.lags.values()) result.observe(value, attributes);
    });
  }

  /** Records one line acknowledged by `sink` at `ackedAt` (epoch ms). */
  acknowledged(exportName: string, sink: string, line: ExportLine, ackedAt: number): void {
    const attributes = { export: exportName, sink, format: line.format, outcome: line.outcome, boundary: line.boundary };
    this.exported.add(1, attributes);
    this.latency.record(Math.max(0, ackedAt - line.logTime.getTime()), { export: exportName, sink });
  }

  sinkFailed(exportName: string, sink: string): void {
    this.sinkFailures.add(1, { export: exportName, sink });
  }

  skipped(exportName: string, code: string): void {
    this.unexportable.add(1, { export: exportName, code });
  }

  setLag(exportName: string, partition: number, value: number): void {
    this.lags.set(`${exportName}/${partition}`, { attributes: { export: exportName, partition }, value });
  }

  /** A span for exporting one record, child of the decision's trace when it carried one. */
  startExportSpan(exportName: string, record: { id: string; trace?: TraceContext | undefined; partition: number; offset: string }): Span {
    return this.tracer.startSpan(
      'audit.export',
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          'gatehouse.export': exportName,
          'gatehouse.event_id': record.id,
          'messaging.system': 'kafka',
          'messaging.kafka.partition': record.partition,
          'messaging.kafka.offset': record.offset,
        },
      },
      parentContext(record.trace),
    );
  }
}
