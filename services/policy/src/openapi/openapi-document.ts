import { GatehouseError } from '@gatehouse/contracts';
import { GatekeeperBundleSchema } from '@gatehouse/gatekeeper';
import {
  errorCase,
  type ErrorCase,
  errorResponses,
  jsonBody,
  jsonResponse,
  type OpenApiOperation,
  openApiDocument,
  parametersOf,
  RUNTIME_ERRORS,
  schemaRef,
} from '@gatehouse/service-runtime';
import { z } from 'zod';
import { DecideRequest } from '../decide/policy-decisions.js';
import { type PolicyCode, PolicyError } from '../errors.js';
import { POLICY_SET_ID } from '../http/operator-auth.js';
import { errorResponse } from '../http/policy-exception.filter.js';
import { PublishBody } from '../publish-version/publish-version.http.controller.js';
import { Revision } from '../read-versions/read-versions.http.controller.js';
import {
  GatekeeperDecisionSchema,
  GatekeeperExplanationSchema,
  RecordedDecisionSchema,
  VersionDiffSchema,
  VersionListSchema,
  VersionViewSchema,
} from './policy-answers.js';

// Each error case goes through the service's own mapping (the exception filter's), so the status
// a document gives a code is the status the service answers it with.
const policy = (code: PolicyCode, message?: string): ErrorCase => errorCase(errorResponse(new PolicyError(code, {}, undefined, message)));
const gatekeeper = (code: string, message: string): ErrorCase =>
  errorCase(errorResponse(new GatehouseError(code, message, { category: 'validation' })));
const internal = errorCase(errorResponse(new Error('internal')));

/** What every route may answer: the runtime's refusals and the service's 500. */
const always = [...RUNTIME_ERRORS.logUnbound, internal];
/** Every `/v1/policy-sets` route: an operator's API key, admitted to the set. */
const operator = [policy('POLICY.UNAUTHENTICATED'), policy('POLICY.FORBIDDEN')];
const body = [...RUNTIME_ERRORS.body, policy('POLICY.INVALID_REQUEST', 'invalid field(s), named in details.fields (never their values)')];
const notFound = policy('POLICY.NOT_FOUND');
const badRevision = policy('POLICY.INVALID_REQUEST', 'the revision is not a whole number from 1');
const badRevisions = policy('POLICY.INVALID_REQUEST', 'from and to are required revisions; nothing else');

const setParameter = parametersOf(z.object({ policySetId: z.string().regex(POLICY_SET_ID) }), 'path', {
  policySetId: 'The policy set id.',
});
const revisionParameter = parametersOf(z.object({ revision: Revision }), 'path', { revision: 'A published revision (1, 2, ...).' });

/** One of the decision routes: the same body, decided on the set's newest version or `revision`. */
function decideOperation(operationId: string, summary: string, answer: string, extra: readonly ErrorCase[]): OpenApiOperation {
  return {
    operationId,
    summary,
    parameters: setParameter,
    requestBody: jsonBody(schemaRef('DecideRequest')),
    responses: {
      '200': jsonResponse('The decision', schemaRef(answer)),
      ...errorResponses([...body, ...operator, notFound, ...extra, ...always]),
    },
  };
}

/**
 * The policy service's OpenAPI 3.1 document, served at `GET /openapi.json`: request shapes are the
 * routes' own zod schemas, answers the schemas the OpenAPI spec checks real answers against.
 */
