import { type Kafka as KafkaClient, type LogEntry, type SASLOptions } from 'kafkajs';
import { Kafka, logLevel } from './kafkajs.js';
import { type KafkaConnectionConfig } from './config.js';
import { rememberClientPrincipal } from './groups.js';

/** A structured log line from the Kafka client; never carries record values. */
export type KafkaLogSink = (level: 'error' | 'warn' | 'info' | 'debug', message: string, extra: Record<string, unknown>) => void;

const defaultSink: KafkaLogSink = (level, message, extra) => {
  if (level === 'error' || level === 'warn') {
    process.stderr.write(`${JSON.stringify({ level, component: 'kafka', message, ...extra })}\n`);
  }
};

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/**
 * Builds the kafkajs client: quiet by default, bounded retries, logs routed to `sink`. With
 * `config.sasl` it authenticates (SASL over plain TCP; the local broker listens on loopback only).
 * The client remembers its principal, so the groups it joins are its own (`kafkaGroupId`).
 */
export function createKafkaClient(config: KafkaConnectionConfig, sink: KafkaLogSink = defaultSink): KafkaClient {
  const sasl = config.sasl;
  const kafka = new Kafka({
    clientId: config.clientId,
    brokers: [...config.brokers],
    ...(sasl ? { sasl: { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password } as SASLOptions, ssl: false } : {}),
    connectionTimeout: config.connectionTimeoutMs ?? 3_000,
    retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 5_000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, label, log }: LogEntry) => {
        const { message, timestamp: _t, logger: _l, ...extra } = log as { message: string; timestamp?: string; logger?: string; error?: unknown };
        // Bounded retries are deliberate: a caller must learn of a failed append within a
        // deadline and fail closed, rather than block forever. The warning says nothing new.
        if (message.startsWith('Limiting retries for the idempotent producer')) return;
        // A consumer group rebalancing (a replica joined or left) is how scale-out works, not a
        // fault: kafkajs reports each heartbeat it answers as an error and rejoins by itself.
        const rebalancing = String(extra.error ?? '').startsWith('The group is rebalancing') || message.startsWith('The group is rebalancing');
        sink(rebalancing ? 'debug' : (LEVELS[level] ?? 'info'), `${label} ${message}`, extra);
      },
  });
  rememberClientPrincipal(kafka, config);
  return kafka;
}
