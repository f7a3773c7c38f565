import { randomBytes } from 'node:crypto';
import pg from 'pg';

// One throwaway database per spec file (or benchmark), created and dropped by the superuser.
const adminUrl = process.env['GATEHOUSE_TEST_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  drop(): Promise<void>;
}

/** Creates an empty database (drop it in afterAll). */
export async function createTestDatabase(prefix = 'gh_it'): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
export { freePort, type HttpAnswer, type HttpClient, httpClient, listenOnLoopback, percentile, readAnswer } from './http.js';
export { replaceTopic } from './replace-topic.js';
export { type ColdStartBenchOptions, type ColdStartStatus, type ColdStartWorld, runColdStartBench } from './cold-start-bench.js';
export { documentedRoutes, servedRoutes } from './routes.js';
export { documentedBody, documentsStatus, openApi31Problems, type ProbeOptions, type UndocumentedAnswer, undocumentedAnswers } from './openapi-probe.js';
export { type NodeProcess, type ServiceProcess, type ServiceReplica, type StartOptions, startNodeProcess, startReplica, startServiceProcess, stopProcesses, untilHealthy, untilPartitionsHeld } from './replicas.js';
export { reached, StoredProgress, sumOfEnds, topicEnds } from './progress.js';
export { duplicateIds, ocsfFileIds } from './siem-files.js';
export { positiveIntegerEnv } from './env.js';
