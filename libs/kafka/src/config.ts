import { GatehouseError } from '@gatehouse/contracts';

/** How to reach the cluster. Credentials arrive with the SASL issue; none live in code. */
export interface KafkaConnectionConfig {
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** Connection timeout per broker, ms. */
  readonly connectionTimeoutMs?: number;
}

/** Environment variable naming the bootstrap brokers, comma separated. */
export const KAFKA_BROKERS_ENV = 'GATEHOUSE_KAFKA_BROKERS';
export const DEFAULT_KAFKA_BROKERS = '127.0.0.1:9092';

/** Reads the connection from the environment; a malformed broker list is a typed error. */
export function kafkaConfigFromEnv(clientId: string, env: NodeJS.ProcessEnv = process.env): KafkaConnectionConfig {
  const raw = env[KAFKA_BROKERS_ENV] ?? DEFAULT_KAFKA_BROKERS;
  const brokers = raw
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
  const invalid = brokers.filter((b) => !/^[A-Za-z0-9.-]+:\d{1,5}$/.test(b));
  if (brokers.length === 0 || invalid.length > 0) {
    throw new GatehouseError('KAFKA.CONFIG_INVALID', `${KAFKA_BROKERS_ENV} must be a comma-separated list of host:port`, {
      category: 'validation',
      details: { variable: KAFKA_BROKERS_ENV },
    });
  }
  return { brokers, clientId };
}
