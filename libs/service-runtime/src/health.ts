import { GatehouseError } from '@gatehouse/contracts';
import { type Admin, type Kafka } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { type ProjectionLogHealth } from './projection/projection-logs.js';

export type CheckStatus = 'up' | 'down';

export interface HealthReport {
  readonly service: string;
  readonly status: 'ok' | 'unavailable';
  readonly checks: {
    readonly kafka: { readonly status: CheckStatus; readonly brokers?: number; readonly error?: string };
    readonly database: { readonly status: CheckStatus; readonly migrations?: number; readonly error?: string };
    /** Whether every projection is bound to the log its rows came from (absent without projections). */
    readonly projection?: ProjectionLogHealth;
  };
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    work.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error('failed'));
      },
    );
  });
}

/** Connects an admin client and waits until the broker describes the cluster, or fails at the deadline. */
export async function connectKafkaAdmin(kafka: Kafka, deadlineMs = 60_000): Promise<Admin> {
  const admin = kafka.admin();
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      await admin.connect();
      await withTimeout(admin.describeCluster(), 5_000);
      return admin;
    } catch (cause) {
      if (Date.now() > until) {
        await admin.disconnect().catch(() => undefined);
        throw new GatehouseError('KAFKA.UNAVAILABLE', 'cannot reach the Kafka cluster', { category: 'unavailable', retryable: true, cause });
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

/**
 * Asks the broker and the database, each within a deadline; errors are reported by class, not
 * detail. With `projection` (the service's projection logs), the service is ok only while every
 * projection is bound to the log its rows came from.
 */
export async function checkHealth(service: string, admin: Admin, dataSource: DataSource, timeoutMs = 2_000, projection?: ProjectionLogHealth): Promise<HealthReport> {
  const kafkaCheck = (async () => {
    try {
      const cluster = await withTimeout(admin.describeCluster(), timeoutMs);
      return { status: 'up' as const, brokers: cluster.brokers.length };
    } catch {
      return { status: 'down' as const, error: 'broker unreachable' };
    }
  })();
  const databaseCheck = (async () => {
    try {
      const rows: { n: string }[] = await withTimeout(
        dataSource.query(`SELECT count(*) AS n FROM "${(dataSource.options as { schema?: string }).schema ?? "public"}".typeorm_migrations`),
        timeoutMs,
      );
      return { status: 'up' as const, migrations: Number(rows[0]?.n ?? 0) };
    } catch {
      return { status: 'down' as const, error: 'database unreachable' };
    }
  })();
  const [kafkaResult, databaseResult] = await Promise.all([kafkaCheck, databaseCheck]);
  const projected = projection && projection.projections.length > 0 ? { projection } : {};
  const ok = kafkaResult.status === 'up' && databaseResult.status === 'up' && (projected.projection?.status ?? 'up') === 'up';
  return { service, status: ok ? 'ok' : 'unavailable', checks: { kafka: kafkaResult, database: databaseResult, ...projected } };
}
