import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  type AgentGatekeeperPolicy,
  bindGatekeeper,
  createAgentGatekeeperBundle,
  createToolExecutorGate,
  formatGatekeeperBootLine,
  fromFunction,
  fromHazelTool,
  fromMcpTool,
  fromSkillgate,
  GatekeeperConfigurationError,
  GatekeeperDeniedError,
  protectMcpInvoke,
  type ToolExecutorGateInput,
  type ToolInvocationContext,
} from './index.js';
import { gatekeeper, thrown } from './spec-support.testing.js';

// Row 2: the adapters. One gatekeeper: agent `support-bot` may read tickets, may close one only with a person's approval.
const policies: AgentGatekeeperPolicy<{ id?: string }>[] = [
  { id: 'tickets-read', version: '1', match: { agents: ['support-bot'], tools: ['tickets.get'] }, rules: { allowWhen: () => true } },
  { id: 'tickets-close', version: '1', match: { agents: ['support-bot'], tools: ['tickets.close'] }, rules: { requireApprovalWhen: () => true } },
];

const setup = () => gatekeeper({ policies });

const trusted = (toolName: string, input: Record<string, unknown>, extra: Partial<ToolInvocationContext<Record<string, unknown>>> = {}): ToolInvocationContext<Record<string, unknown>> => ({
  invocationId: `inv-${toolName}`, runId: 'run-7', agentId: 'support-bot', tenantId: 'acme', toolName, input, environment: 'production', timestamp: new Date(), ...extra,
});

describe('fromFunction and fromMcpTool', () => {
  it('make tools with HazelJS defaults (function: read/low; MCP: write/medium)', () => {
    const fn = fromFunction('tickets.get', (input: { id: string }) => ({ id: input.id }));
    expect(fn).toMatchObject({ name: 'tickets.get', classification: 'read', riskLevel: 'low', readOnly: true });
    const mcp = fromMcpTool({ name: 'tickets.close', description: 'close a ticket' }, async () => 'closed');
    expect(mcp).toMatchObject({ name: 'tickets.close', classification: 'write', riskLevel: 'medium', readOnly: false, description: 'close a ticket' });
  });

  it('refuse metadata they do not know or cannot use', () => {
    expect(thrown(() => fromFunction('t', () => 1, { classfication: 'write' } as never))).toMatchObject({ code: 'HAZELJS.CONFIG' });
    expect(thrown(() => fromFunction('t', () => 1, { classification: 'admin' } as never))).toMatchObject({ code: 'HAZELJS.CONFIG', details: { field: 'classification' } });
    expect(thrown(() => fromMcpTool({ name: 't' }, async () => 1, { inputSchema: {} as never }))).toMatchObject({ details: { field: 'inputSchema' } });
  });
});

describe('protectMcpInvoke', () => {
  it('decides every MCP call before invoke runs, with identity from the context factory only', async () => {
    const { gk } = setup();
    const invoked: string[] = [];
    const invoke = async (name: string, input: Record<string, unknown>) => (invoked.push(name), { name, input });
    const guarded = protectMcpInvoke(invoke, gk, (name, input) => trusted(name, input));
    expect(await guarded('tickets.get', { id: 'T-1' })).toEqual({ name: 'tickets.get', input: { id: 'T-1' } });
    await expect(guarded('tickets.delete', { id: 'T-1', agentId: 'admin-bot' })).rejects.toBeInstanceOf(GatekeeperDeniedError);
    expect(invoked).toEqual(['tickets.get']);
  });

  it('holds an MCP call to the input schema its metadata gives', async () => {
    const { gk } = setup();
    const guarded = protectMcpInvoke(async () => 'ok', gk, (name, input) => trusted(name, input), () => ({ inputSchema: z.object({ id: z.string() }) as never }));
    await expect(guarded('tickets.get', { id: 42 })).rejects.toMatchObject({ code: 'HAZELJS.VALIDATION' });
  });
});

