// What a process needs to start the OpenTelemetry SDK from the standard OTEL_* variables: the
// `@gatehouse/service-runtime/telemetry` entry (no Nest, no database), for services and agent processes alike.
export { OTEL_ENV, type SignalExport, type TelemetryConfig, telemetryConfigFromEnv } from './otel-config.js';
export { startTelemetry, type TelemetryHandle } from './otel-sdk.js';
export { OtlpHttpMetricExporter } from './otlp-metric-exporter.js';
export { continueTrace } from './continue-trace.js';
export { HTTP_METRIC, httpTelemetry, SERVICE_TELEMETRY_SCOPE } from './http-telemetry.js';
