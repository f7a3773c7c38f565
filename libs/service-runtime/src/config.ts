import { hostname } from 'node:os';
import { GatehouseError } from '@gatehouse/contracts';
import {
  KAFKA_BROKERS_ENV,
  KAFKA_PASSWORD_ENV,
  KAFKA_PASSWORD_FILE_ENV,
  KAFKA_SASL_MECHANISM_ENV,
  KAFKA_USERNAME_ENV,
  type KafkaConnectionConfig,
  kafkaConfigFromEnv,
} from '@gatehouse/kafka';
import { DATABASE_NAME, type ServiceDescriptor } from './services.js';

/** Environment variables every service reads. docker-compose.yml sets the same names. */
export const ENV = {
  kafkaBrokers: KAFKA_BROKERS_ENV,
  /** SASL mechanism (scram-sha-512, scram-sha-256, plain); unset = no authentication. */
  kafkaSaslMechanism: KAFKA_SASL_MECHANISM_ENV,
  /** The service's Kafka user (its principal; ACLs in libs/kafka/src/acls.ts). */
  kafkaUsername: KAFKA_USERNAME_ENV,
  /** File holding the Kafka password (preferred), or the password itself in GATEHOUSE_KAFKA_PASSWORD. */
  kafkaPasswordFile: KAFKA_PASSWORD_FILE_ENV,
  kafkaPassword: KAFKA_PASSWORD_ENV,
  /** postgres://user[:password]@host:port/db; the password may instead come from GATEHOUSE_DATABASE_PASSWORD_FILE. */
  databaseUrl: 'GATEHOUSE_DATABASE_URL',
  databasePasswordFile: 'GATEHOUSE_DATABASE_PASSWORD_FILE',
  /** HTTP port; default from the service catalog. */
  port: 'GATEHOUSE_PORT',
  /** Interface to bind; 127.0.0.1 unless a container needs 0.0.0.0. */
  host: 'GATEHOUSE_HOST',
  /** Optional prefix of every topic name (isolated environments, tests). */
  topicNamespace: 'GATEHOUSE_TOPIC_NAMESPACE',
  /** How long start-up waits for the broker before failing, ms (default 60000). */
  kafkaConnectDeadlineMs: 'GATEHOUSE_KAFKA_CONNECT_DEADLINE_MS',
  /** Least time between two snapshots of a fold service's fold, ms (default 30000; 0 writes none). */
  foldSnapshotIntervalMs: 'GATEHOUSE_FOLD_SNAPSHOT_INTERVAL_MS',
  /**
   * `partitions`: the replicas of the service share its topic's partitions through a consumer group
   * and each folds only its own, forwarding requests for other partitions' keys to their owner
   * (issue 19). Unset (or `none`): one replica folds every partition.
   */
  scaleOut: 'GATEHOUSE_SCALE_OUT',
  /** With scale-out: the base URL other replicas forward requests to (default http://<host>:<port>). */
  advertisedUrl: 'GATEHOUSE_ADVERTISED_URL',
  /** With scale-out: this replica's name in the ownership table (default <hostname>:<pid>). */
  replicaId: 'GATEHOUSE_REPLICA_ID',
} as const;

export interface ServiceConfig {
  readonly service: ServiceDescriptor;
  readonly host: string;
  readonly port: number;
  readonly kafka: KafkaConnectionConfig;
  readonly kafkaConnectDeadlineMs: number;
  readonly topicNamespace: string | undefined;
  readonly database: { readonly url: string; readonly schema: string };
  /** Least time between two snapshots of the service's fold, ms; 0: none written. */
  readonly foldSnapshotIntervalMs: number;
  /** Set when the replicas share the topic's partitions (GATEHOUSE_SCALE_OUT=partitions): who this replica is and where it answers. */
  readonly scaleOut?: { readonly replicaId: string; readonly url: string };
}

/** The scale-out settings: undefined for a single replica; a typed error for a bad value. */
function scaleOutFromEnv(env: NodeJS.ProcessEnv, host: string, port: number): ServiceConfig['scaleOut'] {
  const mode = env[ENV.scaleOut] ?? 'none';
  if (mode === 'none' || mode === '') return undefined;
  if (mode !== 'partitions') throw invalid(ENV.scaleOut, 'must be "partitions" or "none"');
  const url = env[ENV.advertisedUrl] ?? `http://${host}:${port}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(ENV.advertisedUrl, 'must be an http:// or https:// URL');
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.search !== '' || parsed.hash !== '') throw invalid(ENV.advertisedUrl, 'must be an http:// or https:// URL without query');
  const replicaId = env[ENV.replicaId] ?? `${hostname()}:${process.pid}`;
  if (!/^[\w.:@-]{1,128}$/.test(replicaId)) throw invalid(ENV.replicaId, 'must be 1 to 128 letters, digits and . : @ _ -');
  return { replicaId, url: parsed.href.replace(/\/$/, '') };
}

function invalid(variable: string, expectation: string): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${expectation}`, { category: 'validation', details: { variable } });
}

/** Reads and validates a service's configuration; a bad value is a typed error naming the variable. */
export function serviceConfigFromEnv(service: ServiceDescriptor, env: NodeJS.ProcessEnv = process.env): ServiceConfig {
  const rawPort = env[ENV.port] ?? String(service.port);
  const port = Number(rawPort);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw invalid(ENV.port, 'must be a TCP port number');
  const url = env[ENV.databaseUrl] ?? `postgres://${service.dbRole}@127.0.0.1:5432/${DATABASE_NAME}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(ENV.databaseUrl, 'must be a postgres:// URL');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') throw invalid(ENV.databaseUrl, 'must be a postgres:// URL');
  const namespace = env[ENV.topicNamespace];
  if (namespace !== undefined && !/^[a-z0-9][a-z0-9-]{0,62}$/.test(namespace)) {
    throw invalid(ENV.topicNamespace, 'must be lower-case letters, digits and dashes');
  }
  const deadline = Number(env[ENV.kafkaConnectDeadlineMs] ?? 60_000);
  if (!Number.isInteger(deadline) || deadline < 0) throw invalid(ENV.kafkaConnectDeadlineMs, 'must be a whole number of milliseconds');
  const snapshotInterval = Number(env[ENV.foldSnapshotIntervalMs] ?? 30_000);
  if (!Number.isSafeInteger(snapshotInterval) || snapshotInterval < 0) throw invalid(ENV.foldSnapshotIntervalMs, 'must be a whole number of milliseconds');
  const host = env[ENV.host] ?? '127.0.0.1';
  const scaleOut = scaleOutFromEnv(env, host, port);
  return {
    service,
    kafkaConnectDeadlineMs: deadline,
    foldSnapshotIntervalMs: snapshotInterval,
    host,
    port,
    ...(scaleOut && { scaleOut }),
    kafka: kafkaConfigFromEnv(`gatehouse-${service.name}`, env),
    topicNamespace: namespace || undefined,
    database: { url, schema: service.schema },
  };
}