describe('createToolExecutorGate (HazelJS authorizationGate)', () => {
  const target = { closed: [] as string[] };
  const closeTool = { name: 'tickets.close', method(this: typeof target, input: Record<string, unknown>) { this.closed.push(String(input['id'])); return 'closed'; }, target, readOnly: false };
  const gateInput = (tool: ToolExecutorGateInput['tool'], input: Record<string, unknown>): ToolExecutorGateInput => ({ tool, input, agentId: 'support-bot', sessionId: 's-1', runId: 'run-7', tenantId: 'acme', environment: 'production' });

  it('answers success with the output, and a denial as success false with the error', async () => {
    const { gk } = setup();
    const gate = createToolExecutorGate(gk);
    const get = { name: 'tickets.get', method: (input: Record<string, unknown>) => ({ id: input['id'] }), target: {}, readOnly: true };
    expect(await gate.execute(gateInput(get, { id: 'T-1' }))).toMatchObject({ success: true, output: { id: 'T-1' } });
    const denied = await gate.execute(gateInput({ ...get, name: 'tickets.delete' }, { id: 'T-1' }));
    expect(denied.success).toBe(false);
    expect(denied.error).toBeInstanceOf(GatekeeperDeniedError);
  });

  it('answers a pending approval with its id, and runs the resumed call once a reviewer approved', async () => {
    const { gk, approvals } = setup();
    // A stable invocation id per call, so the resumed call is the one that was approved.
    const gate = createToolExecutorGate(gk, { contextFactory: (input) => trusted(input.tool.name, input.input, { invocationId: 'close-T-9' }) });
    const first = await gate.execute(gateInput(closeTool, { id: 'T-9' }));
    expect(first).toMatchObject({ success: false, pendingApproval: true, metadata: { toolName: 'tickets.close', runId: 'run-7' } });
    expect(target.closed).toEqual([]);
    await approvals.resolve(first.requestId!, 'approved', 'user:lead');
    expect(await gate.execute(gateInput(closeTool, { id: 'T-9' }))).toMatchObject({ success: true, output: 'closed' });
    expect(target.closed).toEqual(['T-9']);
  });

  it("refuses HazelJS's humanTasks resume path, naming the gatehouse way", () => {
    const { gk } = setup();
    expect(thrown(() => createToolExecutorGate(gk, { humanTasks: {} } as never))).toMatchObject({ code: 'HAZELJS.UNSUPPORTED', details: { api: 'createToolExecutorGate({ humanTasks })' } });
  });
});

describe('fromHazelTool and fromSkillgate', () => {
  it('classify as HazelJS does and honour requiresApproval: the call waits for a person even where a policy allows', async () => {
    const hazel = fromHazelTool({ name: 'tickets.get', method() { return 'ok'; }, target: {}, riskLevel: 'high', requiresApproval: true });
    expect(hazel).toMatchObject({ classification: 'destructive', requiresApproval: true });
    const { gk } = setup();
    await expect(gk.execute({ context: trusted('tickets.get', {}), tool: hazel })).rejects.toMatchObject({ code: 'HAZELJS.APPROVAL_REQUIRED' });
    const skill = fromSkillgate({ name: 'tickets.purge', description: 'purge', class: 'admin', readOnly: false, requiresApproval: false }, async () => 'purged');
    expect(skill).toMatchObject({ classification: 'destructive', riskLevel: 'critical', requiresApproval: false });
    expect(thrown(() => fromSkillgate({ name: 'x', description: 'x', class: 'root' as never, readOnly: false, requiresApproval: false }, async () => 1))).toMatchObject({ details: { field: 'class' } });
  });
});

describe('the app-setup helpers gatehouse does not provide', () => {
  it('refuse with a typed error naming the equivalent', () => {
    for (const refused of [() => createAgentGatekeeperBundle({}), () => bindGatekeeper({}, {}), () => formatGatekeeperBootLine({})]) {
      const error = thrown(refused);
      expect(error).toBeInstanceOf(GatekeeperConfigurationError);
      expect(error).toMatchObject({ code: 'HAZELJS.UNSUPPORTED', details: { use: expect.any(String) } });
    }
  });
});
