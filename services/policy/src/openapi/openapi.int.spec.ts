import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { HealthReportSchema } from '@gatehouse/service-runtime';
import {
  createTestDatabase,
  documentedBody,
  documentedRoutes,
  type HttpAnswer,
  openApi31Problems,
  servedRoutes,
  type TestDatabase,
  undocumentedAnswers,
} from '@gatehouse/service-runtime/testing';
import { type z } from 'zod';
import { bearer, type PolicyApp, startPolicyApp, testOperator } from '../testing/policy-app.js';
import { POLICY_OPENAPI_DOCUMENT as DOCUMENT } from './openapi-document.js';
import {
  GatekeeperDecisionSchema,
  GatekeeperExplanationSchema,
  RecordedDecisionSchema,
  VersionDiffSchema,
  VersionListSchema,
  VersionViewSchema,
} from './policy-answers.js';

// A publisher that also records decisions for one tenant: every documented route answers it.
const operator = testOperator('user:ops', { publish: true, role: 'support', tenants: ['acme'] });
let database: TestDatabase;
let app: PolicyApp;

beforeAll(async () => {
  database = await createTestDatabase();
  const namespace = await provisionedNamespace(testKafka('policy-openapi-spec'));
  app = await startPolicyApp({ namespace, databaseUrl: database.url, schema: 'policy_openapi', operators: [operator] });
});

afterAll(async () => {
  await app.close();
  await database.drop();
});

const bundle = (max: number) => ({
  policySetId: 'refunds',
  policies: [
    { id: 'refund-limit', version: '1', priority: 10, match: { tools: ['payments.refund'] }, rules: { denyWhen: `input.amount > ${max}` } },
    {
      id: 'refunds-by-support',
      version: '1',
      priority: 0,
      match: { tools: ['payments.refund'] },
      rules: { allowWhen: "identity.actor.role == 'support'" },
    },
  ],
});

const call = {
  identity: { tenant: 'acme', actor: { id: 'user:alice', role: 'support' } },
  call: { tool: 'payments.refund' },
  input: { amount: 120 },
};

const SET = '/v1/policy-sets/{policySetId}';

/** The body of a documented success of `operation`, parsed by the schema its response was generated from. */
const answered = async <S extends z.ZodType>(operation: string, answer: Promise<HttpAnswer>, schema: S): Promise<z.infer<S>> =>
  documentedBody(DOCUMENT, operation, await answer, schema);

describe('the policy OpenAPI document', () => {
  it('is served without a credential and is a valid OpenAPI 3.1 document', async () => {
    const served = await app.get('/openapi.json');
    expect(served.status).toBe(200);
    expect(await openApi31Problems(served.body)).toEqual([]);
    expect(served.body).toEqual(JSON.parse(JSON.stringify(DOCUMENT)));
  });

  it('describes exactly the routes the service serves', () => {
    expect(documentedRoutes(DOCUMENT)).toEqual(servedRoutes(app.app));
  });

  it('lists every status and code a route answers an anonymous caller, an empty body and an unreadable one', async () => {
    // and every secured route refuses the anonymous caller with 401
    const options = { pathValues: { policySetId: 'refunds', revision: '1' }, credentials: { operator: bearer(operator) } };
    const answers = await undocumentedAnswers(app.baseUrl, DOCUMENT, options);
    expect(answers).toEqual([]);
  });

  it('answers every operation in its documented shape', async () => {
    const auth = bearer(operator);
    const publish = `POST ${SET}/versions`;
    const first = await answered(publish, app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, auth), VersionViewSchema);
    expect(first.revision).toBe(1);
    const document = JSON.stringify(bundle(250));
    expect((await answered(publish, app.post('/v1/policy-sets/refunds/versions', { document }, auth), VersionViewSchema)).revision).toBe(2);
    expect((await answered('GET /v1/policy-sets', app.get('/v1/policy-sets', auth), VersionListSchema)).items).toHaveLength(1);
    const versions = await answered(`GET ${SET}/versions`, app.get('/v1/policy-sets/refunds/versions', auth), VersionListSchema);
    expect(versions.items).toHaveLength(2);
    const getVersion = `GET ${SET}/versions/{revision}`;
    const version = await answered(getVersion, app.get('/v1/policy-sets/refunds/versions/2', auth), VersionViewSchema);
    expect(version.bundle?.policies).toHaveLength(2);
    const diff = await answered(`GET ${SET}/diff`, app.get('/v1/policy-sets/refunds/diff?from=1&to=2', auth), VersionDiffSchema);
    expect(diff.changes.length).toBeGreaterThan(0);
    const simulate = `POST ${SET}/simulate`;
    const simulated = await answered(simulate, app.post('/v1/policy-sets/refunds/simulate', call, auth), GatekeeperDecisionSchema);
    expect(simulated.effect).toBe('allow');
    const explain = `POST ${SET}/explain`;
    const explained = await answered(explain, app.post('/v1/policy-sets/refunds/explain', call, auth), GatekeeperExplanationSchema);
    expect(explained.policies).toHaveLength(2);
    const inAuditMode = { ...call, input: { amount: 900 }, mode: 'audit' };
    const audited = await answered(simulate, app.post('/v1/policy-sets/refunds/simulate', inAuditMode, auth), GatekeeperDecisionSchema);
    expect(audited.wouldHave?.effect).toBe('deny');
    const evaluate = `POST ${SET}/evaluate`;
    const recorded = await answered(evaluate, app.post('/v1/policy-sets/refunds/evaluate', call, auth), RecordedDecisionSchema);
    expect(recorded.recordedAs).toEqual({ tenant: 'acme', actor: { id: 'user:ops', role: 'support', kind: 'human' } });
    expect((await answered('GET /health', app.get('/health'), HealthReportSchema)).status).toBe('ok');
  });

  it('refuses a bundle that fails the gatekeeper schema with a documented 422 naming the path, never the value', async () => {
    const invalid = { ...bundle(1), policies: [{ id: 'secret-value-42', priority: 'high' }] };
    const answer = await app.post('/v1/policy-sets/refunds/versions', { bundle: invalid }, bearer(operator));
    expect(answer.status).toBe(422);
    expect(Object.keys(DOCUMENT.paths['/v1/policy-sets/{policySetId}/versions']?.post?.responses ?? {})).toContain('422');
    expect(answer.body).toMatchObject({ code: 'GATEKEEPER.BUNDLE_INVALID', retryable: false });
    expect(answer.text).not.toContain('high');
  });
});
