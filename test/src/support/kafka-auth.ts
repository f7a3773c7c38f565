import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_KAFKA_PRINCIPALS, kafkaConfigFromEnv } from '@gatehouse/kafka';
import { kafkaUserEnv } from '@gatehouse/kafka/testing';

// Kafka principals of the processes the system tests start (the broker authorizes each by its
// ACLs, libs/kafka/src/acls.ts). The test process itself is the super user `admin`.
const SERVICE_PRINCIPALS: Readonly<Record<string, string>> = {
  approval: DEFAULT_KAFKA_PRINCIPALS.approval,
  'idempotency-ledger': DEFAULT_KAFKA_PRINCIPALS.ledger,
  policy: DEFAULT_KAFKA_PRINCIPALS.policy,
  'audit-export': DEFAULT_KAFKA_PRINCIPALS.auditExport,
};

/** The environment that makes the service `name` authenticate as its own principal (empty without SASL). */
export function serviceKafkaEnv(name: string): Record<string, string> {
  const user = SERVICE_PRINCIPALS[name];
  return user ? kafkaUserEnv(user) : {};
}

/** The environment of an agent process (guard library): the least trusted principal, `agent`. */
export function agentKafkaEnv(): Record<string, string> {
  return kafkaUserEnv(DEFAULT_KAFKA_PRINCIPALS.agent);
}

/**
 * kcat arguments that authenticate it like this process: a librdkafka config file (mode 600,
 * in `dir`) passed with -F, so the password is never on a command line. Empty without SASL.
 */
export function kcatAuthArgs(dir: string): string[] {
  const sasl = kafkaConfigFromEnv('kcat').sasl;
  if (!sasl) return [];
  const file = path.join(dir, 'kcat.properties');
  const lines = ['security.protocol=SASL_PLAINTEXT', `sasl.mechanisms=${sasl.mechanism.toUpperCase()}`, `sasl.username=${sasl.username}`, `sasl.password=${sasl.password}`];
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return ['-F', file];
}
