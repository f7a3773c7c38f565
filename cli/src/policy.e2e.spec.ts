import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { topicName } from '@gatehouse/contracts';
import { signingEnv, TEST_KEYS } from '@gatehouse/contracts/testing';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { createTestDatabase, freePort, type TestDatabase } from '@gatehouse/service-runtime/testing';

// `gatehouse policy`: validate, simulate and explain on local files, and against the built
// policy service started as a process. None of it executes a tool or records a decision.
const cli = path.resolve(import.meta.dirname, '../dist/main.js');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-policy-cli-'));
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};

const BUNDLE = `policySetId: refunds
policies:
  - id: refund-limit
    version: "1"
    priority: 10
    match: { tools: ["payments.refund"] }
    rules: { denyWhen: "input.amount > 100" }
  - id: support-may-refund
    version: "1"
    priority: 0
    match: { tools: ["payments.refund"] }
    rules: { allowWhen: "identity.actor.role == 'support'" }
`;
const context = (amount: number) => JSON.stringify({ identity: { actor: { id: 'user:olga', role: 'support' } }, call: { tool: 'payments.refund' }, input: { amount } });

function run(args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [cli, 'policy', ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

let service: ChildProcess | undefined;
let database: TestDatabase | undefined;
let keys: { env: Record<string, string>; remove: () => void } | undefined;

afterAll(async () => {
  service?.kill('SIGTERM');
  await database?.drop();
  keys?.remove();
  rmSync(dir, { recursive: true, force: true });
});

describe('gatehouse policy on local files', () => {
  it('validates a bundle, and names the field of an invalid one (exit 1)', () => {
    expect(run(['validate', file('ok.yaml', BUNDLE)])).toMatchObject({ status: 0, stdout: 'policy validate: refunds: 2 policies, valid\n' });
    const bad = run(['validate', file('bad.yaml', 'policySetId: refunds\npolicies:\n  - id: x\n')]);
    expect(bad.status).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ valid: false, code: 'GATEKEEPER.BUNDLE_INVALID', details: { field: expect.stringContaining('policies.0') } });
    expect(run(['validate']).status).toBe(2);
  });

  it('compiles every expression as a guard would: a bundle whose condition does not parse is invalid, at its position (exit 1)', () => {
    const broken = BUNDLE.replace('input.amount > 100', 'input.amount >> 100');
    expect(broken).not.toBe(BUNDLE);
    const result = run(['validate', file('broken.yaml', broken)]);
    expect(result.status).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ valid: false, code: 'GATEKEEPER.EXPRESSION_SYNTAX', details: { policyId: 'refund-limit', field: 'rules.denyWhen', position: expect.any(Number) } });
    // A predicate is the guard's own code: named, not judged.
    const withPredicate = BUNDLE.replace('denyWhen: "input.amount > 100"', 'denyWhen: { predicate: fraudScoreHigh }');
    expect(withPredicate).not.toBe(BUNDLE);
    expect(run(['validate', file('predicate.yaml', withPredicate)])).toMatchObject({ status: 0, stdout: "policy validate: refunds: 2 policies, valid (needs the guard's predicates: fraudScoreHigh)\n" });
  });

  it('simulates and explains a call against a bundle file', () => {
    const denied = run(['simulate', '--bundle', file('b.yaml', BUNDLE), '--context', file('c.json', context(500))]);
    expect(denied.status).toBe(0);
    expect(JSON.parse(denied.stdout)).toMatchObject({ effect: 'deny', policyId: 'refund-limit', ruleId: 'denyWhen' });
    const explained = JSON.parse(run(['explain', '--bundle', file('b.yaml', BUNDLE), '--context', file('c2.json', context(50))]).stdout) as { decision: { effect: string }; policies: { policyId: string; status: string }[] };
    expect(explained.decision.effect).toBe('allow');
    expect(explained.policies.map((p) => [p.policyId, p.status])).toEqual([
      ['refund-limit', 'no-rule-fired'],
      ['support-may-refund', 'decided'],
    ]);
    expect(run(['simulate', '--context', file('c3.json', context(1))]).status).toBe(2);
  });
});

let namespace = '';
const RECORDER_KEYS: Record<string, string> = { support: `pk_${randomUUID()}`, intern: `pk_${randomUUID()}` };

