import 'reflect-metadata';
import { type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
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
}

export interface HttpAnswer<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
  readonly text: string;
}

/** A ledger service booted in-process on a random port, spoken to over real HTTP. */
export interface LedgerApp {
  readonly app: INestApplication;
  readonly baseUrl: string;
  readonly engine: LedgerEngine;
  post<T = Record<string, unknown>>(path: string, body: unknown, headers?: Record<string, string>): Promise<HttpAnswer<T>>;
  get<T = Record<string, unknown>>(path: string): Promise<HttpAnswer<T>>;
  close(): Promise<void>;
}

async function read<T>(response: Response): Promise<HttpAnswer<T>> {
  const text = await response.text();
  let body: unknown = undefined;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body: body as T, text };
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
  };
  const app = await NestFactory.create(LedgerModule.forRoot(config, ledgerOptions), { logger: ['error'], abortOnError: false });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const engine = app.get<LedgerEngine>(LEDGER_ENGINE);
  return {
    app,
    baseUrl,
    engine,
    post: async (path, body, headers = {}) =>
      read(await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) })),
    get: async (path) => read(await fetch(`${baseUrl}${path}`)),
    close: () => app.close(),
  };
}
