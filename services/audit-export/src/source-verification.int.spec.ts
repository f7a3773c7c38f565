import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { auditCheckpoint, type DecisionRecorded, eventDigest } from '@gatehouse/contracts';
import { testAgentKey, testKeyring, testSigningKey } from '@gatehouse/contracts/testing';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type AuditApp, startAuditApp } from './testing/audit-app.js';
import { decision } from './testing/decisions.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';
import { type DecisionView } from './query-decisions/decision-view.js';

// The projection, the query API and the OCSF file judge every record by the checkpoints on the
// log, read in any order: verified when a key that may speak for its source and tenant vouched
// for it, forbidden when only a key that may not did, unverified when none did.
const approvalKey = testSigningKey('approval');
const acmeAgent = testAgentKey('agent:support-bot', ['acme']);
const globexAgent = testAgentKey('agent:globex-bot', ['globex']);
const keyring = testKeyring(approvalKey, acmeAgent, globexAgent);

let db: TestDatabase;
let app: AuditApp;
const dir = mkdtempSync(path.join(tmpdir(), 'audit-verify-it-'));

const of = (source: string, subject: string, over: Partial<DecisionRecorded['payload']> = {}): DecisionRecorded => ({ ...decision({ runId: subject, ...over }, { subject }), source });
const honestService = of('service:approval', 'run-v', { boundary: 'approval', code: 'SECURITY.UNTRUSTED_GRANT' });
const honestGuard = of('guard:support-bot', 'run-v');
const forgedService = of('service:approval', 'run-v', { boundary: 'approval', outcome: 'allowed', code: 'APPROVAL.GRANTED' });
const forgedTenant = of('guard:support-bot', 'run-v', { code: 'TOOL.ALLOWED', outcome: 'allowed' });
const uncovered = of('service:approval', 'run-v', { boundary: 'approval', outcome: 'allowed', code: 'APPROVAL.GRANTED' });

beforeAll(async () => {
  const kafka = testKafka('audit-verify-it');
  db = await createTestDatabase();
  const namespace = await provisionedNamespace(kafka);
  app = await startAuditApp({
    namespace,
    databaseUrl: db.url,
    schema: 'verify_it',
    export: { name: 'siem', from: { kind: 'earliest' }, keyring, verifyWaitMs: 5_000, file: { directory: dir, formats: ['ocsf'], maxBytes: 1 << 20 } },
  });
  const producer = await EventProducer.connect(kafka, { namespace });
  try {
    // The guard's checkpoint comes before its record: the projection meets them in either order.
    await producer.publish('audit', auditCheckpoint({ source: 'guard:support-bot', producer: 'guard:support-bot#1', digests: [eventDigest(honestGuard)] }, acmeAgent));
    for (const event of [honestService, honestGuard, forgedService, forgedTenant, uncovered]) await producer.publish('audit', event);
    await producer.publish('audit', auditCheckpoint({ source: 'service:approval', producer: 'service:approval#1', digests: [eventDigest(honestService)] }, approvalKey));
    await producer.publish('audit', auditCheckpoint({ source: 'service:approval', producer: 'service:approval#forged', digests: [eventDigest(forgedService)] }, globexAgent));
    await producer.publish('audit', auditCheckpoint({ source: 'guard:support-bot', producer: 'guard:globex#1', digests: [eventDigest(forgedTenant)] }, globexAgent));
  } finally {
    await producer.close();
  }
});

afterAll(async () => {
  await app?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('source verification in audit-export', () => {
  it('marks each decision in the query API, and filters by verdict', async () => {
    const items = await waitFor(
      async () => {
        const body = (await app.get<{ items: DecisionView[] }>('/v1/decisions?run=run-v&limit=50')).body;
        const judged = body.items?.filter((d) => d.verification.status !== 'unverified').length ?? 0;
        return judged === 4 ? body.items : undefined;
      },
      { timeoutMs: 30_000, what: 'four judged decisions' },
    );
    const verdict = (e: DecisionRecorded) => items.find((d) => d.id === e.id)?.verification;
    expect(verdict(honestService)).toMatchObject({ status: 'verified', reason: null, keyId: approvalKey.keyId });
    expect(verdict(honestGuard)).toMatchObject({ status: 'verified', keyId: acmeAgent.keyId });
    expect(verdict(forgedService)).toMatchObject({ status: 'forbidden', reason: 'forbidden-source', keyId: globexAgent.keyId });
    expect(verdict(forgedTenant)).toMatchObject({ status: 'forbidden', reason: 'forbidden-tenant', keyId: globexAgent.keyId });
    expect(verdict(uncovered)).toEqual({ status: 'unverified', reason: null, keyId: null, checkpoint: null });
    const forbidden = (await app.get<{ items: DecisionView[] }>('/v1/decisions?verification=forbidden')).body.items.map((d) => d.id).sort();
    expect(forbidden).toEqual([forgedService.id, forgedTenant.id].sort());
    expect((await app.get('/v1/decisions?verification=maybe')).status).toBe(400);
  });

  it('writes the verdict on every OCSF line, and a SECURITY.FORBIDDEN_AUDIT_SOURCE line after each forbidden record', async () => {
    const lines = await waitFor(
      () => {
        const all = readdirSync(dir).flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean)).map((l) => JSON.parse(l) as { metadata: { uid: string }; status_code: string; unmapped: { verification: { status: string } | null; gatehouse: { causation_id?: string } } });
        return all.length >= 7 ? all : undefined;
      },
      { timeoutMs: 30_000, what: 'the OCSF lines' },
    );
    const status = (e: DecisionRecorded) => lines.find((l) => l.metadata.uid === e.id)?.unmapped.verification?.status;
    expect([honestService, honestGuard, forgedService, forgedTenant, uncovered].map(status)).toEqual(['verified', 'verified', 'forbidden', 'forbidden', 'unverified']);
    const security = lines.filter((l) => l.status_code === 'SECURITY.FORBIDDEN_AUDIT_SOURCE');
    expect(security.map((l) => l.unmapped.gatehouse.causation_id).sort()).toEqual([forgedService.id, forgedTenant.id].sort());
    expect(lines).toHaveLength(7);
  });
});
