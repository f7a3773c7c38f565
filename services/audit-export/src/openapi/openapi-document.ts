import { GatehouseError } from '@gatehouse/contracts';
import {
  errorCase,
  type ErrorCase,
  errorResponses,
  jsonBody,
  jsonResponse,
  openApiDocument,
  parametersOf,
  RUNTIME_ERRORS,
  schemaRef,
} from '@gatehouse/service-runtime';
import { z } from 'zod';
import { type AuditCode, AuditError } from '../errors.js';
import { DecisionIdParams } from '../get-decision/get-decision.js';
import { errorResponse } from '../http/audit-exception.filter.js';
import { DecisionQuerySchema } from '../query-decisions/query-decisions.js';
import { RunParams } from '../run-timeline/run-timeline.js';
import {
  AuditStatusSchema,
  DecisionPageSchema,
  DecisionViewSchema,
  ExportListSchema,
  RestartAnswerSchema,
  RunTimelineSchema,
  StartPositionSchema,
} from './audit-answers.js';

// Each error case goes through the service's own mapping (the exception filter's), so the status
// a document gives a code is the status the service answers it with.
const audit = (code: AuditCode, message?: string): ErrorCase => errorCase(errorResponse(new AuditError(code, {}, message)));
const internal = errorCase(errorResponse(new Error('internal')));

/** What every route may answer: the runtime's refusals (the query API waits for its log to be checked) and the service's 500. */
const always = [...RUNTIME_ERRORS.logUnbound, internal];
const unauthenticated = audit('AUDIT.UNAUTHENTICATED');
const invalid = audit('AUDIT.INVALID_REQUEST', 'invalid parameter(s), named in the message and details.fields (never their values)');
const foreignTenant = audit('AUDIT.FORBIDDEN', 'a `tenant` filter outside the reader’s tenants');
const notEveryTenant = audit('AUDIT.FORBIDDEN', 'a reader of some tenants only: an operator or a reader of `*` may ask');
const decisionNotFound = audit('AUDIT.DECISION_NOT_FOUND', 'no such decision of the reader’s tenants (another tenant’s is not disclosed)');
const positionUnavailable = errorCase(
  errorResponse(
    new GatehouseError('AUDIT.POSITION_UNAVAILABLE', 'the audit topic offsets could not be read', { category: 'unavailable', retryable: true }),
  ),
);
/** Operations a reader or an operator may call (either credential). */
const readerOrOperator: Record<string, string[]>[] = [{ reader: [] }, { operator: [] }];

/**
 * audit-export's OpenAPI 3.1 document, served at `GET /openapi.json`: parameters are the routes'
 * own zod schemas, answers the schemas the OpenAPI spec checks real answers against.
 */
export const AUDIT_OPENAPI_DOCUMENT = openApiDocument({
  service: 'audit-export',
  title: 'gatehouse audit-export',
  description:
    'A read-only query API over the projection of `gatehouse.audit.v1` (every decision of every gate, with whether its source ' +
    'vouched for it), and the control of the SIEM export. A reader sees only the decisions of its tenants; only operators move ' +
    'the export.',
  security: [{ reader: [] }],
  securitySchemes: {
    reader: {
      type: 'http',
      scheme: 'bearer',
      description: "A reader's API key (`GATEHOUSE_AUDIT_READERS` holds its sha-256 and its tenants, a list or `*`).",
    },
    operator: {
      type: 'http',
      scheme: 'bearer',
      description: "An export operator's API key (`GATEHOUSE_EXPORT_OPERATORS` holds its sha-256).",
    },
  },
  paths: {
    '/v1/decisions': {
      get: {
        operationId: 'queryDecisions',
        summary: "The reader's tenants' decisions matching every filter, newest first, with keyset pagination",
        parameters: parametersOf(DecisionQuerySchema, 'query', {
          decision: 'An outcome.',
          policy: 'A policy bundle id.',
          from: 'Inclusive, ISO 8601 with offset.',
          to: 'Exclusive, ISO 8601 with offset.',
          limit: '1 to 500 (default 50).',
          cursor: '`nextCursor` of the previous page.',
        }),
        responses: {
          '200': jsonResponse('A page', schemaRef('DecisionPage')),
          ...errorResponses([invalid, unauthenticated, foreignTenant, ...always]),
        },
      },
    },
    '/v1/decisions/{id}': {
      get: {
        operationId: 'getDecision',
        summary: 'One decision by event id',
        parameters: parametersOf(DecisionIdParams, 'path', { id: 'The event id.' }),
        responses: {
          '200': jsonResponse('The decision', schemaRef('DecisionView')),
          ...errorResponses([invalid, unauthenticated, decisionNotFound, ...always]),
        },
      },
    },
    '/v1/runs/{runId}/timeline': {
      get: {
        operationId: 'runTimeline',
        summary: "Every decision of a run of the reader's tenants, in log order (empty when none)",
        parameters: parametersOf(RunParams, 'path', { runId: 'The run id.' }),
        responses: {
          '200': jsonResponse('The timeline', schemaRef('RunTimeline')),
          ...errorResponses([invalid, unauthenticated, ...always]),
        },
      },
    },
    '/v1/exports': {
      get: {
        operationId: 'listExports',
        summary: "The export's status (positions, paused, counts); empty without a sink",
        security: readerOrOperator,
        responses: { '200': jsonResponse('The exports', schemaRef('ExportList')), ...errorResponses([unauthenticated, ...always]) },
      },
    },
    '/v1/exports/{name}/restart': {
      post: {
        operationId: 'restartExport',
        summary: 'Stop the export, move its positions to `from` (back to re-export, forward to skip) and resume (operators only)',
        security: [{ operator: [] }],
        parameters: parametersOf(z.object({ name: z.string() }), 'path', { name: 'The export name (`GATEHOUSE_EXPORT_NAME`).' }),
        requestBody: jsonBody(schemaRef('RestartExportRequest')),
        responses: {
          '200': jsonResponse('The new positions', schemaRef('RestartAnswer')),
          ...errorResponses([
            ...RUNTIME_ERRORS.body,
            invalid,
            unauthenticated,
            audit('AUDIT.EXPORT_NOT_FOUND'),
            audit('AUDIT.EXPORT_SCALED_OUT'),
            positionUnavailable,
            ...always,
          ]),
        },
      },
    },
    '/v1/audit-status': {
      get: {
        operationId: 'auditStatus',
        summary: 'Where the projection began and how far it and the export are behind (offsets and counts across every tenant)',
        security: readerOrOperator,
        responses: {
          '200': jsonResponse('The status', schemaRef('AuditStatus')),
          ...errorResponses([unauthenticated, notEveryTenant, audit('AUDIT.UNAVAILABLE'), ...always]),
        },
      },
    },
  },
  requests: { RestartExportRequest: z.object({ from: StartPositionSchema }) },
  responses: {
    DecisionView: DecisionViewSchema,
    DecisionPage: DecisionPageSchema,
    RunTimeline: RunTimelineSchema,
    ExportList: ExportListSchema,
    RestartAnswer: RestartAnswerSchema,
    AuditStatus: AuditStatusSchema,
  },
  internal,
});
