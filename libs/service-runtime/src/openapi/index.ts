// OpenAPI 3.1 documents of the services: JSON Schema from the routes' own zod schemas, the shared
// error body and error responses, and the runtime's routes every document lists.
export { componentSchemas, inlineSchema, type JsonSchema, type OpenApiParameter, parametersOf, type SchemaSide } from './json-schema.js';
export {
  ErrorBodySchema,
  type ErrorCase,
  errorCase,
  errorResponses,
  type OpenApiErrorResponse,
  RUNTIME_ERRORS,
} from './error-responses.js';
export {
  HealthReportSchema,
  jsonBody,
  jsonResponse,
  openApiDocument,
  type OpenApiDocument,
  type OpenApiOperation,
  type OpenApiPathItem,
  type OpenApiResponse,
  schemaRef,
  type ServiceDocument,
} from './document.js';
