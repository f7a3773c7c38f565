import 'reflect-metadata';
import { createHash, randomUUID } from 'node:crypto';
import { type INestApplication } from '@nestjs/common';
import { createServiceApp, serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
import { freePort, type HttpClient, httpClient, listenOnLoopback } from '@gatehouse/service-runtime/testing';
import { ApprovalModule } from '../app.module.js';
import { type ApprovalOptions, parseReviewers } from '../approval-config.js';
import { type ApprovalEngine } from '../engine/approval-engine.js';
import { APPROVAL_ENGINE } from '../tokens.js';
import { type Keyring, type SigningKey } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';

export type { HttpAnswer } from '@gatehouse/service-runtime/testing';

/** A reviewer of a test, with the API key it authenticates with. */
export interface TestReviewer {
  readonly id: string;
  readonly role: string;
  readonly key: string;
  readonly tenants: '*' | readonly string[];
  readonly connectors: '*' | readonly string[];
}

/** A reviewer with a fresh random API key. */
export function testReviewer(id: string, scope: Partial<Pick<TestReviewer, 'tenants' | 'connectors' | 'role'>> = {}): TestReviewer {
  return { id, role: scope.role ?? 'approver', key: `rk_${randomUUID()}`, tenants: scope.tenants ?? '*', connectors: scope.connectors ?? '*' };
}

/** The GATEHOUSE_APPROVAL_REVIEWERS value for `reviewers` (keys as sha-256 digests). */
export function reviewersJson(reviewers: readonly TestReviewer[]): string {
  return JSON.stringify(
    reviewers.map((r) => ({ id: r.id, role: r.role, apiKeySha256: createHash('sha256').update(r.key).digest('hex'), tenants: r.tenants, connectors: r.connectors })),
  );
}

export const bearer = (reviewer: Pick<TestReviewer, 'key'>) => ({ authorization: `Bearer ${reviewer.key}` });

export interface ApprovalAppOptions {
  readonly namespace: string;
  readonly databaseUrl: string;
  /** The projection's schema (a schema per test keeps tests apart inside one database). */
  readonly schema: string;
  readonly reviewers: readonly TestReviewer[];
  readonly jwt?: ApprovalOptions['jwt'];
  /** Default: the process's test approval key, and the keyring of all test keys. */
  readonly signingKey?: SigningKey;
  readonly keyring?: Keyring;
  readonly decisionDeadlineMs?: number;
  readonly expirySweepMs?: number;
  /** How long the fold keeps a settled approval, ms (default the service's: 7 days). */
  readonly retainMs?: number;
  /** A scaled-out replica (GATEHOUSE_SCALE_OUT=partitions) of this name: it folds only the partitions its group gives it. */
  readonly replica?: string;
  /** Reviewer webhooks (none by default). */
  readonly webhooks?: ApprovalOptions['webhooks'];
}

/** An approval service booted in-process on a random loopback port, spoken to over real HTTP. */
export interface ApprovalApp extends HttpClient {
  readonly app: INestApplication;
  readonly engine: ApprovalEngine;
  close(): Promise<void>;
}

export async function startApprovalApp(options: ApprovalAppOptions): Promise<ApprovalApp> {
  // A replica must know its port before it starts: it is the address other replicas forward to.
  const port = options.replica === undefined ? 0 : await freePort();
  const base = serviceConfigFromEnv(SERVICES['approval'], {
    ...process.env,
    GATEHOUSE_TOPIC_NAMESPACE: options.namespace,
    GATEHOUSE_DATABASE_URL: options.databaseUrl,
    ...(options.replica !== undefined && { GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_REPLICA_ID: options.replica, GATEHOUSE_PORT: String(port) }),
  });
  const config = { ...base, port, database: { ...base.database, schema: options.schema } };
  const approvalOptions: ApprovalOptions = {
    reviewers: parseReviewers(reviewersJson(options.reviewers)),
    signingKey: options.signingKey ?? TEST_KEYS.approval,
    keyring: options.keyring ?? TEST_KEYRING,
    ...(options.jwt && { jwt: options.jwt }),
    decisionDeadlineMs: options.decisionDeadlineMs ?? 5_000,
    expirySweepMs: options.expirySweepMs ?? 200,
    grantTtlMs: 15 * 60 * 1000,
    ...(options.retainMs !== undefined && { retainMs: options.retainMs }),
    ...(options.webhooks && { webhooks: options.webhooks }),
  };
  const app = await createServiceApp(ApprovalModule.forRoot(config, approvalOptions), { logger: ['error'] });
  const client = httpClient(await listenOnLoopback(app, port));
  return { ...client, app, engine: app.get<ApprovalEngine>(APPROVAL_ENGINE), close: () => app.close() };
}
