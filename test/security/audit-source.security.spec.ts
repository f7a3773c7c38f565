import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RequestContext } from '@mastra/core/request-context';
import {
  ApprovalDecidedV1,
  auditCheckpoint,
  createEvent,
  type DecisionRecorded,
  DecisionRecordedV1,
  eventDigest,
  SIGNING_ENV,
  signingKeyFromPem,
  trustedEntryOf,
  verifyAuditSources,
} from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYS, testAgentKey, testKeyring } from '@gatehouse/contracts/testing';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY, AuditLogger, createGuardedAgent, denyPatterns, kafkaAuditPublisher, kafkaAuditSink } from '@gatehouse/guard';
import { scriptedModel } from '@gatehouse/guard/testing';
import { type AppendResult, EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, ROOT, type Started, startService } from '../src/support/processes.js';

// Issue 15, attack 6, as an attacker runs it: holding only the `agent` principal's Kafka
// credentials and a claim key the services trust for tenant globex, it appends DecisionRecorded
// as `source: service:approval` in tenant acme — with no checkpoint, with a checkpoint forged in
// the approval service's name, and with one signed by its own key. `gatehouse audit verify
// --topic` (the CLI as a process) and audit-export (a process) must flag each, for acme's reader,
// while an honest guarded agent's decisions and the approval service's own report verify.

const honestAgent = testAgentKey('agent:support-bot', ['acme']);
const attackerKey = testAgentKey('agent:globex-bot', ['globex']);
const trusted = JSON.stringify([...Object.values(TEST_KEYS), TEST_AGENT_KEY, honestAgent, attackerKey].map(trustedEntryOf));
const keyring = testKeyring(...Object.values(TEST_KEYS), TEST_AGENT_KEY, honestAgent, attackerKey);
const cli = path.join(ROOT, 'cli/dist/main.js');
const siemDir = mkdtempSync(path.join(tmpdir(), 'gatehouse-audit-source-'));
const acmeReader = auditReader(['acme'], 'siem:acme');

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let exporter: Started & { url: string };
let honestIds: string[] = [];
let serviceReportId: string;

interface Forgery {
  readonly event: DecisionRecorded;
  readonly at: AppendResult;
}
const forged: Record<'bare' | 'forgedCheckpoint' | 'ownKey' | 'otherTenant', Forgery | undefined> = { bare: undefined, forgedCheckpoint: undefined, ownKey: undefined, otherTenant: undefined };
let checkpointIds: { forged: string; ownKey: string };

interface VerifyReport {
  readonly ok: boolean;
  readonly findings: readonly unknown[];
  readonly sources: {
    readonly ok: boolean;
    readonly records: number;
    readonly verified: number;
    readonly unverified: number;
    readonly forbidden: number;
    readonly unverifiedSources: readonly { source: string; tenant: string; records: number; first: string }[];
    readonly findings: readonly { kind: string; id: string; source?: string; tenant?: string; reason?: string; keyId?: string }[];
  };
}

/** `gatehouse audit verify --topic` as an operator runs it (the admin principal, the trusted keys). */
function verifyTopic(): { code: number | null; report: VerifyReport; text: string } {
  const env = { ...process.env, [SIGNING_ENV.trustedKeys]: trusted, GATEHOUSE_TOPIC_NAMESPACE: namespace };
  const json = spawnSync(process.execPath, [cli, 'audit', 'verify', '--topic', '--json'], { encoding: 'utf8', env, timeout: 120_000 });
  const text = spawnSync(process.execPath, [cli, 'audit', 'verify', '--topic'], { encoding: 'utf8', env, timeout: 120_000 });
  if (json.status === 2) throw new Error(`audit verify failed: ${json.stderr}`);
  return { code: json.status, report: JSON.parse(json.stdout) as VerifyReport, text: text.stdout };
}

async function auditLog(): Promise<{ event: unknown; position: string }[]> {
  const out: { event: unknown; position: string }[] = [];
  await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void out.push({ event: r.event, position: `${r.topic}/${r.partition}/${r.offset}` }) });
  return out;
}

/** A decision the attacker writes in acme's name: "the approval service granted it". */
function claim(source = 'service:approval'): DecisionRecorded {
  return createEvent(DecisionRecordedV1, { source, tenant: 'acme', subject: 'run-honest', correlationId: 'run-honest' }, {
    decisionId: randomUUID(),
    boundary: 'approval',
    outcome: 'allowed',
    code: 'APPROVAL.GRANTED',
    reason: 'approved by a reviewer',
    runId: 'run-honest',
  });
}

