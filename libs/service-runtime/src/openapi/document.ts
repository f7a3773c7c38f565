import { GatehouseError } from '@gatehouse/contracts';
import { z } from 'zod';
import { SERVICES, type ServiceName } from '../services.js';
import { type ErrorCase, ErrorBodySchema, errorResponses, RUNTIME_ERRORS } from './error-responses.js';
import { componentSchemas, type JsonSchema, type OpenApiParameter } from './json-schema.js';

/** An OpenAPI response object. */
export interface OpenApiResponse {
  readonly description: string;
  readonly content?: Record<string, { readonly schema: JsonSchema }>;
}

/** An OpenAPI operation object, as far as gatehouse documents use it. */
export interface OpenApiOperation {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  /** `[]`: public; absent: the document's default (a credential). */
  readonly security?: readonly Record<string, readonly string[]>[];
  readonly parameters?: readonly OpenApiParameter[];
  readonly requestBody?: { readonly required: boolean; readonly content: Record<string, { readonly schema: JsonSchema }> };
  readonly responses: Readonly<Record<string, OpenApiResponse>>;
}

/** The operations of one path. */
export type OpenApiPathItem = Partial<Record<'get' | 'post' | 'put' | 'patch' | 'delete', OpenApiOperation>>;

/** An OpenAPI 3.1 document of a gatehouse service. */
export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: { readonly title: string; readonly version: string; readonly description: string };
  readonly servers: readonly { readonly url: string }[];
  readonly security: readonly Record<string, readonly string[]>[];
  readonly paths: Readonly<Record<string, OpenApiPathItem>>;
  readonly components: {
    readonly securitySchemes: Readonly<Record<string, JsonSchema>>;
    readonly schemas: Readonly<Record<string, JsonSchema>>;
  };
}

/** A reference to the component schema `name`. */
export const schemaRef = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** A JSON request body of `schema` (a component reference or an inline schema). */
export const jsonBody = (schema: JsonSchema) => ({ required: true, content: { 'application/json': { schema } } }) as const;

/** A JSON response. */
export const jsonResponse = (description: string, schema: JsonSchema): OpenApiResponse => ({
  description,
  content: { 'application/json': { schema } },
});

/** What `GET /health` answers (`HealthReport`), 200 or 503 alike; the specs parse real answers with it. */
export const HealthReportSchema = z.strictObject({
  service: z.string(),
  status: z.enum(['ok', 'unavailable']),
  checks: z.strictObject({
    kafka: z.strictObject({ status: z.enum(['up', 'down']), brokers: z.number().int().optional(), error: z.string().optional() }),
    database: z.strictObject({ status: z.enum(['up', 'down']), migrations: z.number().int().optional(), error: z.string().optional() }),
    projection: z
      .strictObject({
        status: z.enum(['up', 'down']),
        code: z.enum(['PROJECTION.LOG_CHANGED', 'PROJECTION.LOG_UNVERIFIED']).optional(),
        projections: z.array(
          z.strictObject({ projection: z.string(), state: z.enum(['verifying', 'bound', 'changed']), change: z.string().optional() }),
        ),
      })
      .optional(),
  }),
});

/** The routes of the runtime every service serves: `/health`, and `/openapi.json` (the document itself). */
function runtimePaths(internal: ErrorCase): Record<string, OpenApiPathItem> {
  return {
    '/health': {
      get: {
        operationId: 'health',
        summary: 'Whether the broker and the database answer and every projection is bound to its log',
        security: [],
        responses: {
          '200': jsonResponse('Ready', schemaRef('HealthReport')),
          '503': jsonResponse('Not ready: `checks` says which check failed', schemaRef('HealthReport')),
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openapi',
        summary: 'This document (static: no state, no credential)',
        security: [],
        responses: { '200': jsonResponse('OpenAPI 3.1', { type: 'object' }), ...errorResponses([...RUNTIME_ERRORS.logUnbound, internal]) },
      },
    },
  };
}

/** What a service says of itself in its document. */
export interface ServiceDocument {
  readonly service: ServiceName;
  readonly title: string;
  readonly description: string;
  /** The default security of its operations (an operation's own `security` overrides it). */
  readonly security: readonly Record<string, readonly string[]>[];
  readonly securitySchemes: Readonly<Record<string, JsonSchema>>;
  readonly paths: Readonly<Record<string, OpenApiPathItem>>;
  /** Request bodies and parameters, as their routes validate them (`io: input`). */
  readonly requests: Readonly<Record<string, z.ZodType>>;
  /** Answers (`io: output`). */
  readonly responses: Readonly<Record<string, z.ZodType>>;
  /** The service's 500, `errorCase(errorResponse(new Error()))`: the runtime's routes answer it too. */
  readonly internal: ErrorCase;
}

const SERVICE_DOCUMENT_KEYS: ReadonlySet<string> = new Set<keyof ServiceDocument>([
  'service',
  'title',
  'description',
  'security',
  'securitySchemes',
  'paths',
  'requests',
  'responses',
  'internal',
]);

/**
 * A service's OpenAPI 3.1 document: its routes and schemas, with the runtime's routes and the shared
 * `Error` and `HealthReport`. Refuses (`OPENAPI.UNKNOWN_OPTION`) a key `ServiceDocument` does not have.
 */
export function openApiDocument(service: ServiceDocument): OpenApiDocument {
  const unknown = Object.keys(service).filter((key) => !SERVICE_DOCUMENT_KEYS.has(key));
  if (unknown.length > 0) {
    const details = { options: unknown };
    throw new GatehouseError('OPENAPI.UNKNOWN_OPTION', 'openApiDocument: unknown option', { category: 'internal', details });
  }
  return {
    openapi: '3.1.0',
    info: { title: service.title, version: '1.0.0', description: service.description },
    servers: [{ url: `http://127.0.0.1:${SERVICES[service.service].port}` }],
    security: service.security,
    paths: { ...service.paths, ...runtimePaths(service.internal) },
    components: {
      securitySchemes: service.securitySchemes,
      schemas: {
        ...componentSchemas({ Error: ErrorBodySchema, HealthReport: HealthReportSchema }, 'output'),
        ...componentSchemas(service.requests, 'input'),
        ...componentSchemas(service.responses, 'output'),
      },
    },
  };
}
