import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { apiKeyDigest, HealthReportSchema } from '@gatehouse/service-runtime';
import {
  documentedBody,
  documentedRoutes,
  type HttpAnswer,
  openApi31Problems,
  readAnswer,
  servedRoutes,
  undocumentedAnswers,
} from '@gatehouse/service-runtime/testing';
import { type z } from 'zod';
import { parseStartPosition } from '../export/start-position.js';
import { type AuditApp, startAuditApp, TEST_READER, TEST_READER_KEY } from '../testing/audit-app.js';
import { decision } from '../testing/decisions.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import {
  AuditStatusSchema,
  DecisionPageSchema,
  DecisionViewSchema,
  ExportListSchema,
  RestartAnswerSchema,
  RunTimelineSchema,
  StartPositionSchema,
} from './audit-answers.js';
import { AUDIT_OPENAPI_DOCUMENT as DOCUMENT } from './openapi-document.js';

const kafka = testKafka('audit-openapi-spec');
const OPERATOR_KEY = 'ok_test_openapi_export_operator';
const reader = { authorization: `Bearer ${TEST_READER_KEY}` };
const operator = { authorization: `Bearer ${OPERATOR_KEY}` };
let database: TestDatabase;
let dir: string;
let namespace: string;
let app: AuditApp;

beforeAll(async () => {
  database = await createTestDatabase();
  dir = await mkdtemp(path.join(tmpdir(), 'gh-audit-openapi-'));
  namespace = await provisionedNamespace(kafka);
  app = await startAuditApp({
    namespace,
    databaseUrl: database.url,
    schema: 'audit_openapi',
    export: {
      name: 'siem',
      from: { kind: 'earliest' },
      file: { directory: dir, formats: ['ocsf'], maxBytes: 1_000_000 },
      verifyWaitMs: 0,
      operators: [{ id: 'op:export', role: 'operator', keyDigest: apiKeyDigest(OPERATOR_KEY) }],
      readers: [TEST_READER],
    },
  });
});

afterAll(async () => {
  await app?.close();
  await database?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The body of a documented success of `operation`, parsed by the schema its response was generated from. */
const answered = async <S extends z.ZodType>(operation: string, answer: Promise<HttpAnswer>, schema: S): Promise<z.infer<S>> =>
  documentedBody(DOCUMENT, operation, await answer, schema);

describe('the audit-export OpenAPI document', () => {
  it('is served without a credential and is a valid OpenAPI 3.1 document', async () => {
    const served = await readAnswer<Record<string, unknown>>(await fetch(`${app.baseUrl}/openapi.json`));
    expect(served.status).toBe(200);
    expect(await openApi31Problems(served.body)).toEqual([]);
    expect(served.body).toEqual(JSON.parse(JSON.stringify(DOCUMENT)));
  });

  it('describes exactly the routes the service serves', () => {
    expect(documentedRoutes(DOCUMENT)).toEqual(servedRoutes(app.app));
  });

  it('lists every status and code a route answers an anonymous caller, an empty body and an unreadable one', async () => {
    // and every secured route refuses the anonymous caller with 401
    const answers = await undocumentedAnswers(app.baseUrl, DOCUMENT, {
      pathValues: { id: '00000000-0000-4000-8000-000000000000', runId: 'run-1', name: 'siem' },
      credentials: { reader, operator },
    });
    expect(answers).toEqual([]);
  });

  it('documents the restart positions exactly as the route reads them', () => {
    const times = ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00+02:00', '2026-01-01'];
    const samples: unknown[] = ['earliest', 'latest', 'now', ...times, { '0': '12', '1': '40' }, {}, { '0': 12 }, { x: '1' }, 7, null];
    for (const sample of samples) {
      const documented = StartPositionSchema.safeParse(sample).success;
      expect({ sample, documented }).toEqual({ sample, documented: parseStartPosition(sample) !== undefined });
    }
  });

  it('answers every operation in its documented shape', async () => {
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      const run = { subject: 'run-openapi' };
      await producer.publishMany('audit', [decision({}, run), decision({ outcome: 'allowed', code: 'TOOL.ALLOWED' }, run)]);
    } finally {
      await producer.close();
    }
    const page = await waitFor(async () => {
      const answer = await answered('GET /v1/decisions', app.get('/v1/decisions?run=run-openapi'), DecisionPageSchema);
      return answer.items.length === 2 ? answer : undefined;
    }, { what: 'both decisions projected' });
    const [newest] = page.items;
    expect((await answered('GET /v1/decisions/{id}', app.get(`/v1/decisions/${newest?.id}`), DecisionViewSchema)).id).toBe(newest?.id);
    const timeline = await answered('GET /v1/runs/{runId}/timeline', app.get('/v1/runs/run-openapi/timeline'), RunTimelineSchema);
    expect(timeline.decisions).toHaveLength(2);
    const exports = await answered('GET /v1/exports', app.get('/v1/exports', operator), ExportListSchema);
    expect(exports.map((e) => e.name)).toEqual(['siem']);
    const status = await answered('GET /v1/audit-status', app.get('/v1/audit-status'), AuditStatusSchema);
    expect(status.export?.name).toBe('siem');
    const restart = app.post('/v1/exports/siem/restart', { from: 'latest' }, operator);
    const restarted = await answered('POST /v1/exports/{name}/restart', restart, RestartAnswerSchema);
    expect(restarted.name).toBe('siem');
    expect((await answered('GET /health', app.get('/health'), HealthReportSchema)).status).toBe('ok');
  });
});
