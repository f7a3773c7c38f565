import { describe, expect, it, jest } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { type JsonValue } from '@gatehouse/contracts';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { connectorManifest, invokeConnector } from '../connector-sdk/connector.js';
import { CONNECTOR_EXECUTION_CONTEXT_KEY, CONNECTOR_GRANTS_CONTEXT_KEY, IDEMPOTENCY_KEY_CONTEXT_KEY } from '../connector-sdk/context-keys.js';
import { singleTenantConnectorPolicies } from '../connector-sdk/single-tenant-preset.js';
import { InMemoryIdempotencyStore } from '../connector-sdk/stores/in-memory-idempotency-store.js';
import { InMemoryRateLimitStore } from '../connector-sdk/stores/in-memory-rate-limit-store.js';
import { createLedgerStores } from '../connector-sdk/stores/ledger-client.js';
import { bindGrant } from '../connector-sdk/trusted-context.js';
import { createAgentCliConnector, createClaudeCodeConnector, createCodexConnector } from './agent-cli-connector.js';
import { type AgentCliDefinition } from './argv.js';
import { CLAUDE_CODE_CLI, CODEX_CLI, defineAgentCli, parseClaudeCodeEnvelope } from './definitions.js';
import { AgentCliError } from './errors.js';
import { type AgentCliExec, type AgentCliExecOutput } from './run-cli.js';

// Compatibility tests for users of breakwater (docs/migrating/breakwater.md): the agent CLI rows.

const workspace = '/srv/workspace';

/** An executor standing in for the CLI: answers `stdout` and counts its runs. */
function fakeExec(stdout = 'done'): { exec: AgentCliExec; runs: () => number } {
  const exec = jest.fn<AgentCliExec>(async (): Promise<AgentCliExecOutput> => ({ exitCode: 0, signal: null, stdout, stderr: '', stdoutTruncated: false, stderrTruncated: false }));
  return { exec, runs: () => exec.mock.calls.length };
}

/** Trusted context with a grant for `connectorId`, bound to `input` (as the approval service mints it). */
function granted(connectorId: string, input: Record<string, unknown>, extra: Record<string, unknown> = {}): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'dev-1', role: 'engineer' });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf', runId: 'run-cli' });
  rc.set(CONNECTOR_GRANTS_CONTEXT_KEY, [bindGrant({ scope: 'run', connectorId, runId: 'run-cli' }, { tenant: 'default', input: input as JsonValue })]);
  for (const [key, value] of Object.entries(extra)) rc.set(key, value);
  return rc;
}

const refusalOf = (make: () => unknown): unknown => {
  try {
    make();
  } catch (error) {
    return error;
  }
  return 'accepted';
};

