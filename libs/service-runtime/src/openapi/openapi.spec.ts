import { describe, expect, it } from '@jest/globals';
import { GatehouseError, JsonValueSchema } from '@gatehouse/contracts';
import { Validator } from '@seriousme/openapi-schema-validator';
import { z } from 'zod';
import { errorResponse } from '../http-errors.js';
import { jsonResponse, openApiDocument, schemaRef } from './document.js';
import { errorCase, errorResponses, RUNTIME_ERRORS } from './error-responses.js';
import { componentSchemas, inlineSchema, parametersOf } from './json-schema.js';

const MAPPING = { statusByCode: { 'DEMO.GONE': 410 }, internal: { code: 'DEMO.INTERNAL', message: 'the demo failed' } };
const demo = (code: string, category: GatehouseError['category'] = 'validation') =>
  errorCase(errorResponse(new GatehouseError(code, `${code} happened`, { category }), MAPPING));

describe('componentSchemas', () => {
  it('points the references of a recursive schema at its own component, not at the document root', () => {
    const { Tree } = componentSchemas({ Tree: z.strictObject({ value: JsonValueSchema }) }, 'output');
    const refs = JSON.stringify(Tree).match(/"\$ref":"[^"]*"/g) ?? [];
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(ref).toMatch(/^"\$ref":"#\/components\/schemas\/Tree\/\$defs\//);
    expect(Tree).not.toHaveProperty('$schema');
  });

  it('describes requests as they may be sent and answers as they are given', () => {
    const Body = z.object({ limit: z.string().transform(Number), name: z.string().optional() });
    const { In } = componentSchemas({ In: Body }, 'input');
    const { Out } = componentSchemas({ Out: z.object({ n: z.number() }) }, 'output');
    expect(In).toMatchObject({ type: 'object', properties: { limit: { type: 'string' } }, required: ['limit'] });
    expect(In).not.toHaveProperty('additionalProperties');
    expect(Out).toMatchObject({ additionalProperties: false });
  });
});

describe('inlineSchema and parametersOf', () => {
  it('refuses a recursive schema inline, where its references could not resolve', () => {
    expect(() => inlineSchema(JsonValueSchema, 'input')).toThrow(expect.objectContaining({ code: 'OPENAPI.RECURSIVE_SCHEMA' }));
  });

  it('makes one parameter per property, required as the object requires it, path parameters always', () => {
    const Query = z.strictObject({ tenant: z.string().describe('Whose.'), limit: z.string().optional() });
    const query = parametersOf(Query, 'query', { limit: 'How many.' });
    expect(query).toEqual([
      { name: 'tenant', in: 'query', required: true, description: 'Whose.', schema: { type: 'string' } },
      { name: 'limit', in: 'query', required: false, description: 'How many.', schema: { type: 'string' } },
    ]);
    expect(parametersOf(z.object({ id: z.string().optional() }), 'path')[0]?.required).toBe(true);
    expect(() => parametersOf(z.string(), 'query')).toThrow(expect.objectContaining({ code: 'OPENAPI.NOT_AN_OBJECT' }));
  });
});

describe('error responses', () => {
  it('gives each code the status the service mapping gives it, and the mapping its 500', () => {
    expect(demo('DEMO.GONE')).toEqual({ status: 410, code: 'DEMO.GONE', message: 'DEMO.GONE happened' });
    expect(demo('DEMO.BUSY', 'unavailable').status).toBe(503);
    const internal = errorCase(errorResponse(new Error('secret detail'), MAPPING));
    expect(internal).toEqual({ status: 500, code: 'DEMO.INTERNAL', message: 'the demo failed' });
  });

  it("lists the runtime's own refusals with the statuses the runtime answers", () => {
    expect(RUNTIME_ERRORS.body.map((e) => [e.status, e.code])).toEqual([
      [400, 'HTTP.BAD_REQUEST'],
      [413, 'HTTP.PAYLOAD_TOO_LARGE'],
      [415, 'HTTP.UNSUPPORTED_MEDIA_TYPE'],
    ]);
    expect(RUNTIME_ERRORS.logUnbound.map((e) => [e.status, e.code])).toEqual([
      [503, 'PROJECTION.LOG_CHANGED'],
      [503, 'PROJECTION.LOG_UNVERIFIED'],
    ]);
    expect(RUNTIME_ERRORS.partitionMoving).toMatchObject({ status: 503, code: 'FOLD.PARTITION_MOVING' });
  });

  it('groups codes by status, narrows the shared Error body to them, and keeps both texts of a code listed twice', () => {
    const ownCase = { ...demo('DEMO.BAD'), message: 'the body names no tenant' };
    const responses = errorResponses([demo('DEMO.GONE'), demo('DEMO.BAD'), demo('DEMO.WORSE'), ownCase]);
    expect(Object.keys(responses)).toEqual(['400', '410']);
    const badRequest = responses['400'];
    expect(badRequest?.description).toBe('`DEMO.BAD`: DEMO.BAD happened; or the body names no tenant. `DEMO.WORSE`: DEMO.WORSE happened');
    const narrowed = { properties: { code: { enum: ['DEMO.BAD', 'DEMO.WORSE'] } } };
    expect(badRequest?.content['application/json']?.schema).toEqual({ allOf: [schemaRef('Error'), narrowed] });
  });
});

describe('openApiDocument', () => {
  it('makes a valid OpenAPI 3.1 document with the runtime routes, the shared Error and recursive components', async () => {
    const document = openApiDocument({
      service: 'policy',
      title: 'demo',
      description: 'a demo service',
      security: [{ key: [] }],
      securitySchemes: { key: { type: 'http', scheme: 'bearer' } },
      paths: {
        '/v1/things/{id}': {
          post: {
            operationId: 'postThing',
            summary: 'Post a thing',
            parameters: parametersOf(z.object({ id: z.string() }), 'path'),
            requestBody: { required: true, content: { 'application/json': { schema: schemaRef('Thing') } } },
            responses: { '200': jsonResponse('ok', schemaRef('Thing')), ...errorResponses([demo('DEMO.BAD')]) },
          },
        },
      },
      requests: { Thing: z.strictObject({ value: JsonValueSchema }) },
      responses: {},
      internal: demo('DEMO.INTERNAL', 'internal'),
    });
    expect(Object.keys(document.paths)).toEqual(['/v1/things/{id}', '/health', '/openapi.json']);
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(JSON.stringify(document)) as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('refuses an option a service document does not have, naming it', () => {
    const internal = demo('DEMO.INTERNAL', 'internal');
    const options = { service: 'policy', title: 't', description: 'd', security: [], securitySchemes: {}, paths: {} };
    const schemas = { requests: {}, responses: {} };
    expect(() => openApiDocument({ ...options, ...schemas, internal, server: 'http://x' } as never)).toThrow(
      expect.objectContaining({ code: 'OPENAPI.UNKNOWN_OPTION', details: { options: ['server'] } }),
    );
    expect(Object.keys(openApiDocument({ ...options, ...schemas, service: 'policy', internal }).paths)).toEqual(['/health', '/openapi.json']);
  });
});
