import { afterAll, describe, expect, it } from '@jest/globals';
import { runPolicyCommand, PolicyUsageError } from './policy.js';
import { refundConfigYaml, tempFiles } from './testing/policy-hazeljs.js';

// Row 9: `hazel gatekeeper validate | simulate | explain` flags as forms of `gatehouse policy`.
const { file, remove } = tempFiles('gatehouse-policy-hazeljs-');
afterAll(remove);

const CONFIG = refundConfigYaml({ mode: 'audit', policySetId: 'refunds', enforceTenantField: true, allowWhen: 'input.amount <= 100' });
const invocation = (input: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ invocationId: 'inv-1', runId: 'run-1', agentId: 'refund-agent', tenantId: 'tenant-a', toolName: 'stripe.refund', input, environment: 'production', timestamp: '2026-01-01T00:00:00Z', ...extra });

async function run(command: string, argv: string[]): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await runPolicyCommand(command, argv, (text) => void out.push(text));
  return { code, out };
}

describe('gatehouse policy validate --config (HazelJS form)', () => {
  it('validates agent-gatekeeper.yaml as the bundle it becomes, and with --json prints that bundle to publish', async () => {
    const config = file('agent-gatekeeper.yaml', CONFIG);
    expect(await run('validate', ['--config', config])).toEqual({ code: 0, out: ['policy validate: refunds: 1 policy, valid (HazelJS config: mode audit, defaultDecision deny)'] });
    const json = await run('validate', ['--config', config, '--json']);
    const report = JSON.parse(json.out[0]!) as { valid: boolean; policies: unknown[]; bundle: { policySetId: string; policies: { id: string }[] } };
    expect(report).toMatchObject({ valid: true, policyCount: 1, mode: 'audit', policies: [{ id: 'refund-agent-stripe-policy', version: '1.0.0', priority: 100 }] });
    expect(report.bundle.policies.map((p) => p.id)).toEqual(['refund-agent-stripe-policy', 'refund-agent-stripe-policy:allow-failed']);
    // The printed bundle is itself a valid bundle for `gatehouse policy validate` and the policy service.
    expect((await run('validate', [file('bundle.json', JSON.stringify(report.bundle))])).code).toBe(0);
  });

  it('refuses (exit 1, a coded JSON line) a config whose expression does not compile, with the policy, field and position', async () => {
    const broken = await run('validate', ['--config', file('broken.yaml', CONFIG.replace('"input.amount <= 100"', '"input.amount <== 100"'))]);
    expect(broken.code).toBe(1);
    expect(JSON.parse(broken.out[0]!)).toMatchObject({ valid: false, code: 'GATEKEEPER.EXPRESSION_SYNTAX', details: { policyId: 'refund-agent-stripe-policy', field: 'rules.allowWhen', position: expect.any(Number) } });
  });

  it('refuses a config in code: its function rules run in-process only and cannot be validated or published', async () => {
    const code = await run('validate', ['--config', file('agent-gatekeeper.ts', 'export default { policies: [{ id: "p", version: "1", rules: { allowWhen: () => true } }] };')]);
    expect(code.code).toBe(1);
    expect(JSON.parse(code.out[0]!)).toMatchObject({ valid: false, code: 'HAZELJS.CONFIG' });
  });

  it('refuses what it cannot carry, by name (a classification match)', async () => {
    const result = await run('validate', ['--config', file('classified.yaml', CONFIG.replace('environments: [production] }', 'environments: [production], classifications: [destructive] }'))]);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.out[0]!)).toMatchObject({ code: 'HAZELJS.CONFIG', details: { field: expect.stringContaining('classifications') } });
  });

  it('is a usage error without exactly one --config file', async () => {
    await expect(run('validate', ['--config'])).rejects.toBeInstanceOf(PolicyUsageError);
  });
});

describe('gatehouse policy simulate --agent --tool --input / explain --invocation (HazelJS form)', () => {
  it('simulates a call given by flags against the config, as enforce mode would decide it (HazelJS simulate)', async () => {
    const config = file('c.yaml', CONFIG);
    const simulate = (input: object, tenant = 'tenant-a') => run('simulate', ['--agent', 'refund-agent', '--tool', 'stripe.refund', '--input', file(`in-${Math.random()}.json`, JSON.stringify(input)), '--tenant', tenant, '--environment', 'production', '--config', config]);
    const small = await simulate({ amount: 40, tenantId: 'tenant-a' });
    expect(small.code).toBe(0);
    expect(JSON.parse(small.out[0]!)).toMatchObject({ effect: 'allow', mode: 'enforce', policyId: 'refund-agent-stripe-policy', bundle: { policySetId: 'refunds' } });
    expect(JSON.parse((await simulate({ amount: 80, tenantId: 'tenant-a' })).out[0]!)).toMatchObject({ effect: 'require-approval' });
    expect(JSON.parse((await simulate({ amount: 40, tenantId: 'tenant-b' })).out[0]!)).toMatchObject({ effect: 'deny', policyId: 'refund-agent-stripe-policy' });
  });

  it("takes HazelJS's defaults: no --input is {}, no --environment is development", async () => {
    const result = await run('simulate', ['--agent', 'refund-agent', '--tool', 'stripe.refund', '--config', file('c2.yaml', CONFIG)]);
    expect(JSON.parse(result.out[0]!)).toMatchObject({ effect: 'deny', reason: 'no policy allows this call (default deny)' });
  });

  it('explains a saved invocation against the config or a gatehouse bundle', async () => {
    const inv = file('invocation.json', invocation({ amount: 80, tenantId: 'tenant-a' }));
    const explained = JSON.parse((await run('explain', ['--invocation', inv, '--config', file('c3.yaml', CONFIG)])).out[0]!) as { decision: { effect: string }; policies: { policyId: string; status: string }[] };
    expect(explained.decision.effect).toBe('require-approval');
    expect(explained.policies.map((p) => [p.policyId, p.status])).toEqual([['refund-agent-stripe-policy', 'decided'], ['refund-agent-stripe-policy:allow-failed', 'no-rule-fired']]);
    const bundle = file('b.json', JSON.stringify({ policySetId: 'refunds', policies: [{ id: 'all', version: '1', priority: 0, match: {}, rules: { allowWhen: 'identity.tenant == "tenant-a"' } }] }));
    expect(JSON.parse((await run('explain', ['--invocation', inv, '--bundle', bundle])).out[0]!)).toMatchObject({ decision: { effect: 'allow', policyId: 'all' } });
  });

  it('is a usage error for a malformed invocation, two ways of giving the call, or no policy source', async () => {
    const config = file('c4.yaml', CONFIG);
    await expect(run('explain', ['--invocation', file('bad.json', invocation({ amount: 1 }, { tenantID: 'x' })), '--config', config])).rejects.toThrow(/tenantID/);
    await expect(run('explain', ['--invocation', file('bad2.json', '{not json'), '--config', config])).rejects.toBeInstanceOf(PolicyUsageError);
    await expect(run('simulate', ['--agent', 'a', '--tool', 't', '--context', file('ctx.json', '{}'), '--config', config])).rejects.toBeInstanceOf(PolicyUsageError);
    await expect(run('simulate', ['--agent', 'a', '--tool', 't'])).rejects.toThrow(/exactly one of --bundle <file>, --config <file> or --service <url>/);
    await expect(run('simulate', ['--agent', 'a', '--config', config])).rejects.toThrow(/--agent <id> and --tool <name> go together/);
  });
});
