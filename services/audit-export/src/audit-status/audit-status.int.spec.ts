import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { allowed, apiKeyDigest } from '@gatehouse/service-runtime';
import { type AuditStatus } from '../audit-runtime.js';
import { type ExportOptions } from '../export-config.js';
import { type AuditApp, startAuditApp, TEST_READER } from '../testing/audit-app.js';
import { decision } from '../testing/decisions.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

// A start reads on from the offsets stored with the rows (issue 17): the status route says where
// the projection began, how many records it applied since, and how far it and the export are behind.
const kafka = testKafka('audit-status-it');
const ACME_KEY = 'rk_test_reader_acme_only';
const OPERATOR_KEY = 'ok_test_export_operator';
let db: TestDatabase;
let dir: string;
let namespace: string;
let exportOptions: ExportOptions;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(path.join(tmpdir(), 'gh-audit-status-'));
  namespace = await provisionedNamespace(kafka);
  exportOptions = {
    name: 'siem',
    from: { kind: 'earliest' },
    file: { directory: dir, formats: ['ocsf'], maxBytes: 1_000_000 },
    verifyWaitMs: 0,
    operators: [{ id: 'op:export', role: 'operator', keyDigest: apiKeyDigest(OPERATOR_KEY) }],
    readers: [TEST_READER, { id: 'acme:siem', role: 'siem', tenants: allowed(['acme']), keyDigest: apiKeyDigest(ACME_KEY) }],
  };
});

afterAll(async () => {
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const publish = async (count: number, from: number) => {
  const producer = await EventProducer.connect(kafka, { namespace });
  try {
    await producer.publishMany('audit', Array.from({ length: count }, (_, i) => decision({}, { subject: `run-${(from + i) % 5}` })));
  } finally {
    await producer.close();
  }
};

const status = async (app: AuditApp) => (await app.get<AuditStatus>('/v1/audit-status')).body;
const caughtUp = (app: AuditApp) => waitFor(async () => ((s) => (s.projection.lag === 0 && s.export?.lag === 0 ? s : undefined))(await status(app)), { what: 'projection and export caught up' });

describe('GET /v1/audit-status', () => {
  it('a first start reads from offset 0; a restart reads on from the stored offsets, nothing read twice', async () => {
    await publish(30, 0);
    const first = await startAuditApp({ namespace, databaseUrl: db.url, schema: 'status_it', export: exportOptions });
    try {
      const settled = await caughtUp(first);
      expect(settled.projection.start).toEqual({ from: 'offset-0', records: 30 });
      expect(settled.projection.partitions.reduce((n, p) => n + Number(BigInt(p.end)), 0)).toBe(30);
      expect(settled.export).toMatchObject({ name: 'siem', phase: 'running', exported: 30, lag: 0 });
    } finally {
      await first.close();
    }
    await publish(7, 30);
    const second = await startAuditApp({ namespace, databaseUrl: db.url, schema: 'status_it', export: exportOptions });
    try {
      const settled = await caughtUp(second);
      // Only what was appended while it was down: the 30 before are neither projected nor exported again.
      expect(settled.projection.start).toEqual({ from: 'stored-offsets', records: 7 });
      expect(settled.export).toMatchObject({ exported: 7, lag: 0 });
      for (const p of settled.projection.partitions) expect(p.next).toBe(p.end);
    } finally {
      await second.close();
    }
  });

  it('answers an operator and an all-tenant reader only: no key, an unknown key and a one-tenant reader are refused', async () => {
    const app = await startAuditApp({ namespace, databaseUrl: db.url, schema: 'status_auth_it', export: exportOptions });
    try {
      expect((await app.get('/v1/audit-status', { authorization: `Bearer ${OPERATOR_KEY}` })).status).toBe(200);
      expect((await app.get('/v1/audit-status')).status).toBe(200);
      const none = await app.get<{ code: string }>('/v1/audit-status', { authorization: '' });
      expect([none.status, none.body.code]).toEqual([401, 'AUDIT.UNAUTHENTICATED']);
      // An agent holds no key of this service; whatever it sends is refused.
      expect((await app.get('/v1/audit-status', { authorization: 'Bearer agent-credential' })).status).toBe(401);
      // The counts span every tenant: they would tell a one-tenant reader how busy the others are.
      const scoped = await app.get<{ code: string }>('/v1/audit-status', { authorization: `Bearer ${ACME_KEY}` });
      expect([scoped.status, scoped.body.code]).toEqual([403, 'AUDIT.FORBIDDEN']);
    } finally {
      await app.close();
    }
  });
});