beforeAll(async () => {
  kafka = testKafka('security-audit-source');
  namespace = await provisionedNamespace(kafka, 'sec');
  database = await throwawayDatabase();
  const common = { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, [SIGNING_ENV.trustedKeys]: trusted };
  await startService('approval', common);
  exporter = await startService('audit-export', { ...common, ...acmeReader.env, GATEHOUSE_EXPORT_FILE_DIR: siemDir, GATEHOUSE_EXPORT_FILE_FORMATS: 'ocsf' });

  // The honest agent: a guarded agent, as the agent principal, its sink signing with its acme-bound key.
  const agentProducer = await EventProducer.connect(testKafka('security-audit-honest-agent', 'agent'), { namespace });
  try {
    const audit = new AuditLogger({ sink: kafkaAuditSink({ publisher: kafkaAuditPublisher(agentProducer), mode: 'required', source: 'guard:support-bot', defaultTenant: 'acme', agentKey: honestAgent }) });
    const agent = createGuardedAgent({ id: 'support-bot', name: 'Support', instructions: 'x', model: scriptedModel({ text: 'Shipped.' }) as never, allowedRoles: ['support'], policies: [denyPatterns(['internal use only'])], audit });
    const rc = new RequestContext();
    rc.set(ACTOR_CONTEXT_KEY, { id: 'alice', role: 'support' });
    rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'support-bot', runId: 'run-honest', entryPath: 'security' });
    await agent.generate('Where is my order?', { requestContext: rc });
    await agent.generate('Show me the internal use only notes', { requestContext: rc });
    await audit.close();
    honestIds = audit.events().map((e) => e.id);
    // The approval service's own record: it reports an unsigned "approved" it ignored, as service:approval.
    await agentProducer.publish('approvals', createEvent(ApprovalDecidedV1, { source: 'guard:support-bot', tenant: 'acme', subject: 'appr-x' }, { approvalId: 'appr-x', verdict: 'approve', reviewer: { id: 'user:mallory', role: 'approver' } }));
  } finally {
    await agentProducer.close();
  }
  // Both honest producers have checkpointed (the service within a second of its report).
  serviceReportId = await waitFor(
    async () => {
      const log = await auditLog();
      const report = log.map((r) => r.event as DecisionRecorded).find((e) => e.type === 'DecisionRecorded' && e.source === 'service:approval' && e.payload.code === 'SECURITY.UNTRUSTED_GRANT');
      return report && verifyAuditSources(log, keyring).verified === honestIds.length + 1 ? report.id : undefined;
    },
    { timeoutMs: 30_000, what: 'the honest records and their checkpoints' },
  );
}, 180_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(siemDir, { recursive: true, force: true });
});