export const POLICY_OPENAPI_DOCUMENT = openApiDocument({
  service: 'policy',
  title: 'gatehouse policy service',
  description:
    'Versioned gatekeeper policy bundles: operators publish a bundle, the service validates it, gives it the next revision, ' +
    'signs it and appends it to `gatehouse.policies.v1`, where every guard picks it up. `simulate` and `explain` decide a ' +
    'call and record nothing; `evaluate` records the decision on the audit topic, made as the authenticated operator in one ' +
    'of its tenants.',
  security: [{ operator: [] }],
  securitySchemes: {
    operator: {
      type: 'http',
      scheme: 'bearer',
      description:
        'An operator API key (`GATEHOUSE_POLICY_OPERATORS` holds its sha-256), admitted to the policy set by its `policySets`; ' +
        'publishing needs `publish: true`.',
    },
  },
  paths: {
    '/v1/policy-sets': {
      get: {
        operationId: 'listPolicySets',
        summary: 'The policy sets this operator may see, each with its newest version (no bundle)',
        responses: {
          '200': jsonResponse('The sets', schemaRef('VersionList')),
          ...errorResponses([policy('POLICY.UNAUTHENTICATED'), ...always]),
        },
      },
    },
    '/v1/policy-sets/{policySetId}/versions': {
      get: {
        operationId: 'listVersions',
        summary: 'Every version of a policy set, oldest first (no bundles)',
        parameters: setParameter,
        responses: { '200': jsonResponse('The versions', schemaRef('VersionList')), ...errorResponses([...operator, notFound, ...always]) },
      },
      post: {
        operationId: 'publishVersion',
        summary: 'Validate, sign and publish a bundle as the next revision (a `publish: true` operator)',
        description:
          'The bundle as YAML or JSON text (`document`) or as an object (`bundle`); either way it must be a `GatekeeperBundle` ' +
          'naming this set, whose expressions every guard can compile, or nothing is published (422). Answered once the policies ' +
          'log has folded it.',
        parameters: setParameter,
        requestBody: jsonBody(schemaRef('PublishVersionRequest')),
        responses: {
          '201': jsonResponse('The published version, with its bundle', schemaRef('VersionView')),
          ...errorResponses([
            ...body,
            ...operator,
            policy('POLICY.NOT_FOUND', 'the URL names no valid policy set id'),
            policy('POLICY.CONFLICT'),
            policy('POLICY.INVALID_BUNDLE', 'the bundle names another policy set than the URL'),
            gatekeeper(
              'GATEKEEPER.BUNDLE_INVALID',
              'the bundle fails the gatekeeper schema (every problem in details.issues, paths and kinds only)',
            ),
            gatekeeper('GATEKEEPER.BUNDLE_UNPARSEABLE', '`document` is neither JSON nor YAML (details.position where known)'),
            gatekeeper('GATEKEEPER.EXPRESSION_SYNTAX', 'an expression no guard could parse (details.policyId, field, position)'),
            gatekeeper('GATEKEEPER.EXPRESSION_LIMIT', 'an expression over the language limits (details.policyId, field)'),
            gatekeeper('GATEKEEPER.EXPRESSION_FORBIDDEN_PATH', 'an expression reads a path no policy may read (details.policyId, field)'),
            policy('POLICY.UNAVAILABLE'),
            ...always,
          ]),
        },
      },
    },
    '/v1/policy-sets/{policySetId}/versions/{revision}': {
      get: {
        operationId: 'getVersion',
        summary: 'One version with its bundle',
        parameters: [...setParameter, ...revisionParameter],
        responses: {
          '200': jsonResponse('The version', schemaRef('VersionView')),
          ...errorResponses([badRevision, ...operator, notFound, ...always]),
        },
      },
    },
    '/v1/policy-sets/{policySetId}/diff': {
      get: {
        operationId: 'diffVersions',
        summary: 'What changed from one version to another, by JSON pointer (policies matched by id)',
        parameters: [
          ...setParameter,
          ...parametersOf(z.strictObject({ from: Revision, to: Revision }), 'query', {
            from: 'The older revision.',
            to: 'The newer revision.',
          }),
        ],
        responses: {
          '200': jsonResponse('The changes', schemaRef('VersionDiff')),
          ...errorResponses([badRevisions, ...operator, notFound, ...always]),
        },
      },
    },
    '/v1/policy-sets/{policySetId}/simulate': {
      post: decideOperation(
        'simulate',
        'What the bundle decides for a call, on the identity the body gives; nothing runs, nothing is recorded',
        'GatekeeperDecision',
        [],
      ),
    },
    '/v1/policy-sets/{policySetId}/explain': {
      post: decideOperation(
        'explain',
        'The decision and, per policy, why it decided, was outranked, fired no rule or did not match; nothing is recorded',
        'GatekeeperExplanation',
        [],
      ),
    },
    '/v1/policy-sets/{policySetId}/evaluate': {
      post: decideOperation(
        'evaluate',
        'The decision, made as the operator in one of its tenants and recorded on the audit topic (an operator with `tenants`)',
        'RecordedDecision',
        [
          policy('POLICY.FORBIDDEN', 'details.reason `read-only` (an operator without tenants) or `foreign-tenant`; nothing is recorded'),
          policy('POLICY.INVALID_REQUEST', 'identity.tenant is required of an operator of several tenants'),
          policy('POLICY.UNAVAILABLE', 'the audit topic could not take the decision: it is not handed out'),
        ],
      ),
    },
    '/v1/policy-status': {
      get: {
        operationId: 'policyStatus',
        summary: "The fold's phase, offsets and counts (no bundle content)",
        security: [],
        responses: { '200': jsonResponse('Status', { type: 'object' }), ...errorResponses(always) },
      },
    },
  },
  requests: {
    PublishVersionRequest: z.union([PublishBody.options[0], z.strictObject({ bundle: GatekeeperBundleSchema })]),
    DecideRequest,
    GatekeeperBundle: GatekeeperBundleSchema,
  },
  responses: {
    VersionView: VersionViewSchema,
    VersionList: VersionListSchema,
    VersionDiff: VersionDiffSchema,
    GatekeeperDecision: GatekeeperDecisionSchema,
    GatekeeperExplanation: GatekeeperExplanationSchema,
    RecordedDecision: RecordedDecisionSchema,
  },
  internal,
});
