import { readFileSync } from 'node:fs';
import { GatehouseError } from '@gatehouse/contracts';

/** SASL mechanisms a gatehouse client may use (kafkajs names). */
export const KAFKA_SASL_MECHANISMS = ['scram-sha-512', 'scram-sha-256', 'plain'] as const;
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

/**
 * How a client authenticates. `password` is not enumerable: JSON.stringify, util.inspect and
 * spread copies of a config never carry it, so a logged config cannot leak it.
 */
export interface KafkaSaslConfig {
  readonly mechanism: KafkaSaslMechanism;
  readonly username: string;
  readonly password: string;
}

/** How to reach the cluster, and as whom. Credentials come from configuration, never from code. */
export interface KafkaConnectionConfig {
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** Connection timeout per broker, ms. */
  readonly connectionTimeoutMs?: number;
  /** SASL credentials; absent = no authentication (a broker with SASL listeners refuses the client). */
  readonly sasl?: KafkaSaslConfig;
}

/** Environment variable naming the bootstrap brokers, comma separated. */
export const KAFKA_BROKERS_ENV = 'GATEHOUSE_KAFKA_BROKERS';
/** `scram-sha-512`, `scram-sha-256` or `plain`; unset or empty = no SASL. */
export const KAFKA_SASL_MECHANISM_ENV = 'GATEHOUSE_KAFKA_SASL_MECHANISM';
/** The SASL user name (the Kafka principal is `User:<name>`). */
export const KAFKA_USERNAME_ENV = 'GATEHOUSE_KAFKA_USERNAME';
/** A file holding the password (preferred: nothing secret in the environment); one trailing newline is ignored. */
export const KAFKA_PASSWORD_FILE_ENV = 'GATEHOUSE_KAFKA_PASSWORD_FILE';
/** The password itself, when no password file is named. */
export const KAFKA_PASSWORD_ENV = 'GATEHOUSE_KAFKA_PASSWORD';
export const DEFAULT_KAFKA_BROKERS = '127.0.0.1:9092';

function invalid(variable: string, expectation: string, cause?: unknown): GatehouseError {
  // The message names the variable and what it must be, never its value (it may be a secret).
  return new GatehouseError('KAFKA.CONFIG_INVALID', `${variable} ${expectation}`, {
    category: 'validation',
    details: { variable },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A SASL config whose password is not enumerable (see `KafkaSaslConfig`). */
export function kafkaSasl(mechanism: KafkaSaslMechanism, username: string, password: string): KafkaSaslConfig {
  const sasl = { mechanism, username } as KafkaSaslConfig;
  Object.defineProperty(sasl, 'password', { value: password, enumerable: false });
  return Object.freeze(sasl);
}

/** Reads the SASL settings; undefined when no mechanism is configured. Bad or half settings are typed errors. */
export function kafkaSaslFromEnv(env: NodeJS.ProcessEnv = process.env): KafkaSaslConfig | undefined {
  const mechanism = env[KAFKA_SASL_MECHANISM_ENV]?.trim().toLowerCase() ?? '';
  const username = env[KAFKA_USERNAME_ENV] ?? '';
  const passwordFile = env[KAFKA_PASSWORD_FILE_ENV] ?? '';
  const inlinePassword = env[KAFKA_PASSWORD_ENV] ?? '';
  if (mechanism === '') {
    // Credentials without a mechanism are a half-done configuration: refuse rather than connect unauthenticated.
    for (const [variable, value] of [
      [KAFKA_USERNAME_ENV, username],
      [KAFKA_PASSWORD_FILE_ENV, passwordFile],
      [KAFKA_PASSWORD_ENV, inlinePassword],
    ] as const) {
      if (value !== '') throw invalid(KAFKA_SASL_MECHANISM_ENV, `must be set (${KAFKA_SASL_MECHANISMS.join(', ')}) when ${variable} is`);
    }
    return undefined;
  }
  if (!(KAFKA_SASL_MECHANISMS as readonly string[]).includes(mechanism)) {
    throw invalid(KAFKA_SASL_MECHANISM_ENV, `must be one of ${KAFKA_SASL_MECHANISMS.join(', ')}`);
  }
  if (username.trim() === '' || username !== username.trim()) {
    throw invalid(KAFKA_USERNAME_ENV, `must name the SASL user when ${KAFKA_SASL_MECHANISM_ENV} is set`);
  }
  let password: string;
  if (passwordFile !== '') {
    try {
      password = readFileSync(passwordFile, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
      throw invalid(KAFKA_PASSWORD_FILE_ENV, `must name a readable file (${code})`);
    }
    if (password === '') throw invalid(KAFKA_PASSWORD_FILE_ENV, 'names an empty file');
  } else if (inlinePassword !== '') {
    password = inlinePassword;
  } else {
    throw invalid(KAFKA_PASSWORD_FILE_ENV, `or ${KAFKA_PASSWORD_ENV} must provide the password when ${KAFKA_SASL_MECHANISM_ENV} is set`);
  }
  return kafkaSasl(mechanism as KafkaSaslMechanism, username, password);
}

/** Reads the connection from the environment; a malformed broker list or SASL setting is a typed error. */
export function kafkaConfigFromEnv(clientId: string, env: NodeJS.ProcessEnv = process.env): KafkaConnectionConfig {
  const raw = env[KAFKA_BROKERS_ENV] ?? DEFAULT_KAFKA_BROKERS;
  const brokers = raw
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
  const invalidBrokers = brokers.filter((b) => !/^[A-Za-z0-9.-]+:\d{1,5}$/.test(b));
  if (brokers.length === 0 || invalidBrokers.length > 0) {
    throw invalid(KAFKA_BROKERS_ENV, 'must be a comma-separated list of host:port');
  }
  const sasl = kafkaSaslFromEnv(env);
  return sasl ? { brokers, clientId, sasl } : { brokers, clientId };
}
