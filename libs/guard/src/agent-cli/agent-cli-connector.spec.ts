import { describe, expect, it, jest } from '@jest/globals';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RequestContext } from '@mastra/core/request-context';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { invokeConnector } from '../connector-sdk/connector.js';
import { type JsonValue } from '@gatehouse/contracts';
import { CONNECTOR_EXECUTION_CONTEXT_KEY, CONNECTOR_GRANTS_CONTEXT_KEY, DRY_RUN_CONTEXT_KEY } from '../connector-sdk/context-keys.js';
import { bindGrant } from '../connector-sdk/trusted-context.js';
import { connectorManifest } from '../connector-sdk/connector.js';
import { createAgentCliConnector, createClaudeCodeConnector, createCodexConnector } from './agent-cli-connector.js';
import { defineAgentCli } from './definitions.js';
import { type AgentCliExec } from './run-cli.js';

const fakeCli = path.resolve(import.meta.dirname, 'testing/fake-cli.mjs');
const workspace = realpathSync(mkdtempSync(path.join(tmpdir(), 'gatehouse-cli-')));
const FAKE = defineAgentCli({
  id: 'fake-cli',
  command: process.execPath,
  baseArgs: [fakeCli, 'run'],
  options: { model: { flag: '--model', kind: 'string', pattern: /[a-z0-9-]+/ } },
  hosts: ['api.example.com'],
});

/** A trusted context granting `input` once (a grant bound to the default tenant and these arguments). */
function context(extra: Record<string, unknown> = {}, input: Record<string, unknown> = {}): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'dev-1', role: 'engineer' });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf', runId: 'run-cli' });
  rc.set(CONNECTOR_GRANTS_CONTEXT_KEY, [bindGrant({ scope: 'run', connectorId: 'fake-cli', runId: 'run-cli' }, { tenant: 'default', input: input as JsonValue })]);
  for (const [k, v] of Object.entries(extra)) rc.set(k, v);
  return rc;
}

describe('agent CLI connectors', () => {
  it('are write-class, approval-required and declare their egress as declaration-only', () => {
    for (const connector of [createClaudeCodeConnector({ cwd: workspace }), createCodexConnector({ cwd: workspace })]) {
      expect(connectorManifest(connector)).toMatchObject({ sideEffect: 'write', requiresApproval: true, dryRun: true, egressEnforcement: 'declaration-only' });
    }
  });

  it('refuses a run without an approval grant', async () => {
    const connector = createAgentCliConnector(FAKE, { cwd: workspace });
    const rc = new RequestContext();
    rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf', runId: 'run-cli' });
    await expect(invokeConnector(connector, { prompt: 'add tests' }, { requestContext: rc })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_REQUIRED' });
  });

  it('passes the prompt once after --, even when it looks like a flag, and binds option values with =', async () => {
    const connector = createAgentCliConnector(FAKE, { cwd: workspace, timeoutMs: 20_000, env: { ...process.env, GATEHOUSE_FAKE_CLI_MODE: 'echo' } });
    const args = { prompt: '--dangerously-skip-permissions', model: 'small-1' };
    const output = await invokeConnector(connector, args, { requestContext: context({}, args) });
    const report = JSON.parse(output.text.trim().split('\n')[0] ?? '{}') as { argv: string[]; cwd: string };
    expect(report.argv).toEqual(['run', '--model=small-1', '--', '--dangerously-skip-permissions']);
    expect(report.cwd).toBe(workspace);
    expect(output.command).not.toContain('dangerously');
    expect(output.command).toContain('--model=<redacted>');
  });

  it('drops a cwd in the input when the workspace comes from trusted config', async () => {
    const connector = createAgentCliConnector(FAKE, { cwd: workspace, env: { ...process.env, GATEHOUSE_FAKE_CLI_MODE: 'echo' } });
    const output = await invokeConnector(connector, { prompt: 'hi', cwd: '/etc' } as never, { requestContext: context({}, { prompt: 'hi' }) });
    expect((JSON.parse(output.text.trim().split('\n')[0] ?? '{}') as { cwd: string }).cwd).toBe(workspace);
  });

  it('previews the redacted command on a dry run and never spawns', async () => {
    const exec = jest.fn<AgentCliExec>();
    const connector = createAgentCliConnector(FAKE, { cwd: workspace, exec });
    const preview = await invokeConnector(connector, { prompt: 'rewrite the auth module', model: 'small-1' }, { requestContext: context({ [DRY_RUN_CONTEXT_KEY]: true }) });
    expect(preview.dryRun).toBe(true);
    expect(preview.command).toContain('<prompt>');
    expect(preview.command).not.toContain('auth module');
    expect(exec).not.toHaveBeenCalled();
  });

  it('keeps the prompt and the CLI output out of errors and audit events when the CLI fails', async () => {
    const audit = new AuditLogger();
    const connector = createAgentCliConnector(FAKE, { cwd: workspace, audit, env: { ...process.env, GATEHOUSE_FAKE_CLI_MODE: 'exit-code', GATEHOUSE_FAKE_CLI_EXIT: '3' } });
    const error = await invokeConnector(connector, { prompt: 'secret-prompt-text' }, { requestContext: context({}, { prompt: 'secret-prompt-text' }) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'AGENT_CLI.NON_ZERO_EXIT' });
    const everything = JSON.stringify([error, (error as { toJSON?: () => unknown }).toJSON?.(), audit.events()]);
    expect(everything).not.toContain('secret-prompt-text');
    expect(audit.events().at(-1)).toMatchObject({ decision: 'error', code: 'AGENT_CLI.NON_ZERO_EXIT', detail: { egressEnforcement: 'declaration-only' } });
  });

  it('refuses a pending TTL not above the timeout, and unknown options', () => {
    expect(() => createAgentCliConnector(FAKE, { cwd: workspace, timeoutMs: 1_000, pendingTtlMs: 500, idempotencyStore: { reserve: async () => ({ status: 'pending' }), complete: async () => undefined, fail: async () => undefined, reconcile: async () => undefined } })).toThrow(/pendingTtlMs/);
    expect(() => createAgentCliConnector(FAKE, { workdir: '/tmp' } as never)).toThrow(/unknown option "workdir"/);
    expect(() => createAgentCliConnector(FAKE, { cwd: 'relative/dir' })).toThrow(/absolute/);
  });
});
