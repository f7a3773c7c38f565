import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonMetricsSerializer, MetricsExporterMetricsHelper, ProtobufMetricsSerializer } from '@opentelemetry/otlp-transformer';
import { AggregationTemporality, type PushMetricExporter, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

/**
 * An OTLP/HTTP metric exporter (protobuf or JSON) on the SDK line the services use (2.12.1 /
 * 0.223.1): that patch line shipped no `exporter-metrics-otlp-http`, and its 0.223.0 pins
 * `sdk-metrics` 2.12.0 exactly, which would install a second metrics SDK beside this one. It is
 * what that package's exporter is, over the same base and serializers; endpoint, headers, timeout
 * and compression come from the standard `OTEL_EXPORTER_OTLP_[METRICS_]*` variables, and it
 * exports cumulative sums (the OTLP default).
 */
export class OtlpHttpMetricExporter extends OTLPExporterBase<ResourceMetrics> implements PushMetricExporter {
  constructor(protocol: 'http/protobuf' | 'http/json') {
    const json = protocol === 'http/json';
    super(
      createOtlpHttpExportDelegate(
        convertLegacyHttpOptions({}, 'METRICS', 'v1/metrics', { 'Content-Type': json ? 'application/json' : 'application/x-protobuf' }),
        json ? JsonMetricsSerializer : ProtobufMetricsSerializer,
        'otlp_http_metric_exporter',
        MetricsExporterMetricsHelper,
        undefined,
      ),
    );
  }

  selectAggregationTemporality(): AggregationTemporality {
    return AggregationTemporality.CUMULATIVE;
  }
}
