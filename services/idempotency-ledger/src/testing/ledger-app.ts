import 'reflect-metadata';
import { type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type Keyring, type SigningKey } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
import { type HttpClient, httpClient, listenOnLoopback } from '@gatehouse/service-runtime/testing';

export type { HttpAnswer } from '@gatehouse/service-runtime/testing';
import { LedgerModule } from '../app.module.js';
import { type LedgerEngine } from '../engine/ledger-engine.js';
import { type LedgerOptions, parseOperatorTokens } from '../ledger-config.js';
import { LEDGER_ENGINE } from '../tokens.js';

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
}

/** A ledger service booted in-process on a random port, spoken to over real HTTP. */
export interface LedgerApp extends HttpClient {
  readonly app: INestApplication;
  readonly engine: LedgerEngine;
  close(): Promise<void>;
}

/** Boots the ledger service's Nest module against `namespace` and the given database/schema. */
export async function startLedgerApp(options: LedgerAppOptions): Promise<LedgerApp> {
  const base = serviceConfigFromEnv(SERVICES['idempotency-ledger'], {
    ...process.env,
    GATEHOUSE_TOPIC_NAMESPACE: options.namespace,
    GATEHOUSE_DATABASE_URL: options.databaseUrl,
  });
  const config = { ...base, port: 0, database: { ...base.database, schema: options.schema } };
  const ledgerOptions: LedgerOptions = {
    operators: parseOperatorTokens(options.operatorTokens),
    decisionDeadlineMs: options.decisionDeadlineMs ?? 5_000,
    ...(options.retainCompletedMs === undefined ? {} : { retainCompletedMs: options.retainCompletedMs, expirySweepMs: options.expirySweepMs ?? 200 }),
    signingKey: options.signingKey ?? TEST_KEYS.ledger,
    keyring: options.keyring ?? TEST_KEYRING,
  };
  const app = await NestFactory.create(LedgerModule.forRoot(config, ledgerOptions), { logger: ['error'], abortOnError: false });
  const client = httpClient(await listenOnLoopback(app));
  const engine = app.get<LedgerEngine>(LEDGER_ENGINE);
  return { ...client, app, engine, close: () => app.close() };
}
