import { afterAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { refundConfigYaml, tempFiles } from './testing/policy-hazeljs.js';

// Row 9, as a HazelJS user runs it: the built `gatehouse` with `hazel gatekeeper`'s flags.
const cli = path.resolve(import.meta.dirname, '../dist/main.js');
const { file, remove } = tempFiles('gatehouse-hazeljs-cli-');
afterAll(remove);
const run = (args: string[]) => {
  const result = spawnSync(process.execPath, [cli, 'policy', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
};

const CONFIG = file('agent-gatekeeper.yaml', refundConfigYaml({ mode: 'enforce', allowWhen: 'input.tenantId == identity.tenant' }));

describe('gatehouse policy with HazelJS flags (built CLI)', () => {
  it('validate --config agent-gatekeeper.yaml: exit 0 when valid, 1 with the code when not', () => {
    expect(run(['validate', '--config', CONFIG])).toMatchObject({ status: 0, stdout: 'policy validate: hazeljs: 1 policy, valid (HazelJS config: mode enforce, defaultDecision deny)\n' });
    const broken = run(['validate', '--config', file('broken.yaml', 'policies:\n  - id: p\n    version: "1"\n    rules: { allowWhen: "input.amount >> 1" }\n')]);
    expect(broken.status).toBe(1);
    expect(JSON.parse(broken.stdout)).toMatchObject({ valid: false, code: 'GATEKEEPER.EXPRESSION_SYNTAX', details: { policyId: 'p', field: 'rules.allowWhen' } });
  });

  it('simulate --agent --tool --input and explain --invocation decide without executing anything', () => {
    const input = file('input.json', JSON.stringify({ amount: 80, tenantId: 'tenant-a' }));
    const simulated = run(['simulate', '--agent', 'refund-agent', '--tool', 'stripe.refund', '--input', input, '--tenant', 'tenant-a', '--environment', 'production', '--config', CONFIG]);
    expect(simulated.status).toBe(0);
    expect(JSON.parse(simulated.stdout)).toMatchObject({ effect: 'require-approval', policyId: 'refund-agent-stripe-policy' });
    const invocation = file('invocation.json', JSON.stringify({ invocationId: 'inv-1', runId: 'run-1', agentId: 'refund-agent', tenantId: 'tenant-b', toolName: 'stripe.refund', input: { amount: 10, tenantId: 'tenant-a' }, environment: 'production' }));
    const explained = run(['explain', '--invocation', invocation, '--config', CONFIG]);
    expect(explained.status).toBe(0);
    expect(JSON.parse(explained.stdout)).toMatchObject({ decision: { effect: 'deny', policyId: 'refund-agent-stripe-policy:allow-failed' } });
  });

  it('exits 2 with the usage, which shows the HazelJS forms, for a call it cannot run', () => {
    const usage = run(['simulate', '--agent', 'refund-agent']);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('--agent <id> --tool <name>');
  });
});
