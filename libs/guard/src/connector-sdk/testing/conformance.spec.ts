import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { z } from 'zod';
import { createAgentCliConnector, createClaudeCodeConnector, createCodexConnector } from '../../agent-cli/agent-cli-connector.js';
import { CLAUDE_CODE_CLI } from '../../agent-cli/definitions.js';
import { type AgentCliExec } from '../../agent-cli/run-cli.js';
import { createConnector } from '../connector.js';
import { type JsonValue } from '@gatehouse/contracts';
import { bindGrant } from '../trusted-context.js';
import { conformanceCases, type ConnectorConformanceCase, runConnectorConformance } from './conformance.js';

const identity = { workflowId: 'wf-conf', runId: 'run-conf', suspension: { stepPath: 'approve', suspendedAt: '2026-11-30T10:00:00.000Z', resumeCount: 0 } };
const fakeExec: AgentCliExec = async () => ({ exitCode: 0, signal: null, stdout: 'done', stderr: '', stdoutTruncated: false, stderrTruncated: false });

function approvalCases(connectorId: string, input: unknown): ConnectorConformanceCase[] {
  return [
    conformanceCases.noGrant(input, identity),
    conformanceCases.legacyGrantArray(input, connectorId, identity),
    conformanceCases.wrongScope(input, connectorId, identity),
    {
      name: 'matching tool-call grant',
      input,
      // Bound to the kit's tenant and these arguments, as host code mints it.
      request: { identity, toolCallId: 'call-1', grants: [bindGrant({ scope: 'tool-call', connectorId, workflowId: identity.workflowId, runId: identity.runId, suspension: identity.suspension, toolCallId: 'call-1' }, { tenant: 'conformance', input: input as JsonValue })] },
      expect: { outcome: 'allowed' },
      // A tool-call grant names a tool call: only the agent loop and a direct call have one.
      entryPoints: ['agent-loop', 'direct'],
    },
    {
      name: 'matching suspension grant',
      input,
      request: { identity, grants: [bindGrant({ scope: 'suspension', connectorId, workflowId: identity.workflowId, runId: identity.runId, suspension: identity.suspension }, { tenant: 'conformance', input: input as JsonValue })] },
      expect: { outcome: 'allowed' },
      entryPoints: ['workflow-step', 'nested-tool'],
    },
  ];
}

describe('connector conformance kit against every shipped connector', () => {
  it.each([
    ['Claude Code', (audit: never) => createClaudeCodeConnector({ cwd: '/tmp', exec: fakeExec, audit }), CLAUDE_CODE_CLI.id],
    ['Codex', (audit: never) => createCodexConnector({ cwd: '/tmp', exec: fakeExec, audit }), 'agent-cli.codex'],
  ])('%s passes on every entry point', async (_name, make, id) => {
    const report = await runConnectorConformance(({ audit }) => make(audit as never), approvalCases(id, { prompt: 'add unit tests' }));
    expect(report.findings).toEqual([]);
    expect(report.passed).toBe(true);
    expect(report.runs).toBe(17);
  });
});

describe('connector conformance kit finds escapes', () => {
  it('reports a connector that runs without the grant it should need', async () => {
    // Built with requiresApproval off: the kit's approval cases must flag every path.
    const report = await runConnectorConformance(
      ({ audit }) => createConnector({ id: 'leaky', description: 'leaky', inputSchema: z.object({ prompt: z.string() }), permissions: { sideEffect: 'write' }, audit, execute: async () => 'ran' }),
      [conformanceCases.noGrant({ prompt: 'x' }, identity)],
    );
    expect(report.passed).toBe(false);
    expect(report.findings.map((f) => `${f.entryPoint}:${f.code}`).sort()).toEqual(['agent-loop:GATE_ESCAPED', 'direct:GATE_ESCAPED', 'nested-tool:GATE_ESCAPED', 'workflow-step:GATE_ESCAPED']);
  });
});

describe('egress through runtime.fetch on every entry point', () => {
  let server: Server;
  let port = 0;
  const hits: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.headers.host ?? '');
      res.setHeader('content-type', 'application/json');
      res.end('{"status":"ok"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('lets declared hosts through and refuses undeclared ones before any request leaves', async () => {
    const factory = ({ audit }: { audit: never }) =>
      createConnector({
        id: 'status.check',
        description: 'GET a status URL',
        inputSchema: z.object({ host: z.string() }),
        permissions: { sideEffect: 'read', egress: ['127.0.0.1'] },
        policies: { networkEgress: { allowedDomains: ['127.0.0.1'], allowPrivateAddresses: ['127.0.0.1'] } },
        audit,
        execute: async ({ host }, _context, runtime) => (await runtime.fetch(`http://${host}:${port}/status`)).json(),
      });
    const report = await runConnectorConformance(factory as never, [
      { name: 'declared host', input: { host: '127.0.0.1' }, request: { identity }, expect: { outcome: 'allowed' } },
      { name: 'undeclared host', input: { host: '127.0.0.2' }, request: { identity }, expect: { outcome: 'refused', code: 'CONNECTOR.EGRESS_HOST_NOT_DECLARED' } },
    ]);
    expect(report.findings).toEqual([]);
    expect(hits.every((h) => h.startsWith('127.0.0.1:'))).toBe(true);
    expect(hits).toHaveLength(4);
  });
});

describe('custom agent CLI connectors', () => {
  it('pass the kit too', async () => {
    const report = await runConnectorConformance(
      ({ audit }) => createAgentCliConnector({ ...CLAUDE_CODE_CLI, id: 'agent-cli.custom' }, { cwd: '/tmp', exec: fakeExec, audit }),
      approvalCases('agent-cli.custom', { prompt: 'x' }),
    );
    expect(report.passed).toBe(true);
  });
});
