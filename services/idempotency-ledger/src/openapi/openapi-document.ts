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
import { CompleteKeyRequest } from '../complete-key/complete-key.js';
import { ConsumeRateRequest } from '../consume-rate/consume-rate.js';
import { type LedgerCode, LedgerError } from '../errors.js';
import { FailKeyRequest } from '../fail-key/fail-key.js';
import { KeyParams, KeyQuery } from '../get-key/get-key.js';
import { errorResponse } from '../http/ledger-exception.filter.js';
import { ReconcileKeyRequest } from '../reconcile-key/reconcile-key.js';
import { ReserveKeyRequest } from '../reserve-key/reserve-key.js';
import { ResolveKeyRequest } from '../resolve-key/resolve-key.js';
import {
  CompleteKeyAnswerSchema,
  ConsumeRateAnswerSchema,
  EchoAnswerSchema,
  FailKeyAnswerSchema,
  KeyViewSchema,
  ReconcileKeyAnswerSchema,
  ReserveKeyAnswerSchema,
  ResolveKeyAnswerSchema,
} from './ledger-answers.js';

// Each error case goes through the service's own mapping (the exception filter's), so the status
// a document gives a code is the status the service answers it with.
const ledger = (code: LedgerCode, message?: string): ErrorCase => errorCase(errorResponse(new LedgerError(code, {}, undefined, message)));
const internal = errorCase(errorResponse(new Error('internal')));

/** What every route may answer: the runtime's refusals and the service's 500. */
const always = [...RUNTIME_ERRORS.logUnbound, internal];
/** Every agent route: a key bound to the tenant the request names. */
const agent = [ledger('LEDGER.UNAUTHENTICATED'), ledger('LEDGER.FORBIDDEN', 'the key is not bound to the tenant the request names')];
const invalid = ledger(
  'LEDGER.INVALID_REQUEST',
  'invalid field(s), named in details.fields (never their values), or no `tenant` from an agent of several tenants',
);
const body = [...RUNTIME_ERRORS.body, invalid];
/** Routes that append to the ledger and wait for the fold's verdict on their own event. */
const decided = [
  ledger('LEDGER.UNAVAILABLE', 'the ledger could not confirm the decision in time: fail closed (do not execute) and retry'),
  RUNTIME_ERRORS.partitionMoving,
];
const leaseLost = [ledger('LEDGER.LEASE_LOST'), ledger('LEDGER.UNKNOWN_KEY')];

/** One of the agent routes that post a request and get the fold's answer. */
function agentOperation(operationId: string, summary: string, refusals: readonly ErrorCase[]): OpenApiOperation {
  // Its body and answer are the components `<OperationId>Request` and `<OperationId>Answer`.
  const name = `${operationId.charAt(0).toUpperCase()}${operationId.slice(1)}`;
  return {
    operationId,
    summary,
    requestBody: jsonBody(schemaRef(`${name}Request`)),
    responses: {
      '200': jsonResponse('The answer', schemaRef(`${name}Answer`)),
      ...errorResponses([...body, ...agent, ...refusals, ...decided, ...always]),
    },
  };
}

/**
 * The idempotency ledger's OpenAPI 3.1 document, served at `GET /openapi.json`: request shapes
 * are the routes' own zod schemas, answers the schemas the OpenAPI spec checks real answers against.
 */
