import 'reflect-metadata';
import { type INestApplication } from '@nestjs/common';
import { allowed, apiKeyDigest, createServiceApp, serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
import { freePort, type HttpClient, httpClient, listenOnLoopback } from '@gatehouse/service-runtime/testing';
import { AuditExportModule } from '../app.module.js';
import { type AuditRuntime } from '../audit-runtime.js';
import { type ExportOptions } from '../export-config.js';
import { type AuditReader } from '../http/reader-auth.js';
import { type ExportTelemetry } from '../telemetry/export-telemetry.js';
import { AUDIT_RUNTIME } from '../tokens.js';

export interface AuditAppOptions {
  readonly namespace: string;
  readonly databaseUrl: string;
  readonly schema: string;
  readonly export: ExportOptions;
  readonly telemetry?: ExportTelemetry;
  /** A scaled-out replica (GATEHOUSE_SCALE_OUT=partitions) of this name: it projects and exports only the partitions its groups give it. */
  readonly replica?: string;
}

/** The API key of the reader every test app knows (all tenants), unless the test configures its own readers. */
export const TEST_READER_KEY = 'rk_test_reader_all_tenants';
export const TEST_READER: AuditReader = { id: 'test:siem', role: 'siem', tenants: allowed('*'), keyDigest: apiKeyDigest(TEST_READER_KEY) };

/** The service in-process, spoken to over real HTTP; `get` sends TEST_READER_KEY unless given an `authorization` header. */
export interface AuditApp extends HttpClient {
  readonly app: INestApplication;
  readonly runtime: AuditRuntime;
  close(): Promise<void>;
}

/** Boots the audit-export module in-process on a random port against `namespace` and a database. */
export async function startAuditApp(options: AuditAppOptions): Promise<AuditApp> {
  const port = options.replica === undefined ? 0 : await freePort();
  const base = serviceConfigFromEnv(SERVICES['audit-export'], {
    ...process.env,
    GATEHOUSE_TOPIC_NAMESPACE: options.namespace,
    GATEHOUSE_DATABASE_URL: options.databaseUrl,
    ...(options.replica !== undefined && { GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_REPLICA_ID: options.replica, GATEHOUSE_PORT: String(port) }),
  });
  const config = { ...base, port, database: { ...base.database, schema: options.schema } };
  const exportOptions = { ...options.export, readers: options.export.readers ?? [TEST_READER] };
  const app = await createServiceApp(AuditExportModule.forRoot(config, exportOptions, options.telemetry), { logger: ['error'] });
  const client = httpClient(await listenOnLoopback(app, port));
  // As a process is started (health 200): once its projection is bound to the audit log, or refused.
  await app.get<AuditRuntime>(AUDIT_RUNTIME).bound();
  const get: typeof client.get = (path, headers = {}) => client.get(path, { authorization: `Bearer ${TEST_READER_KEY}`, ...headers });
  return { ...client, get, app, runtime: app.get<AuditRuntime>(AUDIT_RUNTIME), close: () => app.close() };
}
