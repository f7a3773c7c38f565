import { type JsonSchema, type OpenApiDocument, type OpenApiParameter } from '@gatehouse/service-runtime';

/** JSON Schema pieces of the document, named once. */
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ 'application/json': { schema } });
const errorResponse = (description: string) => ({ description, content: json(ref('Error')) });

const Actor = {
  type: 'object',
  required: ['id', 'role', 'kind'],
  properties: { id: { type: 'string' }, role: { type: 'string' }, kind: { type: 'string', enum: ['human', 'service', 'agent', 'system'] } },
};

const Status = { type: 'string', enum: ['pending', 'approved', 'approved-with-edits', 'denied', 'expired', 'cancelled'] };

const approvalIdParam: OpenApiParameter = {
  name: 'approvalId',
  in: 'path',
  required: true,
  description: '`appr_` and the hex sha-256 of the grant scope.',
  schema: { type: 'string', pattern: '^appr_[0-9a-f]{64}$' },
};

/**
 * The approval service's OpenAPI 3.1 document, served at `GET /openapi.json`. A test validates
 * it against the OpenAPI schema and checks every route the service serves is described.
 */
export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'gatehouse approval service',
    version: '1.0.0',
    description:
      'Reviewers list, inspect and decide approval requests that guarded agents appended to `gatehouse.approvals.v1`. ' +
      'A decision is appended to the log and answered once the fold has applied it: the log order decides between reviewers.',
  },
  servers: [{ url: 'http://127.0.0.1:4102' }],
  security: [{ reviewer: [] }],
  paths: {
    '/v1/approvals': {
      get: {
        operationId: 'listApprovals',
        summary: 'Approvals the reviewer may see, newest request first',
        parameters: [
          { name: 'status', in: 'query', description: 'One status or a comma-separated list; `decided` stands for approved, approved-with-edits and denied.', schema: { type: 'string' } },
          { name: 'tenant', in: 'query', schema: { type: 'string' } },
          { name: 'connector', in: 'query', schema: { type: 'string' } },
          { name: 'requester', in: 'query', description: 'Requester id.', schema: { type: 'string' } },
          { name: 'minAgeSeconds', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 3_153_600_000 } },
          { name: 'maxAgeSeconds', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 3_153_600_000 } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
          { name: 'order', in: 'query', description: '`requested`: newest request first. `settled`: settled approvals only, newest settlement first (the history).', schema: { enum: ['requested', 'settled'], default: 'requested' } },
          { name: 'cursor', in: 'query', description: '`nextCursor` of the previous page.', schema: { type: 'string' } },
        ],
        responses: {
          '200': { description: 'A page of approvals', content: json(ref('ApprovalPage')) },
          '400': errorResponse('A filter is invalid'),
          '401': errorResponse('No valid reviewer credential'),
        },
      },
    },
    '/v1/approvals/{approvalId}': {
      get: {
        operationId: 'getApproval',
        summary: 'One approval with its full history',
        parameters: [approvalIdParam],
        responses: {
          '200': { description: 'The approval', content: json(ref('Approval')) },
          '401': errorResponse('No valid reviewer credential'),
          '403': errorResponse('The reviewer may not review this tenant or connector'),
          '404': errorResponse('No such approval'),
        },
      },
    },
    '/v1/approvals/{approvalId}/decision': {
      post: {
        operationId: 'decideApproval',
        summary: 'Approve, approve with edited arguments, or deny',
        parameters: [approvalIdParam],
        requestBody: { required: true, content: json(ref('DecisionRequest')) },
        responses: {
          '200': { description: 'This decision settled the approval', content: json(ref('DecisionOutcome')) },
          '202': { description: 'Under a quorum: the approval was counted; more are needed', content: json(ref('VoteOutcome')) },
          '400': errorResponse('The body is invalid'),
          '401': errorResponse('No valid reviewer credential'),
          '403': errorResponse('Not allowed for this tenant or connector, or the reviewer is the requester'),
          '404': errorResponse('No such approval'),
          '409': errorResponse('Another decision or a cancellation came first, or this reviewer already voted'),
          '410': errorResponse('The approval expired'),
          '422': errorResponse("The edited arguments fail the tool's input schema; details.problems lists every failing keyword"),
          '503': errorResponse('The log could not confirm the decision in time; nothing is known to be decided'),
        },
      },
    },
    '/v1/approval-events': {
      get: {
        operationId: 'streamApprovalEvents',
        summary: 'Server-sent events: one `approval` event per change the reviewer may see',
        responses: {
          '200': { description: '`event: ready`, then `event: approval` with an ApprovalChange as data', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          '401': errorResponse('No valid reviewer credential'),
        },
      },
    },
    '/v1/approvals-status': {
      get: {
        operationId: 'approvalStatus',
        summary: "The fold's phase, offsets and counts",
        security: [],
        responses: { '200': { description: 'Status', content: json({ type: 'object' }) } },
      },
    },
    '/health': {
      get: {
        operationId: 'health',
        summary: 'Liveness and readiness of the broker and database connections',
        security: [],
        responses: { '200': { description: 'Healthy', content: json({ type: 'object' }) }, '503': { description: 'Not ready', content: json({ type: 'object' }) } },
      },
    },
    '/openapi.json': {
      get: { operationId: 'openapi', summary: 'This document', security: [], responses: { '200': { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } } },
    },
    '/inbox/{asset}': {
      get: {
        operationId: 'inboxAsset',
        summary: "One of the inbox's built scripts (ES modules, `app.js` first) or its style sheet (`app.css`)",
        security: [],
        parameters: [{ name: 'asset', in: 'path', required: true, schema: { type: 'string', pattern: '^[a-z][a-z0-9-]*\\.(js|css)$' } }],
        responses: {
          '200': { description: 'JavaScript or CSS', content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } } },
          '404': errorResponse('No such asset'),
        },
      },
    },
    '/inbox': {
      get: { operationId: 'inbox', summary: 'The reviewers’ web inbox (its data calls need a credential)', security: [], responses: { '200': { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } } } },
    },
  },
  components: {
    securitySchemes: {
      reviewer: { type: 'http', scheme: 'bearer', description: 'A reviewer API key, or an HS256 JWT with sub, role, exp, tenants and connectors claims.' },
    },
    schemas: {
      Actor,
      Error: {
        type: 'object',
        required: ['code', 'message', 'retryable'],
        properties: { code: { type: 'string' }, message: { type: 'string' }, retryable: { type: 'boolean' }, details: { type: 'object' } },
      },
      Approval: {
        type: 'object',
        required: ['approvalId', 'status', 'tenant', 'connectorId', 'executionId', 'requester', 'reason', 'arguments', 'redactedPaths', 'requestedAt', 'deadline', 'votes'],
        properties: {
          approvalId: { type: 'string' },
          status: Status,
          tenant: { type: 'string' },
          connectorId: { type: 'string' },
          executionId: { type: 'string' },
          requester: ref('Actor'),
          reason: { type: 'string' },
          arguments: { description: 'Tool-call arguments as the requester recorded them, redacted where policy says so.' },
          redactedPaths: { type: 'array', items: { type: 'string' } },
          inputSchema: { type: 'object', description: "The tool's input JSON Schema; edits are validated against it." },
          toolDescription: { type: 'string' },
          dryRunPreview: { description: "What the call would do, from the connector's dry run." },
          requestedAt: { type: 'string', format: 'date-time' },
          deadline: { type: 'string', format: 'date-time' },
          settledAt: { type: 'string', format: 'date-time' },
          settledBy: ref('Actor'),
          comment: { type: 'string' },
          editedArguments: {},
          expiryCause: { type: 'string', enum: ['expiry-event', 'late-decision'] },
          quorum: { type: 'object', properties: { required: { type: 'integer' }, reviewers: { type: 'array', items: { type: 'string' } } } },
          votes: { type: 'array', items: { type: 'object', properties: { reviewer: ref('Actor'), at: { type: 'string', format: 'date-time' }, comment: { type: 'string' } } } },
          history: { type: 'array', items: ref('HistoryEntry') },
        },
      },
      HistoryEntry: {
        type: 'object',
        required: ['eventId', 'type', 'at', 'verdict'],
        properties: {
          eventId: { type: 'string' },
          type: { type: 'string', enum: ['ApprovalRequested', 'ApprovalDecided', 'ApprovalExpired', 'ApprovalCancelled', 'ApprovalUsed'] },
          at: { type: 'string', format: 'date-time', description: 'Log append time.' },
          verdict: { type: 'object', description: 'What the fold made of the event: accepted, duplicate, or rejected with a reason.' },
          actor: ref('Actor'),
          decision: { type: 'string', enum: ['approve', 'approve-with-edits', 'deny'] },
        },
      },
      ApprovalPage: {
        type: 'object',
        required: ['items'],
        properties: { items: { type: 'array', items: ref('Approval') }, nextCursor: { type: 'string' } },
      },
      DecisionRequest: {
        oneOf: [
          { type: 'object', required: ['verdict'], additionalProperties: false, properties: { verdict: { const: 'approve' }, comment: { type: 'string', maxLength: 2000 } } },
          { type: 'object', required: ['verdict'], additionalProperties: false, properties: { verdict: { const: 'deny' }, comment: { type: 'string', maxLength: 2000 } } },
          {
            type: 'object',
            required: ['verdict', 'editedArguments'],
            additionalProperties: false,
            properties: { verdict: { const: 'approve-with-edits' }, editedArguments: {}, comment: { type: 'string', maxLength: 2000 } },
          },
        ],
      },
      VoteOutcome: {
        type: 'object',
        required: ['approvalId', 'status', 'votes', 'required'],
        properties: { approvalId: { type: 'string' }, status: { const: 'pending' }, votes: { type: 'integer' }, required: { type: 'integer' } },
      },
      DecisionOutcome: {
        type: 'object',
        required: ['approvalId', 'status', 'reviewer', 'decidedAt'],
        properties: { approvalId: { type: 'string' }, status: Status, reviewer: ref('Actor'), decidedAt: { type: 'string', format: 'date-time' }, editedArguments: {} },
      },
    },
  },
} as const satisfies OpenApiDocument;
