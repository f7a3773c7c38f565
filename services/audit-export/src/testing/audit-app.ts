import 'reflect-metadata';
import { type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
import { AuditExportModule } from '../app.module.js';
import { type AuditRuntime } from '../audit-runtime.js';
import { type ExportOptions } from '../export-config.js';
import { type ExportTelemetry } from '../telemetry/export-telemetry.js';
import { AUDIT_RUNTIME } from '../tokens.js';

export interface AuditAppOptions {
  readonly namespace: string;
  readonly databaseUrl: string;
  readonly schema: string;
  readonly export: ExportOptions;
  readonly telemetry?: ExportTelemetry;
}

export interface HttpAnswer<T = Record<string, unknown>> {
  readonly status: number;
  readonly body: T;
  readonly text: string;
}

export interface AuditApp {
  readonly app: INestApplication;
  readonly runtime: AuditRuntime;
  get<T = Record<string, unknown>>(path: string): Promise<HttpAnswer<T>>;
  post<T = Record<string, unknown>>(path: string, body: unknown): Promise<HttpAnswer<T>>;
  close(): Promise<void>;
}

async function read<T>(response: Response): Promise<HttpAnswer<T>> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, body: body as T, text };
}

/** Boots the audit-export module in-process on a random port against `namespace` and a database. */
export async function startAuditApp(options: AuditAppOptions): Promise<AuditApp> {
  const base = serviceConfigFromEnv(SERVICES['audit-export'], { ...process.env, GATEHOUSE_TOPIC_NAMESPACE: options.namespace, GATEHOUSE_DATABASE_URL: options.databaseUrl });
  const config = { ...base, port: 0, database: { ...base.database, schema: options.schema } };
  const app = await NestFactory.create(AuditExportModule.forRoot(config, options.export, options.telemetry), { logger: ['error'], abortOnError: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    app,
    runtime: app.get<AuditRuntime>(AUDIT_RUNTIME),
    get: async (path) => read(await fetch(`${baseUrl}${path}`)),
    post: async (path, body) => read(await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })),
    close: () => app.close(),
  };
}
