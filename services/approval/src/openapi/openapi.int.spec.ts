import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Validator } from '@seriousme/openapi-schema-validator';
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { HealthController, serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { ApprovalModule } from '../app.module.js';
import { parseReviewers } from '../approval-config.js';
import { type ApprovalApp, bearer, startApprovalApp, testReviewer } from '../testing/approval-app.js';
import { OPENAPI_DOCUMENT } from './openapi-document.js';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';

const reviewer = testReviewer('user:alice');
let database: TestDatabase;
let app: ApprovalApp;

beforeAll(async () => {
  database = await createTestDatabase();
  const namespace = await provisionedNamespace(testKafka('approval-openapi-spec'));
  app = await startApprovalApp({ namespace, databaseUrl: database.url, schema: 'approval_openapi', reviewers: [reviewer] });
});

afterAll(async () => {
  await app.close();
  await database.drop();
});

/** Every route the service's controllers declare, as `METHOD /path` with OpenAPI-style parameters. */
function declaredRoutes(): string[] {
  const config = serviceConfigFromEnv(SERVICES['approval']);
  const controllers = [...(ApprovalModule.forRoot(config, { reviewers: parseReviewers(undefined), signingKey: TEST_KEYS.approval, keyring: TEST_KEYRING, expirySweepMs: 1_000, decisionDeadlineMs: 1_000, grantTtlMs: 60_000 }).controllers ?? []), HealthController];
  const routes: string[] = [];
  for (const controller of controllers) {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    const prototype = controller.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const handler = prototype[name];
      if (name === 'constructor' || typeof handler !== 'function') continue;
      const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (path === undefined || method === undefined) continue;
      const full = `/${[base, path].map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/')}`.replace(/:(\w+)/g, '{$1}');
      routes.push(`${RequestMethod[method]} ${full}`);
    }
  }
  return routes.sort();
}

describe('the OpenAPI document', () => {
  it('is served by the service and is a valid OpenAPI 3.1 document', async () => {
    const served = await app.get('/openapi.json');
    expect(served.status).toBe(200);
    const validator = new Validator();
    const result = await validator.validate(served.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes exactly the routes the service serves', () => {
    const documented = Object.entries(OPENAPI_DOCUMENT.paths)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    expect(declaredRoutes()).toEqual(documented);
  });

  it('answers every documented operation (none is a 404 of the router)', async () => {
    const id = `appr_${'a'.repeat(64)}`;
    for (const [path, item] of Object.entries(OPENAPI_DOCUMENT.paths)) {
      for (const method of Object.keys(item)) {
        if (path === '/v1/approval-events') continue; // a stream: covered by the service spec
        const url = `${app.baseUrl}${path.replace('{approvalId}', id)}`;
        const response = await fetch(url, { method: method.toUpperCase(), headers: { ...bearer(reviewer), 'content-type': 'application/json' }, ...(method === 'post' && { body: '{"verdict":"approve"}' }) });
        const body = response.headers.get('content-type')?.includes('json') ? ((await response.json()) as { code?: string }) : {};
        expect({ path, method, code: body.code }).not.toEqual({ path, method, code: 'HTTP.NOT_FOUND' });
      }
    }
  });
});
