import 'reflect-metadata';
import { createHash, randomUUID } from 'node:crypto';
import { type INestApplication } from '@nestjs/common';
import { type Keyring, type SigningKey } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { createServiceApp, serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
import { type HttpClient, httpClient, listenOnLoopback } from '@gatehouse/service-runtime/testing';
import { PolicyModule } from '../app.module.js';
import { type PolicyEngine } from '../engine/policy-engine.js';
import { parseOperators } from '../policy-config.js';
import { POLICY_ENGINE } from '../tokens.js';

/** An operator of a test, with the API key it authenticates with. */
export interface TestOperator {
  readonly id: string;
  readonly key: string;
  readonly policySets: '*' | readonly string[];
  readonly publish: boolean;
  /** Default `policy-admin` for a publisher, `policy-reader` otherwise. */
  readonly role?: string;
  /** The tenants it may record decisions for (none: read-only). */
  readonly tenants?: readonly string[];
  readonly agent?: string;
  readonly kind?: 'human' | 'service' | 'agent';
}

export function testOperator(id: string, scope: Partial<Omit<TestOperator, 'id' | 'key'>> = {}): TestOperator {
  return { ...scope, id, key: `pk_${randomUUID()}`, policySets: scope.policySets ?? '*', publish: scope.publish ?? false };
}

export function operatorsJson(operators: readonly TestOperator[]): string {
  return JSON.stringify(
    operators.map((o) => ({
      id: o.id,
      role: o.role ?? (o.publish ? 'policy-admin' : 'policy-reader'),
      apiKeySha256: createHash('sha256').update(o.key).digest('hex'),
      policySets: o.policySets,
      publish: o.publish,
      ...(o.tenants && { tenants: o.tenants }),
      ...(o.agent && { agent: o.agent }),
      ...(o.kind && { kind: o.kind }),
    })),
  );
}

export const bearer = (operator: Pick<TestOperator, 'key'>) => ({ authorization: `Bearer ${operator.key}` });

export interface PolicyAppOptions {
  readonly namespace: string;
  readonly databaseUrl: string;
  readonly schema: string;
  readonly operators: readonly TestOperator[];
  readonly signingKey?: SigningKey;
  readonly keyring?: Keyring;
  /** Start the Kafka request/reply evaluator (default false: it joins a consumer group, which takes seconds). */
  readonly kafkaEvaluator?: boolean;
}

/** A policy service booted in-process on a random loopback port, spoken to over real HTTP. */
export interface PolicyApp extends HttpClient {
  readonly app: INestApplication;
  readonly engine: PolicyEngine;
  close(): Promise<void>;
}

export async function startPolicyApp(options: PolicyAppOptions): Promise<PolicyApp> {
  const base = serviceConfigFromEnv(SERVICES['policy'], { ...process.env, GATEHOUSE_TOPIC_NAMESPACE: options.namespace, GATEHOUSE_DATABASE_URL: options.databaseUrl });
  const config = { ...base, port: 0, database: { ...base.database, schema: options.schema } };
  const module = PolicyModule.forRoot(config, {
    operators: parseOperators(operatorsJson(options.operators)),
    signingKey: options.signingKey ?? TEST_KEYS.policy,
    keyring: options.keyring ?? TEST_KEYRING,
  }, { kafkaEvaluator: options.kafkaEvaluator ?? false });
  const app = await createServiceApp(module, { logger: ['error'] });
  const client = httpClient(await listenOnLoopback(app));
  return { ...client, app, engine: app.get<PolicyEngine>(POLICY_ENGINE), close: () => app.close() };
}
