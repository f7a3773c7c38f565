import 'reflect-metadata';
import { type INestApplication, type LoggerService, Logger } from '@nestjs/common';
import { GatehouseError } from '@gatehouse/contracts';
import { type ServiceConfig, serviceConfigFromEnv } from './config.js';
import { createServiceApp } from './create-app.js';
import { type ServiceDescriptor } from './services.js';
import { startTelemetry, type TelemetryHandle } from './telemetry/otel-sdk.js';

/** One JSON line per log entry on stdout: what a log shipper expects. */
class JsonLogger implements LoggerService {
  constructor(private readonly service: string) {}
  private write(level: string, message: unknown, context?: unknown): void {
    const line = { time: new Date().toISOString(), level, service: this.service, context, message: String(message) };
    (level === 'error' ? process.stderr : process.stdout).write(`${JSON.stringify(line)}\n`);
  }
  log(message: unknown, context?: unknown): void {
    this.write('info', message, context);
  }
  error(message: unknown, _trace?: unknown, context?: unknown): void {
    this.write('error', message, context);
  }
  warn(message: unknown, context?: unknown): void {
    this.write('warn', message, context);
  }
  debug(): void {}
  verbose(): void {}
}

/** How long a graceful stop may take before the process gives up and exits 1. */
const SHUTDOWN_DEADLINE_MS = 15_000;
/** How long the stop waits for the last spans and metrics to leave: an unreachable collector must not hold it. */
const TELEMETRY_FLUSH_MS = 5_000;

/**
 * How long an idle keep-alive connection stays open, ms. Node's default (5 s) is shorter than
 * what clients and load balancers keep idle connections for (undici: the server's hint less 1 s;
 * load balancers: 60 s), so a client could send on a connection the server was closing and get
 * "other side closed". The server keeps them longer than any of those; headers get 1 s more.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * Creates and starts a service. SIGTERM/SIGINT close it gracefully (HTTP server, then
 * the lifecycle hooks that disconnect Kafka and the database pool, then `telemetry`'s last
 * export) and exit 0; Nest's own shutdown hooks would re-raise the signal instead, which reads
 * as a crash to a supervisor.
 */
export async function startService(module: unknown, config: ServiceConfig, telemetry?: TelemetryHandle): Promise<INestApplication> {
  const logger = new JsonLogger(config.service.name);
  const app = await createServiceApp(module, { logger });
  const server = app.getHttpServer() as { keepAliveTimeout: number; headersTimeout: number };
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
  await app.listen(config.port, config.host);
  const log = new Logger('lifecycle');
  log.log(`${config.service.name} listening on http://${config.host}:${config.port} (health: /health)`);
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.log(`${signal} received, stopping`);
    setTimeout(() => {
      log.error('graceful stop timed out');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    const flushed = () => Promise.race([telemetry?.shutdown(), new Promise((resolve) => setTimeout(resolve, TELEMETRY_FLUSH_MS).unref())]);
    app.close().then(flushed).then(
      () => {
        log.log('stopped');
        process.exit(0);
      },
      () => {
        log.error('stop failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return app;
}

/**
 * The whole `main` of a service: reads its configuration, starts the OpenTelemetry SDK the
 * `OTEL_*` variables ask for (none by default) before anything creates a meter, starts the
 * service, and on a start-up failure prints one JSON error line (code, never secrets) and exits 1.
 */
export async function runService(descriptor: ServiceDescriptor, createModule: (config: ServiceConfig) => unknown): Promise<void> {
  try {
    const config = serviceConfigFromEnv(descriptor);
    const telemetry = startTelemetry(`gatehouse-${descriptor.name}`);
    await startService(createModule(config), config, telemetry);
  } catch (error) {
    const code = error instanceof GatehouseError ? error.code : 'SERVICE.START_FAILED';
    const message = error instanceof GatehouseError ? error.message : 'service failed to start';
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'error', service: descriptor.name, code, message })}\n`);
    process.exit(1);
  }
}