describe('attack 6: audit records written as another source or tenant', () => {
  it('verifies the honest records of a guarded agent and of the approval service: audit verify exits 0', () => {
    const { code, report, text } = verifyTopic();
    expect(report.sources).toMatchObject({ ok: true, verified: honestIds.length + 1, unverified: 0, forbidden: 0 });
    expect(code).toBe(0);
    expect(text).toContain(`audit sources: ${honestIds.length + 1} verified, 0 unverified, 0 forbidden`);
  });

  it('flags DecisionRecorded as service:approval in acme, without, with a forged and with its own checkpoint: audit verify exits 1', async () => {
    const attacker = await EventProducer.connect(testKafka('security-audit-attacker', 'agent'), { namespace });
    try {
      const append = async (event: DecisionRecorded): Promise<Forgery> => ({ event, at: await attacker.publish('audit', event) });
      // 1. No checkpoint at all.
      forged.bare = await append(claim());
      // 2. A checkpoint in the approval service's name: its key id, a key of the attacker's making.
      forged.forgedCheckpoint = await append(claim());
      const rogue = signingKeyFromPem(TEST_KEYS.approval.keyId, 'approval', generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
      const fake = auditCheckpoint({ source: 'service:approval', producer: 'service:approval#rogue', digests: [eventDigest(forged.forgedCheckpoint.event)] }, rogue);
      await attacker.publish('audit', fake);
      // 3. A checkpoint signed with its own (trusted, globex-bound) claim key.
      forged.ownKey = await append(claim());
      const own = auditCheckpoint({ source: 'service:approval', producer: 'service:approval#mine', digests: [eventDigest(forged.ownKey.event)] }, attackerKey);
      await attacker.publish('audit', own);
      // 4. And as an agent of acme, signed with the globex key.
      forged.otherTenant = await append(claim('guard:support-bot'));
      await attacker.publish('audit', auditCheckpoint({ source: 'guard:support-bot', producer: 'guard:support-bot#mine', digests: [eventDigest(forged.otherTenant.event)] }, attackerKey));
      checkpointIds = { forged: fake.id, ownKey: own.id };
    } finally {
      await attacker.close();
    }

    const { code, report, text } = verifyTopic();
    expect(code).toBe(1);
    const finding = (id: string) => report.sources.findings.find((f) => f.id === id);
    expect(finding(forged.forgedCheckpoint!.event.id)).toMatchObject({ kind: 'forbidden', source: 'service:approval', tenant: 'acme', reason: 'untrusted-checkpoint' });
    expect(finding(checkpointIds.forged)).toMatchObject({ kind: 'untrusted-checkpoint', reason: 'bad-signature', keyId: TEST_KEYS.approval.keyId });
    expect(finding(forged.ownKey!.event.id)).toMatchObject({ kind: 'forbidden', reason: 'forbidden-source', keyId: attackerKey.keyId });
    expect(finding(checkpointIds.ownKey)).toMatchObject({ kind: 'forbidden-checkpoint', keyId: attackerKey.keyId });
    expect(finding(forged.otherTenant!.event.id)).toMatchObject({ kind: 'forbidden', source: 'guard:support-bot', tenant: 'acme', reason: 'forbidden-tenant' });
    const at = forged.bare!.at;
    expect(report.sources.unverifiedSources).toEqual([{ source: 'service:approval', tenant: 'acme', records: 1, first: `${at.topic}/${at.partition}/${at.offset}` }]);
    // The honest records are still verified, and nothing else changed.
    expect(report.sources).toMatchObject({ ok: false, verified: honestIds.length + 1, unverified: 1, forbidden: 3 });
    expect(text).toContain('1 unverified, 3 forbidden');
    expect(text).toMatch(/unverified service:approval tenant acme: 1 records no checkpoint covers/);
  });

  it('flags them for acme’s reader in audit-export: the query API marks each, and the SIEM feed follows each forbidden one with SECURITY.FORBIDDEN_AUDIT_SOURCE', async () => {
    type View = { id: string; source: string; verification: { status: string; reason: string | null; keyId: string | null } };
    const ids = [forged.bare, forged.forgedCheckpoint, forged.ownKey, forged.otherTenant].map((f) => f!.event.id);
    const items = await waitFor(
      async () => {
        const res = await fetch(`${exporter.url}/v1/decisions?tenant=acme&limit=100`, { headers: acmeReader.headers });
        const body = (await res.json()) as { items: View[] };
        const judged = body.items.filter((d) => ids.includes(d.id) && d.verification.status !== 'unverified');
        return judged.length === 3 ? body.items : undefined;
      },
      { timeoutMs: 30_000, what: 'the forgeries judged in the projection' },
    );
    const verdict = (id: string) => items.find((d) => d.id === id)?.verification;
    expect(verdict(forged.bare!.event.id)).toMatchObject({ status: 'unverified' });
    expect(verdict(forged.forgedCheckpoint!.event.id)).toMatchObject({ status: 'forbidden', reason: 'untrusted-checkpoint' });
    expect(verdict(forged.ownKey!.event.id)).toMatchObject({ status: 'forbidden', reason: 'forbidden-source', keyId: attackerKey.keyId });
    expect(verdict(forged.otherTenant!.event.id)).toMatchObject({ status: 'forbidden', reason: 'forbidden-tenant' });
    for (const id of [...honestIds, serviceReportId]) expect(verdict(id)).toMatchObject({ status: 'verified' });
    const res = await fetch(`${exporter.url}/v1/decisions?verification=forbidden`, { headers: acmeReader.headers });
    expect(((await res.json()) as { items: View[] }).items.map((d) => d.id).sort()).toEqual(ids.slice(1).sort());

    const lines = await waitFor(
      () => {
        const all = readdirSync(siemDir).flatMap((f) => readFileSync(path.join(siemDir, f), 'utf8').split('\n').filter(Boolean));
        const parsed = all.map((l) => JSON.parse(l) as { metadata: { uid: string; tenant_uid: string }; status_code: string; unmapped: { verification: { status: string } | null; gatehouse: { causation_id?: string } } });
        return parsed.filter((l) => l.status_code === 'SECURITY.FORBIDDEN_AUDIT_SOURCE').length === 3 && parsed.some((l) => l.metadata.uid === forged.bare!.event.id) ? parsed : undefined;
      },
      { timeoutMs: 30_000, what: 'the forgeries in the OCSF file' },
    );
    const line = (id: string) => lines.find((l) => l.metadata.uid === id);
    expect(ids.map((id) => line(id)?.unmapped.verification?.status)).toEqual(['unverified', 'forbidden', 'forbidden', 'forbidden']);
    expect(honestIds.map((id) => line(id)?.unmapped.verification?.status)).toEqual(honestIds.map(() => 'verified'));
    const security = lines.filter((l) => l.status_code === 'SECURITY.FORBIDDEN_AUDIT_SOURCE');
    expect(security.map((l) => l.unmapped.gatehouse.causation_id).sort()).toEqual(ids.slice(1).sort());
    expect(security.every((l) => l.metadata.tenant_uid === 'acme')).toBe(true);
  });
});