describe('agent CLI connectors: idempotencyKey and rateLimit options', () => {
  it('idempotencyKey replays a repeated task from the store instead of running the CLI again', async () => {
    const { exec, runs } = fakeExec('first run');
    const codex = createCodexConnector({ cwd: workspace, exec, idempotencyKey: true, idempotencyStore: new InMemoryIdempotencyStore() });
    expect(connectorManifest(codex)).toMatchObject({ idempotencyKey: true });
    const input = { prompt: 'Add unit tests.' };
    const rc = granted('agent-cli.codex', input, { [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'task-17' });
    const first = await invokeConnector(codex, input, { requestContext: rc });
    const again = await invokeConnector(codex, input, { requestContext: rc });
    expect(again).toEqual(first);
    expect(runs()).toBe(1);
    await expect(invokeConnector(codex, input, { requestContext: granted('agent-cli.codex', input) })).rejects.toMatchObject({ code: 'CONNECTOR.IDEMPOTENCY_KEY_REQUIRED' });
  });

  it('rateLimit spends a shared budget per call and refuses past it without running the CLI', async () => {
    const { exec, runs } = fakeExec();
    const audit = new AuditLogger();
    const claude = createClaudeCodeConnector({ cwd: workspace, exec, audit, rateLimit: '2/hour', rateLimitStore: new InMemoryRateLimitStore() });
    expect(connectorManifest(claude)).toMatchObject({ rateLimit: '2/hour' });
    for (const prompt of ['task one', 'task two', 'task three']) {
      await invokeConnector(claude, { prompt }, { requestContext: granted('agent-cli.claude-code', { prompt }) }).catch(() => undefined);
    }
    expect(runs()).toBe(2);
    expect(audit.events().at(-1)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.RATE_LIMITED' });
  });

  it('refuses a control without its store, a store the options switch off, and a pending TTL that does not outlast a run', () => {
    expect(refusalOf(() => createCodexConnector({ cwd: workspace, idempotencyKey: true }))).toMatchObject({ message: expect.stringMatching(/idempotencyKey requires an idempotencyStore/) });
    expect(refusalOf(() => createCodexConnector({ cwd: workspace, rateLimit: '10/hour' }))).toMatchObject({ message: expect.stringMatching(/rateLimit requires a rateLimitStore/) });
    expect(refusalOf(() => createCodexConnector({ cwd: workspace, rateLimit: 'ten an hour', rateLimitStore: new InMemoryRateLimitStore() }))).toBeInstanceOf(TypeError);
    expect(refusalOf(() => createCodexConnector({ cwd: workspace, idempotencyKey: false, idempotencyStore: new InMemoryIdempotencyStore() }))).toMatchObject({ message: expect.stringMatching(/idempotencyKey is false/) });
    expect(refusalOf(() => createCodexConnector({ cwd: workspace, idempotencyKey: true, idempotencyStore: new InMemoryIdempotencyStore(), timeoutMs: 60_000, pendingTtlMs: 60_000 }))).toMatchObject({ message: expect.stringMatching(/pendingTtlMs must be greater than timeoutMs/) });
    expect(refusalOf(() => createCodexConnector({ cwd: workspace, pendingTtlMs: 900_000 }))).toMatchObject({ message: expect.stringMatching(/pendingTtlMs without idempotency/) });
  });

  it('takes both stores from a single-tenant preset, and names the one a declared control lacks', () => {
    const logger = new AuditLogger({ sink: () => undefined });
    const stores = createLedgerStores({ baseUrl: 'http://ledger.internal:4103', apiKey: 'lk_cli-test-key-0123456789' });
    const common = { audit: { mode: 'production', logger }, egress: { allowedDomains: ['api.openai.com', 'api.anthropic.com'] }, permissions: { principalPermissions: 'configured' } } as const;
    const full = singleTenantConnectorPolicies({ ...common, durableStores: { idempotency: stores.idempotencyStore, rateLimit: stores.rateLimitStore } });
    const codex = createCodexConnector({ cwd: workspace, timeoutMs: 900_000, idempotencyKey: true, rateLimit: '10/hour', policies: full });
    expect(connectorManifest(codex)).toMatchObject({ idempotencyKey: true, rateLimit: '10/hour' });
    const partial = singleTenantConnectorPolicies({ ...common, durableStores: { idempotency: stores.idempotencyStore } });
    expect(refusalOf(() => createCodexConnector({ cwd: workspace, idempotencyKey: true, rateLimit: '10/hour', policies: partial }))).toMatchObject({ code: 'CONNECTOR.PRESET_INCOMPLETE', field: 'durableStores.rateLimit' });
  });
});

describe("agent CLI connectors: Claude Code's JSON envelope and custom output parsers", () => {
  it('runs Claude Code with --output-format=json and returns the envelope result', async () => {
    const envelope = JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'Added 4 tests.', session_id: 's-1' });
    const { exec } = fakeExec(envelope);
    const claude = createClaudeCodeConnector({ cwd: workspace, exec });
    const input = { prompt: 'Add unit tests.' };
    const output = await invokeConnector(claude, input, { requestContext: granted('agent-cli.claude-code', input) });
    expect(output.text).toBe('Added 4 tests.');
    expect(CLAUDE_CODE_CLI.baseArgs).toContain('--output-format=json');
  });

  it('returns stdout as it came when it is not an envelope with a string result', () => {
    expect(parseClaudeCodeEnvelope('plain text')).toBe('plain text');
    const noResult = JSON.stringify({ type: 'result', subtype: 'error_max_turns', is_error: true });
    expect(parseClaudeCodeEnvelope(noResult)).toBe(noResult);
    expect(parseClaudeCodeEnvelope('{"result": 42}')).toBe('{"result": 42}');
    expect(parseClaudeCodeEnvelope('[1,2]')).toBe('[1,2]');
  });

  it('leaves Codex output as stdout text', async () => {
    const { exec } = fakeExec('  patched 3 files\n');
    const input = { prompt: 'Fix the parser.' };
    expect((await invokeConnector(createCodexConnector({ cwd: workspace, exec }), input, { requestContext: granted('agent-cli.codex', input) })).text).toBe('  patched 3 files\n');
    expect(CODEX_CLI.parseOutput).toBeUndefined();
  });

  const custom = (parseOutput: AgentCliDefinition['parseOutput']): AgentCliDefinition =>
    defineAgentCli({ id: 'agent-cli.example', command: 'example-agent', baseArgs: ['run', '--workspace-write'], options: {}, hosts: ['api.example.com'], ...(parseOutput ? { parseOutput } : {}) });

  it("applies a custom definition's parseOutput to a successful run", async () => {
    const { exec } = fakeExec('  answer  \n');
    const input = { prompt: 'go' };
    const output = await invokeConnector(createAgentCliConnector(custom((stdout) => stdout.trim()), { cwd: workspace, exec }), input, { requestContext: granted('agent-cli.example', input) });
    expect(output.text).toBe('answer');
  });

  it.each([
    ['throws', (stdout: string) => { throw new Error(`cannot parse ${stdout}`); }, 'parser-failed'],
    ['returns something that is not a string', () => ({ text: 'x' }) as unknown as string, 'parser-result-invalid'],
  ])('a parser that %s fails the call with AGENT_CLI.OUTPUT_PARSE_FAILED, keeping the output out of the error and the audit', async (_what, parseOutput, reason) => {
    const { exec } = fakeExec('SECRET-STDOUT token=abc123');
    const audit = new AuditLogger();
    const input = { prompt: 'go' };
    const error = await invokeConnector(createAgentCliConnector(custom(parseOutput), { cwd: workspace, exec, audit }), input, { requestContext: granted('agent-cli.example', input) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentCliError);
    expect(error).toMatchObject({ code: 'AGENT_CLI.OUTPUT_PARSE_FAILED', metadata: { reason, cliId: 'agent-cli.example' } });
    expect(JSON.stringify([error, (error as AgentCliError).toJSON(), (error as Error).message, audit.events()])).not.toContain('SECRET-STDOUT');
    expect(audit.events().at(-1)).toMatchObject({ decision: 'error', code: 'AGENT_CLI.OUTPUT_PARSE_FAILED' });
  });

  it('refuses a parseOutput that is not a function', () => {
    expect(() => defineAgentCli({ ...CODEX_CLI, id: 'agent-cli.x', parseOutput: 'trim' } as never)).toThrow(/parseOutput must be a function/);
  });
});

describe('breakwater agent CLI shapes gatehouse refuses, each with what to write instead', () => {
  it.each([
    ['binary', { binary: 'example-agent' }, /binary is called command here/],
    ['egress', { egress: ['api.example.com'] }, /egress is called hosts here/],
    ['description', { description: 'Run Example CLI' }, /description is fixed by the connector/],
    ['buildFlags', { buildFlags: () => ['run'] }, /buildFlags is not supported/],
  ])('a definition with %s', (_field, patch, message) => {
    expect(() => defineAgentCli({ id: 'agent-cli.example', command: 'example-agent', baseArgs: ['run'], options: {}, hosts: [], ...patch } as never)).toThrow(message);
  });

  it("refuses AgentCliError's one-argument message constructor instead of making the message a code", () => {
    expect(() => new AgentCliError('the CLI failed' as never)).toThrow(/AGENT_CLI_ERROR_CODES/);
    expect(new AgentCliError('AGENT_CLI.TIMEOUT').message).toBe('The agent CLI did not finish before its timeout and was terminated');
  });

  it("refuses a breakwater-shaped executor's answer as a malformed result, never as success", async () => {
    const breakwaterExec = (async () => ({ stdout: 'ok', stderr: '', exitCode: 0 })) as unknown as AgentCliExec;
    const input = { prompt: 'go' };
    await expect(invokeConnector(createCodexConnector({ cwd: workspace, exec: breakwaterExec }), input, { requestContext: granted('agent-cli.codex', input) })).rejects.toMatchObject({
      code: 'AGENT_CLI.SPAWN_FAILED',
      metadata: { reason: 'exec-result-invalid' },
    });
  });

  it.each([
    ['timeoutMs NaN', { timeoutMs: Number.NaN }],
    ['timeoutMs Infinity', { timeoutMs: Number.POSITIVE_INFINITY }],
    ['timeoutMs negative', { timeoutMs: -1 }],
    ['timeoutMs fractional', { timeoutMs: 1.5 }],
    ['timeoutMs past the timer ceiling', { timeoutMs: 2 ** 31 }],
    ['maxOutputBytes NaN', { maxOutputBytes: Number.NaN }],
    ['maxOutputBytes negative', { maxOutputBytes: -1 }],
    ['maxOutputBytes fractional', { maxOutputBytes: 0.5 }],
    ['maxOutputBytes unsafe', { maxOutputBytes: 2 ** 60 }],
  ])('refuses %s at construction', (_what, options) => {
    expect(() => createCodexConnector({ cwd: workspace, ...options })).toThrow(TypeError);
  });

  it('keeps the approval ids agent-cli.claude-code and agent-cli.codex, and a legacy id array grants nothing', async () => {
    expect([CLAUDE_CODE_CLI.id, CODEX_CLI.id]).toEqual(['agent-cli.claude-code', 'agent-cli.codex']);
    const { exec, runs } = fakeExec();
    const rc = new RequestContext();
    rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf', runId: 'run-cli' });
    rc.set(CONNECTOR_GRANTS_CONTEXT_KEY, ['agent-cli.codex']);
    await expect(invokeConnector(createCodexConnector({ cwd: workspace, exec }), { prompt: 'go' }, { requestContext: rc })).rejects.toMatchObject({ code: 'CONNECTOR.GRANT_INVALID' });
    expect(runs()).toBe(0);
  });
});
