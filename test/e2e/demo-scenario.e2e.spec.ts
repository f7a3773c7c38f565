import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONTENT_KEYS_ENV, newContentKeyEntry } from '@gatehouse/contracts';
import { replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { agentKafkaEnv } from '../src/support/kafka-auth.js';
import { ledgerAgent, ledgerAgentsEnv } from '../src/support/ledger-agent.js';
import { killAll, ROOT, type Started, startNode, startService } from '../src/support/processes.js';
import { trustedKeysEnv } from '../src/support/signing.js';

// The demo's scenario as assertions: the four services as separate processes on the real broker
// and PostgreSQL, and the very script `npm run demo` runs (infra/demo/scenario.mjs) as the agent
// process. The script reports what it saw in a summary file; every claim of that summary that the
// suite can check from outside — the audit topic, the approval service, the audit projection, the
// SIEM file — is checked there too.

interface Summary {
  readonly runId: string;
  readonly scenes: {
    readonly wrongRole: { code: string; modelCalls: number };
    readonly secretPrompt: { code: string; modelCalls: number };
    readonly cardStream: { code: string; shown: string; leaked: boolean };
    readonly tools: { lookups: number; egressRefused: boolean; outbound: string[]; crmPosts: number; answer: string };
    readonly policy: { firstRevision: number; secondRevision: number; loaded: boolean; deniedUnder: string; refundsRun: number; modelSawRefusal: boolean };
    readonly refund: {
      approvalId: string;
      requested: Record<string, unknown>;
      executions: number;
      replayed: boolean;
      onTopic: { records: number; sealed: number; uses: number };
      secondDecision: { status: number; code: string };
      answer: string;
    };
  };
  readonly decisions: readonly { id: string; boundary: string; decision: string; code: string }[];
}

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-demo-e2e-'));
const siemDir = path.join(dir, 'siem');
const summaryFile = path.join(dir, 'summary.json');
const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([
  { id: 'user:dana', role: 'payments-approver', tenants: ['acme'], connectors: '*', apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') },
]);
const auth = { authorization: `Bearer ${reviewerKey}` };
const operatorKey = `ok_${randomUUID()}`;
const operators = JSON.stringify([
  { id: 'user:olga', role: 'policy-admin', policySets: ['support'], publish: true, apiKeySha256: createHash('sha256').update(operatorKey).digest('hex') },
]);

// The security team's SIEM integration, as in the demo: it may read tenant acme's decisions.
const siemReader = auditReader(['acme'], 'siem:acme');
// The support agent's key at the idempotency ledger, as in the demo: bound to tenant acme.
const supportBot = ledgerAgent(['acme'], 'agent:support-bot');
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
const services: Record<string, Started & { url: string }> = {};
let scenario: Started;
let exitCode: number | null;
let summary: Summary;
let scenarioStarted: string;

beforeAll(async () => {
  const kafka = testKafka('demo-e2e');
  namespace = await provisionedNamespace(kafka, 'demo');
  database = await throwawayDatabase();
  // Tenant acme's content key, held by the services and the agent, as the demo sets it up.
  const common = { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, [CONTENT_KEYS_ENV.keys]: JSON.stringify([newContentKeyEntry('acme')]) };
  // One at a time: four NestJS processes starting together on two cores only slow each other.
  services['policy'] = await startService('policy', { ...common, GATEHOUSE_POLICY_OPERATORS: operators });
  services['approval'] = await startService('approval', { ...common, GATEHOUSE_APPROVAL_REVIEWERS: reviewers });
  services['idempotency-ledger'] = await startService('idempotency-ledger', { ...common, ...ledgerAgentsEnv(supportBot) });
  services['audit-export'] = await startService('audit-export', { ...common, ...siemReader.env, GATEHOUSE_EXPORT_FILE_DIR: siemDir });
  scenarioStarted = new Date().toISOString();
  scenario = startNode(path.join(ROOT, 'infra/demo/scenario.mjs'), ['--auto-approve'], {
    ...common,
    ...agentKafkaEnv(),
    GATEHOUSE_APPROVAL_URL: services['approval'].url,
    GATEHOUSE_LEDGER_URL: services['idempotency-ledger'].url,
    ...supportBot.agentEnv,
    GATEHOUSE_POLICY_URL: services['policy'].url,
    GATEHOUSE_DEMO_OPERATOR_KEY: operatorKey,
    GATEHOUSE_DEMO_REVIEWER_KEY: reviewerKey,
    GATEHOUSE_DEMO_SUMMARY_FILE: summaryFile,
  });
  exitCode = await scenario.exited();
  if (exitCode !== 0) throw new Error(`the scenario exited ${exitCode}: ${scenario.output().slice(-3000)}`);
  summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary;
}, 240_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the demo scenario against the whole suite', () => {
  it('refuses a caller with the wrong role and a prompt with a secret before the model runs', () => {
    expect(exitCode).toBe(0);
    expect(summary.scenes.wrongRole).toEqual({ code: 'RBAC.ROLE_NOT_ALLOWED', modelCalls: 0 });
    expect(summary.scenes.secretPrompt).toEqual({ code: 'POLICY.DENIED', modelCalls: 0 });
    // The secret is not echoed anywhere the user or an operator reads.
    expect(scenario.output()).not.toContain('AKIAIOSFODNN7EXAMPLE');
  });

  it('stops a streamed card number under hold-back: no digit of it reaches the user', () => {
    expect(summary.scenes.cardStream).toMatchObject({ code: 'POLICY.DENIED', leaked: false });
    expect(summary.scenes.cardStream.shown).not.toMatch(/4111|1111/);
    expect(scenario.output()).not.toMatch(/4111 1111/);
  });

  it('runs the read connector and blocks the injected call to an undeclared host before any request', () => {
    const { tools } = summary.scenes;
    expect(tools.lookups).toBe(1);
    expect(tools.egressRefused).toBe(true);
    expect(tools.outbound).toHaveLength(1);
    expect(tools.outbound[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/orders\/1042$/);
    expect(tools.answer).toBe('Order 1042 has shipped and arrives tomorrow.');
  });

  it('runs the refund exactly once, with the reviewer’s edit, though the agent retried it', async () => {
    const { refund } = summary.scenes;
    expect(refund.requested).toEqual({ orderId: '1042', amount: 25 });
    expect(refund.executions).toBe(1);
    expect(refund.replayed).toBe(true);
    // On the topic: the request and the decision sealed for acme, the grant used once.
    expect(refund.onTopic).toEqual({ records: 2, sealed: 2, uses: 1 });
    expect(refund.secondDecision).toEqual({ status: 409, code: 'APPROVAL.ALREADY_DECIDED' });
    // The approval service holds the one decision, with the edited amount and who made it.
    const res = await fetch(`${services['approval']!.url}/v1/approvals/${refund.approvalId}`, { headers: auth });
    expect(res.status).toBe(200);
    const approval = (await res.json()) as Record<string, unknown>;
    expect(approval).toMatchObject({ status: 'approved-with-edits', editedArguments: { orderId: '1042', amount: 20 }, settledBy: { id: 'user:dana' }, comment: 'partial refund' });
  });

  it('enforces the policy service’s new bundle version in the running agent, and the denial names it', async () => {
    const { policy } = summary.scenes;
    expect(policy.secondRevision).toBe(policy.firstRevision + 1);
    expect(policy).toMatchObject({ loaded: true, deniedUnder: `gatekeeper.bundle:support@${policy.secondRevision}`, refundsRun: 0, modelSawRefusal: true });
    // The policy service lists both versions; the newest is the one the guard enforced.
    const res = await fetch(`${services['policy']!.url}/v1/policy-sets/support/versions`, { headers: { authorization: `Bearer ${operatorKey}` } });
    expect(res.status).toBe(200);
    const listed = JSON.stringify(await res.json());
    expect(listed).toContain(`"revision":${policy.secondRevision}`);
    expect(listed).toContain(`"revision":${policy.firstRevision}`);
  });

  it('publishes every decision of the run to the audit topic exactly once, and the refund’s story in order', async () => {
    const onTopic = new Map<string, number>();
    await replayTopic(testKafka('demo-e2e-audit'), 'audit', {
      namespace,
      onRecord: ({ event }) => {
        if (event.subject === summary.runId) onTopic.set(event.id, (onTopic.get(event.id) ?? 0) + 1);
      },
    });
    const ids = summary.decisions.map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...onTopic.keys()].sort()).toEqual([...ids].sort());
    expect([...onTopic.values()].every((n) => n === 1)).toBe(true);
    const codes = summary.decisions.map((d) => `${d.decision}:${d.code}`);
    expect(codes).toEqual(expect.arrayContaining(['denied:RBAC.ROLE_NOT_ALLOWED', 'denied:POLICY.DENIED', 'denied:CONNECTOR.EGRESS_HOST_NOT_DECLARED', 'allowed:CONNECTOR.REPLAYED']));
    // The retry (another tool call id, the same idempotency key) replays the recorded result:
    // nothing runs, so no reviewer is asked again and the grant, used once, is not used again.
    const refundStory = codes.filter((c) => /APPROVAL|CONNECTOR\.ALLOWED|REPLAYED/.test(c)).slice(-4);
    expect(refundStory).toEqual(['approval-required:CONNECTOR.APPROVAL_PENDING', 'allowed:CONNECTOR.APPROVAL_GRANTED', 'allowed:CONNECTOR.ALLOWED', 'allowed:CONNECTOR.REPLAYED']);
  });

  it('shows the run’s timeline in the audit-export query API and each decision once in the OCSF file', async () => {
    const ids = summary.decisions.map((d) => d.id);
    const timeline = await waitFor(
      async () => {
        const res = await fetch(`${services['audit-export']!.url}/v1/runs/${summary.runId}/timeline`, { headers: siemReader.headers });
        const body = (await res.json()) as { decisions: { id: string; code: string; toolId: string | null }[] };
        return body.decisions.length >= ids.length ? body.decisions : undefined;
      },
      { timeoutMs: 30_000, what: 'the run in the audit projection' },
    );
    expect(timeline.map((d) => d.id)).toEqual(ids); // log order is the order the guard decided in
    expect(timeline.find((d) => d.code === 'CONNECTOR.REPLAYED')?.toolId).toBe('payments.refund');

    const lines = await waitFor(
      () => {
        // The export creates the directory with its first file.
        const files = existsSync(siemDir) ? readdirSync(siemDir).filter((f) => f.startsWith('ocsf-')) : [];
        const all = files.flatMap((f) => readFileSync(path.join(siemDir, f), 'utf8').split('\n').filter(Boolean));
        const ofRun = all.filter((l) => l.includes(summary.runId));
        return ofRun.length >= ids.length ? ofRun : undefined;
      },
      { timeoutMs: 30_000, what: 'the run in the OCSF file' },
    );
    const seen = new Map<string, number>();
    for (const line of lines) {
      const text = JSON.stringify(JSON.parse(line) as unknown);
      const id = ids.find((candidate) => text.includes(candidate));
      if (id) seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    expect([...seen.keys()].sort()).toEqual([...ids].sort());
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    // Nothing inspected reaches the SIEM: not the secret, not the card.
    expect(lines.join('\n')).not.toMatch(/AKIAIOSFODNN7EXAMPLE|4111 1111/);
  });

  it('verifies the hash chain and the source of every decision on the audit topic (gatehouse audit verify --topic, demo step 9)', () => {
    // The operator's view: the agent's decisions are vouched for by its claim key's checkpoints, nothing is forbidden.
    const cli = spawnSync(process.execPath, [path.join(ROOT, 'cli/dist/main.js'), 'audit', 'verify', '--topic', '--namespace', namespace], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...trustedKeysEnv() } });
    expect(cli.stdout).toContain('chain intact');
    expect(cli.stdout).toMatch(/audit sources: \d+ verified, 0 unverified, 0 forbidden/);
    expect(cli.status).toBe(0);
  });

  it('replays the run’s gatekeeper decisions under the demo’s candidate policy (what-if, demo step 11)', () => {
    const cli = spawnSync(
      process.execPath,
      [path.join(ROOT, 'cli/dist/main.js'), 'policy', 'what-if', '--bundle', path.join(ROOT, 'infra/demo/candidate-policy.yaml'), '--from', scenarioStarted, '--environment', 'demo', '--namespace', namespace, '--json'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(cli.status).toBe(0);
    const report = JSON.parse(cli.stdout) as { decisions: number; counts: Record<string, number>; rows: { change: string; decision: { toolId: string; effect: string } }[] };
    // The lookup, the CRM note, the refund, the reviewer's edit of it (judged again as the proposed
    // call was) and its retry under revision 1, the refund refused under revision 2.
    expect(report.decisions).toBe(6);
    expect(report.counts).toEqual({ 'newly-denied': 1, 'newly-allowed': 0, 'newly-approval-gated': 4, unchanged: 1, undetermined: 0 });
    expect(report.rows.map((r) => `${r.change}:${r.decision.toolId}:${r.decision.effect}`).sort()).toEqual([
      'newly-approval-gated:payments.refund:allow',
      'newly-approval-gated:payments.refund:allow',
      'newly-approval-gated:payments.refund:allow',
      'newly-approval-gated:payments.refund:deny',
      'newly-denied:crm.note:allow',
    ]);
  });
});