describe('gatehouse policy against the policy service', () => {
  beforeAll(async () => {
    namespace = await provisionedNamespace(testKafka('policy-cli-e2e'));
    database = await createTestDatabase();
    keys = signingEnv(TEST_KEYS.policy);
    const port = await freePort();
    const apiKey = `pk_${randomUUID()}`;
    process.env['GATEHOUSE_POLICY_API_KEY'] = apiKey;
    const digest = (key: string) => createHash('sha256').update(key).digest('hex');
    // Decisions are recorded as the operator asking (its role), so one recording operator per role.
    const recorders = Object.entries(RECORDER_KEYS).map(([role, key]) => ({ id: `user:${role}`, role, apiKeySha256: digest(key), policySets: ['refunds'], tenants: ['acme'], agent: 'support-bot' }));
    const operators = JSON.stringify([{ id: 'user:ops', role: 'policy-admin', apiKeySha256: digest(apiKey), policySets: '*', publish: true }, ...recorders]);
    service = spawn(process.execPath, [path.resolve(import.meta.dirname, '../../services/policy/dist/main.js')], {
      env: { ...process.env, ...keys.env, GATEHOUSE_PORT: String(port), GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_POLICY_OPERATORS: operators },
      stdio: 'ignore',
    });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i += 1) {
      const up = await fetch(`${url}/health`).then((r) => r.ok, () => false);
      if (up) break;
      if (i > 300) throw new Error('policy service did not start');
      await new Promise((r) => setTimeout(r, 200));
    }
    process.env['GATEHOUSE_POLICY_SERVICE_URL'] = url;
    const published = await fetch(`${url}/v1/policy-sets/refunds/versions`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ document: BUNDLE }) });
    expect(published.status).toBe(201);
  }, 90_000);

  it('simulates and explains through the service, at the newest or a given revision', () => {
    const url = process.env['GATEHOUSE_POLICY_SERVICE_URL'] ?? '';
    const simulated = run(['simulate', '--service', url, '--policy-set', 'refunds', '--context', file('s.json', context(500))]);
    expect(simulated.status).toBe(0);
    expect(JSON.parse(simulated.stdout)).toMatchObject({ effect: 'deny', bundle: { policySetId: 'refunds', revision: 1 } });
    const explained = run(['explain', '--service', url, '--policy-set', 'refunds', '--revision', '1', '--context', file('e.json', context(5))]);
    expect(JSON.parse(explained.stdout)).toMatchObject({ decision: { effect: 'allow' } });
    const missing = run(['simulate', '--service', url, '--policy-set', 'shipping', '--context', file('m.json', context(5))]);
    expect(missing.status).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ code: 'POLICY.NOT_FOUND' });
    expect(run(['simulate', '--service', url, '--policy-set', 'refunds', '--context', file('n.json', context(5))], { GATEHOUSE_POLICY_API_KEY: '' }).status).toBe(2);
  });

  it('what-if: replays the recorded decisions since a time under a candidate bundle, decision by decision, and writes nothing', async () => {
    const url = process.env['GATEHOUSE_POLICY_SERVICE_URL'] ?? '';
    const evaluate = async (role: string, tool: string, amount: number) => {
      const response = await fetch(`${url}/v1/policy-sets/refunds/evaluate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${RECORDER_KEYS[role] ?? ''}`, 'content-type': 'application/json' },
        body: JSON.stringify({ identity: { tenant: 'acme' }, call: { tool }, input: { amount } }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { effect: string }).effect;
    };
    expect(await evaluate('support', 'orders.read', 0)).toBe('deny'); // before --from: not replayed
    await new Promise((resolve) => setTimeout(resolve, 50));
    const from = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([
      await evaluate('support', 'payments.refund', 50),
      await evaluate('support', 'payments.refund', 500),
      await evaluate('intern', 'payments.refund', 5),
      await evaluate('support', 'orders.export', 0),
      await evaluate('support', 'orders.read', 0),
    ]).toEqual(['allow', 'deny', 'deny', 'deny', 'deny']);

    const candidate = file('candidate.yaml', `policySetId: refunds
policies:
  - id: refund-freeze
    version: "1"
    priority: 20
    match: { tools: ["payments.refund"] }
    rules: { denyWhen: "identity.actor.role == 'support'" }
  - id: refund-limit
    version: "1"
    priority: 10
    match: { tools: ["payments.refund"] }
    rules: { denyWhen: "input.amount > 100" }
  - id: interns-may-refund
    version: "1"
    priority: 0
    match: { tools: ["payments.refund"] }
    rules: { allowWhen: "identity.actor.role == 'intern'" }
  - id: exports-need-approval
    version: "1"
    priority: 5
    match: { tools: ["orders.export"] }
    rules: { requireApprovalWhen: "true" }
  - id: reads
    version: "1"
    priority: 1
    match: { tools: ["orders.read"] }
    rules: { allowWhen: "true" }
`);
    const admin = testKafka('policy-cli-what-if').admin();
    await admin.connect();
    // Disconnected whatever fails: an open admin keeps Jest from exiting.
    try {
      const auditEnd = async () => (await admin.fetchTopicOffsets(topicName('audit', namespace))).map((o) => o.high).join(',');
      // The service signs a checkpoint over its decisions within a second of them: measure once the log is quiet.
      let before = await auditEnd();
      for (let attempt = 0; attempt < 20; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const now = await auditEnd();
        if (now === before) break;
        before = now;
      }
      // The policy service appends its decisions asynchronously to its answer: wait until all six are on the log.
      let report: { decisions: number; counts: Record<string, number>; rows: { change: string; candidate?: string; policyId?: string; decision: { toolId: string; effect: string; bundle: string; actor?: { role: string } } }[] } | undefined;
      for (let attempt = 0; attempt < 50; attempt += 1) {
        const result = run(['what-if', '--bundle', candidate, '--from', from, '--namespace', namespace, '--json']);
        expect(result.status).toBe(0);
        report = JSON.parse(result.stdout) as typeof report;
        if (report!.decisions === 5) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(report!.counts).toEqual({ 'newly-denied': 1, 'newly-allowed': 1, 'newly-approval-gated': 1, unchanged: 1, undetermined: 1 });
      const rows = Object.fromEntries(report!.rows.map((r) => [r.change, r]));
      expect(rows['newly-denied']).toMatchObject({ candidate: 'deny', policyId: 'refund-freeze', decision: { toolId: 'payments.refund', effect: 'allow', bundle: 'refunds@1', actor: { role: 'support' } } });
      expect(rows['newly-allowed']).toMatchObject({ candidate: 'allow', policyId: 'reads', decision: { toolId: 'orders.read', effect: 'deny' } });
      expect(rows['newly-approval-gated']).toMatchObject({ candidate: 'require-approval', policyId: 'exports-need-approval', decision: { toolId: 'orders.export' } });
      // The intern's refund would turn on the amount, which no record holds: undetermined, not guessed.
      expect(rows['undetermined']).toMatchObject({ policyId: 'refund-limit', decision: { actor: { role: 'intern' } } });
      expect(rows['undetermined']?.candidate).toBeUndefined();

      const text = run(['what-if', '--bundle', candidate, '--from', from, '--namespace', namespace]);
      expect(text.stdout.split('\n')[0]).toBe(`policy what-if: 5 recorded decisions since ${from} under refunds@candidate: 1 newly denied, 1 newly allowed, 1 newly approval-gated, 1 unchanged, 1 undetermined without the arguments`);
      expect(JSON.parse(run(['what-if', '--bundle', candidate, '--from', String(Date.now() + 60_000), '--namespace', namespace, '--json']).stdout)).toMatchObject({ decisions: 0 });
      expect(run(['what-if', '--bundle', candidate, '--from', 'yesterday-ish', '--namespace', namespace]).status).toBe(2);
      expect(run(['what-if', '--from', from, '--namespace', namespace]).stderr).toContain('what-if needs --bundle');
      expect(run(['what-if', '--bundle', candidate, '--namespace', namespace]).stderr).toContain('what-if needs --from');
      expect(run(['what-if', '--bundle', file('broken.yaml', 'policySetId: x\npolicies: [{ id: y }]\n'), '--from', from, '--namespace', namespace]).status).toBe(1);
      // It read the log and wrote nothing to it.
      expect(await auditEnd()).toBe(before);
    } finally {
      await admin.disconnect();
    }
  }, 60_000);
});
