import { describe, expect, it } from '@jest/globals';
import { GatehouseError } from '@gatehouse/contracts';
import { telemetryConfigFromEnv } from './otel-config.js';

const endpoint = 'http://collector.internal:4318';

function refusal(env: NodeJS.ProcessEnv): GatehouseError {
  try {
    telemetryConfigFromEnv(env);
  } catch (error) {
    if (error instanceof GatehouseError) return error;
  }
  throw new Error('expected CONFIG.INVALID');
}

describe('telemetryConfigFromEnv', () => {
  it('is off by default: no variable, no SDK', () => {
    expect(telemetryConfigFromEnv({})).toEqual({ traces: { exporter: 'none' }, metrics: { exporter: 'none', intervalMs: 60_000, timeoutMs: 30_000 } });
  });

  it('turns both signals on over OTLP/HTTP protobuf (the OTLP default) when an endpoint is set', () => {
    expect(telemetryConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint })).toEqual({
      traces: { exporter: 'otlp', protocol: 'http/protobuf' },
      metrics: { exporter: 'otlp', protocol: 'http/protobuf', intervalMs: 60_000, timeoutMs: 30_000 },
    });
  });

  it('reads each signal on its own: exporter, endpoint and protocol, the signal variable first', () => {
    const config = telemetryConfigFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_METRICS_EXPORTER: 'console' });
    expect(config.traces).toEqual({ exporter: 'otlp', protocol: 'http/json' });
    expect(config.metrics).toMatchObject({ exporter: 'console' });
  });

  it('lets the exporter variable turn a signal off despite an endpoint, and OTEL_SDK_DISABLED turn everything off', () => {
    expect(telemetryConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRICS_EXPORTER: 'none' }).metrics.exporter).toBe('none');
    expect(telemetryConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }).traces.exporter).toBe('none');
  });

  it('shortens the default export timeout to a shorter interval (the SDK refuses a timeout past it)', () => {
    expect(telemetryConfigFromEnv({ OTEL_METRIC_EXPORT_INTERVAL: '1000' }).metrics).toMatchObject({ intervalMs: 1_000, timeoutMs: 1_000 });
  });

  it.each([
    ['OTEL_TRACES_EXPORTER', { OTEL_TRACES_EXPORTER: 'zipkin' }],
    ['OTEL_METRICS_EXPORTER', { OTEL_METRICS_EXPORTER: 'prometheus,otlp' }],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }],
    ['OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'thrift-secret-x' }],
    ['OTEL_METRIC_EXPORT_INTERVAL', { OTEL_METRIC_EXPORT_INTERVAL: '-5' }],
    ['OTEL_METRIC_EXPORT_TIMEOUT', { OTEL_METRIC_EXPORT_INTERVAL: '1000', OTEL_METRIC_EXPORT_TIMEOUT: '5000' }],
    ['OTEL_SDK_DISABLED', { OTEL_SDK_DISABLED: 'yes' }],
  ])('refuses a value it cannot honour with CONFIG.INVALID naming %s, never the value', (variable, env) => {
    const error = refusal(env);
    expect(error.code).toBe('CONFIG.INVALID');
    expect(error.details).toEqual({ variable });
    expect(error.message.startsWith(variable)).toBe(true);
    for (const value of Object.values(env)) if (value !== endpoint) expect(error.message).not.toContain(value);
  });
});
