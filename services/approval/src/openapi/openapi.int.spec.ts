import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import {
  createTestDatabase,
  documentedRoutes,
  openApi31Problems,
  servedRoutes,
  type TestDatabase,
  undocumentedAnswers,
} from '@gatehouse/service-runtime/testing';
import { type ApprovalApp, bearer, startApprovalApp, testReviewer } from '../testing/approval-app.js';
import { OPENAPI_DOCUMENT } from './openapi-document.js';

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

describe('the OpenAPI document', () => {
  it('is served without a credential and is a valid OpenAPI 3.1 document', async () => {
    const served = await app.get('/openapi.json');
    expect(served.status).toBe(200);
    expect(await openApi31Problems(served.body)).toEqual([]);
    expect(served.body).toEqual(JSON.parse(JSON.stringify(OPENAPI_DOCUMENT)));
    expect(OPENAPI_DOCUMENT.paths['/openapi.json'].get.security).toEqual([]);
  });

  it('describes exactly the routes the service serves', () => {
    expect(documentedRoutes(OPENAPI_DOCUMENT)).toEqual(servedRoutes(app.app));
  });

  it('lists every status a route answers an anonymous caller, an empty body and an unreadable one', async () => {
    // and every secured route refuses the anonymous caller with 401. Its error responses are the shared Error
    // without the codes narrowed, so the probe checks statuses and bodies, not codes.
    const options = { pathValues: { approvalId: `appr_${'a'.repeat(64)}`, asset: 'app.js' }, credentials: { reviewer: bearer(reviewer) } };
    const answers = await undocumentedAnswers(app.baseUrl, OPENAPI_DOCUMENT, options);
    expect(answers).toEqual([]);
  });

  it('answers every documented operation (none is a 404 of the router)', async () => {
    const id = `appr_${'a'.repeat(64)}`;
    for (const [path, item] of Object.entries(OPENAPI_DOCUMENT.paths)) {
      for (const method of Object.keys(item)) {
        if (path === '/v1/approval-events') continue; // a stream: covered by the service spec
        const url = `${app.baseUrl}${path.replace('{approvalId}', id).replace('{asset}', 'app.js')}`;
        const headers = { ...bearer(reviewer), 'content-type': 'application/json' };
        const body = method === 'post' ? '{"verdict":"approve"}' : undefined;
        const response = await fetch(url, { method: method.toUpperCase(), headers, ...(body !== undefined && { body }) });
        const answer = response.headers.get('content-type')?.includes('json') ? ((await response.json()) as { code?: string }) : {};
        expect({ path, method, code: answer.code }).not.toEqual({ path, method, code: 'HTTP.NOT_FOUND' });
      }
    }
  });
});
