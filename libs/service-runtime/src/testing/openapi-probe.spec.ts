import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Body, Catch, Controller, Get, Headers, type INestApplication, Module, Param, Post } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { GatehouseError } from '@gatehouse/contracts';
import { z } from 'zod';
import { errorResponse, GatehouseExceptionFilter } from '../http-errors.js';
import { type OpenApiDocument, schemaRef } from '../openapi/document.js';
import { errorCase, errorResponses } from '../openapi/error-responses.js';
import { listenOnLoopback } from './http.js';
import { documentedBody, documentsStatus, openApi31Problems, undocumentedAnswers } from './openapi-probe.js';
import { documentedRoutes, servedRoutes } from './routes.js';

// A small service, to check the checkers: a route the document lists wrongly must be found.
const MAPPING = { statusByCode: {}, internal: { code: 'DEMO.INTERNAL', message: 'the demo failed' } };
const CREDENTIAL = 'Bearer demo-credential-0123456789';
const unauthenticated = () => new GatehouseError('DEMO.UNAUTHENTICATED', 'a credential is required', { category: 'security' });
const invalid = () => new GatehouseError('DEMO.INVALID', 'name is required', { category: 'validation' });

@Catch()
class DemoFilter extends GatehouseExceptionFilter {
  constructor() {
    super(MAPPING, 'demo-http');
  }
}

@Controller('v1/things')
class ThingsController {
  @Get(':id')
  get(@Headers('authorization') authorization: string | undefined, @Param('id') id: string): { id: string } {
    if (authorization !== CREDENTIAL) throw unauthenticated();
    return { id };
  }

  @Post()
  create(@Headers('authorization') authorization: string | undefined, @Body() body: { name?: unknown }): { name: string } {
    if (authorization !== CREDENTIAL) throw unauthenticated();
    if (typeof body.name !== 'string') throw invalid();
    return { name: body.name };
  }
}

/** Answers anyone, though its document says it needs a credential. */
@Controller('v1/leaky')
class LeakyController {
  @Get()
  read(): { secret: false } {
    return { secret: false };
  }
}

class BaseController {
  @Get(['a', 'b'])
  both(): string {
    return 'ok';
  }
}

@Controller('v1/child')
class ChildController extends BaseController {}

@Module({ controllers: [ThingsController, LeakyController, ChildController], providers: [{ provide: APP_FILTER, useClass: DemoFilter }] })
class DemoModule {}

const demo = (error: GatehouseError) => errorCase(errorResponse(error, MAPPING));
const thing = { description: 'A thing', content: { 'application/json': { schema: schemaRef('Thing') } } };
const DOCUMENT: OpenApiDocument = {
  openapi: '3.1.0',
  info: { title: 'demo', version: '1', description: 'demo' },
  servers: [],
  security: [{ key: [] }],
  paths: {
    '/v1/things/{id}': {
      get: { operationId: 'getThing', summary: 'A thing', responses: { '200': thing, ...errorResponses([demo(unauthenticated())]) } },
    },
    // Leaves out the body parser's 400 HTTP.BAD_REQUEST: the probe must notice.
    '/v1/things': {
      post: {
        operationId: 'createThing',
        summary: 'Create a thing',
        requestBody: { required: true, content: { 'application/json': { schema: schemaRef('Thing') } } },
        responses: { '200': thing, ...errorResponses([demo(unauthenticated()), demo(invalid())]) },
      },
    },
    '/v1/leaky': {
      get: { operationId: 'leaky', summary: 'Says it is secured', responses: { '200': thing, ...errorResponses([demo(unauthenticated())]) } },
    },
  },
  components: { securitySchemes: { key: { type: 'http', scheme: 'bearer' } }, schemas: { Thing: { type: 'object' } } },
};

let app: INestApplication;
let baseUrl: string;

beforeAll(async () => {
  app = await NestFactory.create(DemoModule, { logger: false });
  baseUrl = await listenOnLoopback(app);
});

afterAll(async () => {
  await app.close();
});

describe('servedRoutes and documentedRoutes', () => {
  it('lists every route of every controller, inherited handlers and path lists included, with OpenAPI-style parameters', () => {
    expect(servedRoutes(app)).toEqual(['GET /v1/child/a', 'GET /v1/child/b', 'GET /v1/leaky', 'GET /v1/things/{id}', 'POST /v1/things']);
    expect(documentedRoutes(DOCUMENT)).toEqual(['GET /v1/leaky', 'GET /v1/things/{id}', 'POST /v1/things']);
  });
});

describe('undocumentedAnswers', () => {
  it('finds a status code the document leaves out and a secured route that answers the anonymous, and nothing else', async () => {
    const options = { pathValues: { id: 'thing-1' }, credentials: { key: { authorization: CREDENTIAL } } };
    const found = await undocumentedAnswers(baseUrl, DOCUMENT, options);
    expect(found).toEqual([
      {
        operation: 'POST /v1/things',
        probe: 'unreadable body',
        status: 400,
        code: 'HTTP.BAD_REQUEST',
        problem: 'code not documented for this status',
      },
      {
        operation: 'GET /v1/leaky',
        probe: 'anonymous',
        status: 200,
        problem: 'a secured operation did not refuse an anonymous caller with 401',
      },
    ]);
  });
});

describe('undocumentedAnswers options', () => {
  it('refuses an option it does not know, before calling anything', async () => {
    const options = { pathValues: {}, credentials: {}, timeoutMs: 5 };
    const refusal = 'undocumentedAnswers: unknown option "timeoutMs"';
    await expect(undocumentedAnswers(baseUrl, DOCUMENT, options as never)).rejects.toThrow(refusal);
  });
});

describe('documentedBody', () => {
  it('returns a documented success parsed by its schema, and refuses an undocumented status', () => {
    const answer = { status: 200, text: '{"id":"x"}', body: { id: 'x' } };
    expect(documentsStatus(DOCUMENT, 'GET /v1/things/{id}', 200)).toBe(true);
    expect(documentsStatus(DOCUMENT, 'GET /v1/things/{id}', 404)).toBe(false);
    expect(documentedBody(DOCUMENT, 'GET /v1/things/{id}', answer, z.strictObject({ id: z.string() }))).toEqual({ id: 'x' });
    const Thing = z.strictObject({ id: z.string() });
    expect(() => documentedBody(DOCUMENT, 'GET /v1/things/{id}', { ...answer, body: { id: 1 } }, Thing)).toThrow();
    expect(() => documentedBody(DOCUMENT, 'GET /v1/things/{id}', { ...answer, status: 201 }, z.unknown())).toThrow('answered 201');
  });
});

describe('openApi31Problems', () => {
  const minimal = { openapi: '3.1.0', info: { title: 'things', version: '1' }, paths: {} };

  it('finds nothing wrong with a valid 3.1 document', async () => {
    expect(await openApi31Problems(minimal)).toEqual([]);
  });

  it('names what is wrong: a document of another version, one missing its info, and one that is not an object', async () => {
    expect(await openApi31Problems({ ...minimal, openapi: '3.0.3' })).toEqual(['OpenAPI 3.0, not 3.1']);
    expect((await openApi31Problems({ openapi: '3.1.0', paths: {} })).length).toBeGreaterThan(0);
    expect(await openApi31Problems([minimal])).toEqual(['not a JSON object']);
  });
});
