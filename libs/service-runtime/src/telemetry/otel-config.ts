import { GatehouseError } from '@gatehouse/contracts';

/** The standard OpenTelemetry variables a service reads at start (the exporters read the rest: endpoint, headers, timeout). */
export const OTEL_ENV = {
  disabled: 'OTEL_SDK_DISABLED',
  tracesExporter: 'OTEL_TRACES_EXPORTER',
  metricsExporter: 'OTEL_METRICS_EXPORTER',
  endpoint: 'OTEL_EXPORTER_OTLP_ENDPOINT',
  tracesEndpoint: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  metricsEndpoint: 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
  protocol: 'OTEL_EXPORTER_OTLP_PROTOCOL',
  tracesProtocol: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  metricsProtocol: 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL',
  metricInterval: 'OTEL_METRIC_EXPORT_INTERVAL',
  metricTimeout: 'OTEL_METRIC_EXPORT_TIMEOUT',
  serviceName: 'OTEL_SERVICE_NAME',
} as const;

/** Where one signal goes: nowhere, to an OTLP/HTTP collector (protobuf or JSON), or to stdout. */
export type SignalExport = { readonly exporter: 'none' } | { readonly exporter: 'console' } | { readonly exporter: 'otlp'; readonly protocol: 'http/protobuf' | 'http/json' };

export interface TelemetryConfig {
  readonly traces: SignalExport;
  readonly metrics: SignalExport & { readonly intervalMs: number; readonly timeoutMs: number };
}

const OFF: SignalExport = { exporter: 'none' };

function invalid(variable: string, expectation: string): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${expectation}`, { category: 'validation', details: { variable } });
}

const set = (env: NodeJS.ProcessEnv, name: string): string | undefined => {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
};

function protocolOf(env: NodeJS.ProcessEnv, signalVariable: string): 'http/protobuf' | 'http/json' {
  const variable = set(env, signalVariable) === undefined ? OTEL_ENV.protocol : signalVariable;
  const value = set(env, variable) ?? 'http/protobuf';
  if (value === 'http/protobuf' || value === 'http/json') return value;
  throw invalid(variable, 'must be "http/protobuf" or "http/json"');
}

/**
 * One signal's export: the exporter named by its variable (`otlp`, `console` or `none`; one of
 * them, not a list), else `otlp` when an OTLP endpoint for it is set, else none. Off by default.
 */
function signalOf(env: NodeJS.ProcessEnv, exporterVariable: string, endpointVariable: string, protocolVariable: string): SignalExport {
  const named = set(env, exporterVariable);
  const exporter = named ?? (set(env, OTEL_ENV.endpoint) ?? set(env, endpointVariable) ? 'otlp' : 'none');
  switch (exporter) {
    case 'none':
      return OFF;
    case 'console':
      return { exporter: 'console' };
    case 'otlp':
      return { exporter: 'otlp', protocol: protocolOf(env, protocolVariable) };
    default:
      throw invalid(exporterVariable, 'must be "otlp", "console" or "none"');
  }
}

function millis(env: NodeJS.ProcessEnv, variable: string, fallback: number): number {
  const raw = set(env, variable);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw invalid(variable, 'must be a positive whole number of milliseconds');
  return value;
}

/**
 * What the standard `OTEL_*` variables ask of a service's telemetry; everything off unless they say
 * so. A value it cannot honour is a typed `CONFIG.INVALID` naming the variable, never its value.
 */
export function telemetryConfigFromEnv(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  const disabled = set(env, OTEL_ENV.disabled);
  if (disabled !== undefined && disabled !== 'true' && disabled !== 'false') throw invalid(OTEL_ENV.disabled, 'must be "true" or "false"');
  const intervalMs = millis(env, OTEL_ENV.metricInterval, 60_000);
  // The SDK refuses an export timeout past the interval: the default shrinks with a short interval.
  const timeoutMs = millis(env, OTEL_ENV.metricTimeout, Math.min(30_000, intervalMs));
  if (timeoutMs > intervalMs) throw invalid(OTEL_ENV.metricTimeout, `must not be more than ${OTEL_ENV.metricInterval}`);
  const metricsTiming = { intervalMs, timeoutMs };
  if (disabled === 'true') return { traces: OFF, metrics: { ...OFF, ...metricsTiming } };
  return {
    traces: signalOf(env, OTEL_ENV.tracesExporter, OTEL_ENV.tracesEndpoint, OTEL_ENV.tracesProtocol),
    metrics: { ...signalOf(env, OTEL_ENV.metricsExporter, OTEL_ENV.metricsEndpoint, OTEL_ENV.metricsProtocol), ...metricsTiming },
  };
}