export const LEDGER_OPENAPI_DOCUMENT = openApiDocument({
  service: 'idempotency-ledger',
  title: 'gatehouse idempotency ledger',
  description:
    'Exactly-once tool execution and shared rate limits across agent processes. Every reservation, completion, failure, ' +
    'reconciliation, resolution and rate request is an event on `gatehouse.ledger.v1`; the answer is the fold’s verdict on ' +
    'the caller’s own event. Keys are the caller’s hex sha-256 over its scope, stored scoped by the tenant the request names ' +
    'among the agent’s own.',
  security: [{ agent: [] }],
  securitySchemes: {
    agent: {
      type: 'http',
      scheme: 'bearer',
      description: "An agent's API key (`GATEHOUSE_LEDGER_AGENTS` holds its sha-256 and the tenants it is bound to).",
    },
    operator: {
      type: 'http',
      scheme: 'bearer',
      description: 'An operator token (`GATEHOUSE_LEDGER_OPERATOR_TOKENS` holds its digest); an agent key is not one.',
    },
  },
  paths: {
    '/v1/idempotency/reservations': {
      post: agentOperation('reserveKey', 'Reserve a key of the tenant, or learn who holds it and what they recorded', [
        ledger('LEDGER.PENDING_LIMIT'),
      ]),
    },
    '/v1/idempotency/completions': {
      post: agentOperation('completeKey', "Record the holder's result on a key", [...leaseLost, ledger('LEDGER.KEY_AMBIGUOUS')]),
    },
    '/v1/idempotency/failures': {
      post: agentOperation('failKey', 'Give a key back after a failed execution (after a takeover it stays ambiguous)', leaseLost),
    },
    '/v1/idempotency/reconciliations': {
      post: agentOperation('reconcileKey', 'Say whether the call of a taken-over (ambiguous) lease was already applied', [
        ...leaseLost,
        ledger('LEDGER.NOT_AMBIGUOUS'),
      ]),
    },
    '/v1/idempotency/keys/{key}': {
      get: {
        operationId: 'getKey',
        summary: "A key of the caller's tenant as the projection has it (never its lease token)",
        parameters: [
          ...parametersOf(KeyParams, 'path', { key: "The caller's key (hex sha-256)." }),
          ...parametersOf(KeyQuery, 'query', { tenant: "Which of the agent's tenants (optional for an agent bound to one)." }),
        ],
        responses: {
          '200': jsonResponse('The key', schemaRef('KeyView')),
          ...errorResponses([invalid, ...agent, ledger('LEDGER.KEY_NOT_FOUND'), ...always]),
        },
      },
    },
    '/v1/idempotency/keys/{key}/resolution': {
      post: {
        operationId: 'resolveKey',
        summary: 'An operator decides an ambiguous key: re-execute (free it) or mark it completed with a result',
        security: [{ operator: [] }],
        parameters: parametersOf(KeyParams, 'path', { key: 'The key as the ledger stores it (`ledgerKey` of the key view).' }),
        requestBody: jsonBody(schemaRef('ResolveKeyRequest')),
        responses: {
          '200': jsonResponse('Resolved', schemaRef('ResolveKeyAnswer')),
          ...errorResponses([
            ...RUNTIME_ERRORS.body,
            ledger('LEDGER.INVALID_REQUEST', 'invalid field(s), named in details.fields'),
            ledger('LEDGER.UNAUTHORIZED'),
            ledger('LEDGER.NOT_AMBIGUOUS'),
            ledger('LEDGER.UNKNOWN_KEY'),
            ...decided,
            ...always,
          ]),
        },
      },
    },
    '/v1/rate/consumptions': {
      post: agentOperation('consumeRate', 'Ask for one unit of a shared budget of the tenant (the fold admits or refuses it by log time)', [
        ledger('LEDGER.BUDGET_LIMIT'),
      ]),
    },
    '/v1/ledger/status': {
      get: {
        operationId: 'ledgerStatus',
        summary:
          'Offsets per partition, key and budget counts, unapplied records, refusals by code (counts only: no key, tenant or caller)',
        security: [],
        responses: { '200': jsonResponse('Status', { type: 'object' }), ...errorResponses(always) },
      },
    },
    '/v1/ledger/echo': {
      post: {
        operationId: 'echo',
        summary: "The transport alone, for the benchmark: the body's size back; no state",
        security: [],
        requestBody: jsonBody({ description: 'Any JSON.' }),
        responses: { '200': jsonResponse('Its size', schemaRef('EchoAnswer')), ...errorResponses([...RUNTIME_ERRORS.body, ...always]) },
      },
    },
  },
  requests: { ReserveKeyRequest, CompleteKeyRequest, FailKeyRequest, ReconcileKeyRequest, ResolveKeyRequest, ConsumeRateRequest },
  responses: {
    ReserveKeyAnswer: ReserveKeyAnswerSchema,
    CompleteKeyAnswer: CompleteKeyAnswerSchema,
    FailKeyAnswer: FailKeyAnswerSchema,
    ReconcileKeyAnswer: ReconcileKeyAnswerSchema,
    ResolveKeyAnswer: ResolveKeyAnswerSchema,
    KeyView: KeyViewSchema,
    ConsumeRateAnswer: ConsumeRateAnswerSchema,
    EchoAnswer: EchoAnswerSchema,
  },
  internal,
});
