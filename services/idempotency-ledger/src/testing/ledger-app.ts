import 'reflect-metadata';
import { type INestApplication } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import { type Keyring, type SigningKey } from '@gatehouse/contracts';
import { ledgerKeyOf } from '@gatehouse/ledger';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { createServiceApp, serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
import { freePort, type HttpClient, httpClient, listenOnLoopback } from '@gatehouse/service-runtime/testing';

export type { HttpAnswer } from '@gatehouse/service-runtime/testing';
import { LedgerModule } from '../app.module.js';
import { DEFAULT_CHECKPOINT_INTERVAL_MS } from '@gatehouse/ledger-projection';
import { type LedgerEngine } from '../engine/ledger-engine.js';
import { parseLedgerAgents } from '../auth/agent-auth.js';
import { DEFAULT_MAX_BUDGETS, DEFAULT_MAX_PENDING_KEYS, LEDGER_ENV, type LedgerOptions, parseOperatorTokens } from '../ledger-config.js';
import { LEDGER_ENGINE } from '../tokens.js';

/** An agent of the ledger for a test: a fresh API key, the list entry configuring it, the header it sends. */
export interface TestLedgerAgent {
  readonly id: string;
  readonly tenants: readonly string[];
  readonly apiKey: string;
  readonly headers: { readonly authorization: string };
  /** Its entry of GATEHOUSE_LEDGER_AGENTS (only the key's digest). */
  readonly entry: { readonly id: string; readonly apiKeySha256: string; readonly tenants: readonly string[] };
}

/** A fresh agent bound to `tenants`. */
export function testLedgerAgent(tenants: readonly string[] = ['acme'], id = `agent:${randomUUID().slice(0, 8)}`): TestLedgerAgent {
  const apiKey = `lk_${randomUUID()}`;
  const apiKeySha256 = createHash('sha256').update(apiKey).digest('hex');
  return { id, tenants, apiKey, headers: { authorization: `Bearer ${apiKey}` }, entry: { id, apiKeySha256, tenants } };
}

export interface LedgerAppOptions {
  readonly namespace: string;
  readonly databaseUrl: string;
  /** The projection's schema (a schema per test keeps tests apart inside one database). */
  readonly schema: string;
  /** `id:role:token,...` as in GATEHOUSE_LEDGER_OPERATOR_TOKENS. */
  readonly operatorTokens?: string;
  readonly decisionDeadlineMs?: number;
  /** Retention of completed keys and its sweep interval, ms (none by default). */
  readonly retainCompletedMs?: number;
  readonly expirySweepMs?: number;
  /** Default: the process's test ledger key, and the keyring of all test keys. */
  readonly signingKey?: SigningKey;
  readonly keyring?: Keyring;
  /** The agents it knows; the first is who `post` and `get` speak as. Default: one agent of tenant `acme`. */
  readonly agents?: readonly TestLedgerAgent[];
  readonly maxPendingKeys?: number;
  readonly maxBudgets?: number;
  /** Time between two checkpoints of the state into the log, ms (default: the service's, one hour; 0: none). */
  readonly checkpointIntervalMs?: number;
  /** A scaled-out replica (GATEHOUSE_SCALE_OUT=partitions) of this name: it folds only the partitions its group gives it. */
  readonly replica?: string;
}

/**
 * A ledger service booted in-process on a random port, spoken to over real HTTP: `post` and `get`
 * as its first agent (a request's own `authorization` header wins), `anonymous` without credentials.
 */
export interface LedgerApp extends HttpClient {
  readonly app: INestApplication;
  readonly engine: LedgerEngine;
  readonly agent: TestLedgerAgent;
  readonly anonymous: HttpClient;
  /** The key the ledger stores for `clientKey` of `tenant` (default: the first agent's first tenant). */
  stored(clientKey: string, tenant?: string): string;
  close(): Promise<void>;
}

/** Boots the ledger service's Nest module against `namespace` and the given database/schema. */
export async function startLedgerApp(options: LedgerAppOptions): Promise<LedgerApp> {
  // A replica must know its port before it starts: it is the address other replicas forward to.
  const port = options.replica === undefined ? 0 : await freePort();
  const base = serviceConfigFromEnv(SERVICES['idempotency-ledger'], {
    ...process.env,
    GATEHOUSE_TOPIC_NAMESPACE: options.namespace,
    GATEHOUSE_DATABASE_URL: options.databaseUrl,
    ...(options.replica !== undefined && { GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_REPLICA_ID: options.replica, GATEHOUSE_PORT: String(port) }),
  });
  const config = { ...base, port, database: { ...base.database, schema: options.schema } };
  const agents = options.agents ?? [testLedgerAgent(['acme'], 'agent:test')];
  const [agent] = agents;
  if (!agent) throw new TypeError('startLedgerApp: at least one agent');
  const ledgerOptions: LedgerOptions = {
    operators: parseOperatorTokens(options.operatorTokens),
    agents: parseLedgerAgents(JSON.stringify(agents.map((a) => a.entry)), LEDGER_ENV.agents),
    maxPendingKeys: options.maxPendingKeys ?? DEFAULT_MAX_PENDING_KEYS,
    maxBudgets: options.maxBudgets ?? DEFAULT_MAX_BUDGETS,
    decisionDeadlineMs: options.decisionDeadlineMs ?? 5_000,
    checkpointIntervalMs: options.checkpointIntervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS,
    ...(options.retainCompletedMs === undefined ? {} : { retainCompletedMs: options.retainCompletedMs, expirySweepMs: options.expirySweepMs ?? 200 }),
    signingKey: options.signingKey ?? TEST_KEYS.ledger,
    keyring: options.keyring ?? TEST_KEYRING,
  };
  const app = await createServiceApp(LedgerModule.forRoot(config, ledgerOptions), { logger: ['error'] });
  const anonymous = httpClient(await listenOnLoopback(app, port));
  const engine = app.get<LedgerEngine>(LEDGER_ENGINE);
  return {
    baseUrl: anonymous.baseUrl,
    post: (path, body, headers = {}) => anonymous.post(path, body, { ...agent.headers, ...headers }),
    get: (path, headers = {}) => anonymous.get(path, { ...agent.headers, ...headers }),
    app,
    engine,
    agent,
    anonymous,
    stored: (clientKey, tenant = agent.tenants[0] ?? '') => ledgerKeyOf(tenant, clientKey),
    close: () => app.close(),
  };
}
