// Duraton's step.ai.loop and agent() rows of docs/migrating/duraton.md, tried on a guarded agent as a
// Duraton user would (the row id leads each describe): tools declared with JSON Schema, refusals the
// model reads, halts, the closed set of stop reasons with max-iterations and approval-budget.
import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { type JsonValue } from '@gatehouse/contracts';
import { testAgentKey } from '@gatehouse/contracts/testing';
import { z } from 'zod';
import { createGuardedAgent, type GuardedAgentConfig } from '../../agent/guarded-agent.js';
import { createInMemoryApprovalGateway, type InMemoryApprovalGateway } from '../../approvals/in-memory-approval-gateway.js';
import { AuditLogger } from '../../audit/audit-logger.js';
import { createConnector } from '../../connector-sdk/connector.js';
import { CONNECTOR_EXECUTION_CONTEXT_KEY, CONNECTOR_GRANTS_CONTEXT_KEY } from '../../connector-sdk/context-keys.js';
import { bindGrant } from '../../connector-sdk/trusted-context.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../../context.js';
import { createPiiGuardrail } from '../../guardrails/pii-guardrail.js';
import { createSchemaGuardrail } from '../../guardrails/schema-guardrail.js';
import { type Guardrail, type GuardrailAction } from '../../guardrails/types.js';
import { type VerdictJournal } from '../../guardrails/verdict-journal.js';
import { scriptedModel, type ScriptedStep, type ScriptedToolCall } from '../../testing/scripted-model.js';
import { withoutRandomIds } from '../../guardrails/leak-records.testing.js';

const CREDIT_SCHEMA = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'], additionalProperties: false };

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'support', runId: 'run-1', entryPath: 'test' });
  return rc;
}

/** Duraton's `issue-credit` tool, declared as there: a JSON Schema and a handler. */
function issueCredit() {
  const credited: unknown[] = [];
  const tool = createTool({ id: 'issue-credit', description: 'Credit a customer', inputSchema: CREDIT_SCHEMA as never, execute: async (input: unknown) => { credited.push(input); return { credited: true }; } });
  return { tool, credited };
}

function agentWith(steps: ScriptedStep[], config: Partial<GuardedAgentConfig> = {}) {
  const audit = new AuditLogger();
  const model = scriptedModel({ steps });
  const agent = createGuardedAgent({ id: 'support', name: 'Support', instructions: 'Resolve tickets.', model: model as never, allowedRoles: ['operator'], audit, maxSteps: 6, ...config });
  return { agent, audit, model };
}

const call = (toolName: string, toolCallId: string, args: unknown): ScriptedToolCall => ({ toolName, toolCallId, args });
const verdictOn = (name: string, action: GuardrailAction, tool?: string): Guardrail => ({
  name,
  placements: ['tool-args'],
  check: ({ tool: t }) => (tool === undefined || t?.id === tool ? { action, outcome: 'complete', detections: [] } : { action: 'allow', outcome: 'complete', detections: [] }),
});
/** The tool results the model read in one prompt. */
const toolResults = (prompt: string | undefined): unknown[] => (JSON.parse(prompt ?? '[]') as { role: string; content: unknown }[])
  .filter((m) => m.role === 'tool')
  .flatMap((m) => m.content as { type: string; output?: { value?: unknown } }[])
  .filter((p) => p.type === 'tool-result')
  .map((p) => p.output?.value);

describe('D2/D4 a tool declared with a JSON Schema, under createSchemaGuardrail()', () => {
  it('is judged against that schema (allowed and recorded), where the guardrail used to see no schema and deny', async () => {
    const { tool, credited } = issueCredit();
    const { agent, audit } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 10 }) }, { text: 'Credited.' }], { tools: { 'issue-credit': tool }, guardrails: [createSchemaGuardrail()] });
    const result = await agent.generate('Resolve this ticket: double charge', { requestContext: context() });
    expect(result).toMatchObject({ stopReason: 'finished', text: 'Credited.' });
    expect(credited).toEqual([{ amount: 10 }]);
    expect(audit.events().filter((e) => e.boundary === 'guardrail')).toEqual([expect.objectContaining({ code: 'GUARDRAIL.ALLOWED', detail: expect.objectContaining({ tool: 'issue-credit', checked: 1 }) })]);
  });
});

describe('D15 arguments that fail the tool\'s schema inside the loop', () => {
  it('never reach the handler; the model reads every failing keyword from Mastra\'s validation, before any guardrail runs', async () => {
    const { tool, credited } = issueCredit();
    const { agent, audit, model } = agentWith([{ toolCall: call('issue-credit', 'c1', { reason: 'duplicate' }) }, { text: 'I need an amount.' }], { tools: { 'issue-credit': tool }, guardrails: [createSchemaGuardrail()] });
    await agent.generate('Resolve this ticket', { requestContext: context() });
    expect(credited).toEqual([]);
    const [refusal] = toolResults(model.prompts[1]) as { error: boolean; message: string }[];
    expect(refusal).toMatchObject({ error: true });
    expect(refusal?.message).toContain("required property 'amount'");
    expect(refusal?.message).toContain('additional properties');
    expect(audit.events().filter((e) => e.boundary === 'guardrail')).toEqual([]);
  });
});

describe('D14/D16 a refused call', () => {
  it('comes back as the tool\'s result { valid, tool, error } naming no decider, and the model corrects itself', async () => {
    const { tool, credited } = issueCredit();
    const limit: Guardrail = { name: 'limit', placements: ['tool-args'], check: ({ value }) => ((value as { amount: number }).amount > 100 ? { action: 'deny', outcome: 'complete', detections: [], reason: 'limit.exceeded' } : { action: 'allow', outcome: 'complete', detections: [] }) };
    const { agent, model } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 500 }) }, { toolCall: call('issue-credit', 'c2', { amount: 100 }) }, { text: 'Credited 100.' }], { tools: { 'issue-credit': tool }, guardrails: [limit] });
    const result = await agent.generate('Resolve this ticket', { requestContext: context() });
    expect(result.text).toBe('Credited 100.');
    expect(toolResults(model.prompts[1])).toEqual([{ valid: false, tool: 'issue-credit', error: 'tool call "issue-credit" refused: a limit was exceeded' }]);
    expect(credited).toEqual([{ amount: 100 }]);
  });
});

describe('D29 a refused call writes no tool step', () => {
  it('records the verdict, and the handler never ran', async () => {
    const { tool, credited } = issueCredit();
    const { agent, audit } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 5 }) }, { text: 'done' }], { tools: { 'issue-credit': tool }, guardrails: [verdictOn('no-credit', 'deny')] });
    await agent.generate('go', { requestContext: context() });
    expect(credited).toEqual([]);
    expect(audit.events().filter((e) => e.boundary === 'guardrail')).toEqual([expect.objectContaining({ code: 'GUARDRAIL.DENIED', detail: expect.objectContaining({ toolCallId: 'c1', guardrail: 'no-credit' }) })]);
  });
});

describe('D17/D20/D21 a halt in the loop', () => {
  it('ends the loop with stopReason guardrail naming the guardrail; siblings of the turn complete and are recorded; no answer is given', async () => {
    const { tool, credited } = issueCredit();
    const refund = createTool({ id: 'refund', description: 'Refund', inputSchema: z.object({ amount: z.number() }), execute: async () => ({ refunded: true }) });
    const { agent, audit, model } = agentWith(
      [{ toolCalls: [call('refund', 'c1', { amount: 1 }), call('issue-credit', 'c2', { amount: 2 })] }, { text: 'All done.' }],
      { tools: { refund, 'issue-credit': tool }, guardrails: [verdictOn('tripwire', 'halt', 'refund')] },
    );
    const result = await agent.generate('go', { requestContext: context() });
    expect(result).toMatchObject({ stopReason: 'guardrail', haltedBy: 'tripwire', text: '', tripwire: { code: 'GUARDRAIL.HALTED' } });
    expect(credited).toEqual([{ amount: 2 }]);
    expect(model.prompts).toHaveLength(1);
    expect(audit.events().filter((e) => e.boundary === 'guardrail').map((e) => [e.detail?.['toolCallId'], e.code]).sort()).toEqual([['c1', 'GUARDRAIL.HALTED'], ['c2', 'GUARDRAIL.ALLOWED']]);
  });
});

describe('D18 stopReason max-iterations', () => {
  it('is what a loop that used up maxSteps still calling tools ends with, on generate and on stream', async () => {
    const { tool } = issueCredit();
    const steps = [{ toolCall: call('issue-credit', 'c1', { amount: 1 }) }];
    const { agent, model } = agentWith(steps, { tools: { 'issue-credit': tool }, maxSteps: 2 });
    expect(await agent.generate('go', { requestContext: context() })).toMatchObject({ stopReason: 'max-iterations', finishReason: 'tool-calls' });
    expect(model.prompts).toHaveLength(2);
    const streamed = createGuardedAgent({
      id: 'support', name: 'Support', instructions: 'x', allowedRoles: ['operator'], tools: { 'issue-credit': tool }, maxSteps: 2,
      model: scriptedModel({ streamSteps: [[{ call: call('issue-credit', 'c1', { amount: 1 }) }]] }) as never,
    });
    const stream = await streamed.stream('go', { requestContext: context() });
    for await (const chunk of stream.textStream) void chunk;
    expect(await stream.result()).toMatchObject({ stopReason: 'max-iterations' });
  });

  it('is not what a loop that answered within maxSteps ends with', async () => {
    const { agent } = agentWith([{ text: 'hello' }], { maxSteps: 1 });
    expect(await agent.generate('go', { requestContext: context() })).toMatchObject({ stopReason: 'finished', text: 'hello' });
  });
});

const AGENT_KEY = testAgentKey('agent:support', ['acme']);

/** The refund connector, approval required; asked through `gateway` when there is one, else only a grant in context admits it. */
function approvalsFor(gateway: InMemoryApprovalGateway | undefined, audit?: AuditLogger) {
  const refunded: number[] = [];
  const refund = createConnector<{ amount: number }, unknown>({
    id: 'payments.refund',
    description: 'Refund an order',
    inputSchema: z.object({ amount: z.number() }),
    permissions: { sideEffect: 'write', requiresApproval: true },
    execute: async ({ amount }) => { refunded.push(amount); return { refunded: amount }; },
    ...(gateway ? { approvals: { gateway, waitMs: 5_000 } } : {}),
    ...(audit ? { audit } : {}),
  });
  return { refund, refunded };
}

describe('D19 the approval budget and stopReason approval-budget', () => {
  it('asks a reviewer for calls within the budget, refuses the one past it without asking, and ends the loop', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT_KEY });
    const toolAudit = new AuditLogger();
    const { refund, refunded } = approvalsFor(gateway, toolAudit);
    const { agent, model } = agentWith(
      [{ toolCalls: [call('payments.refund', 'c1', { amount: 10 }), call('payments.refund', 'c2', { amount: 20 })] }, { text: 'never asked' }],
      { tools: { 'payments.refund': refund }, approvalBudget: 1 },
    );
    const answer = agent.generate('refund both', { requestContext: context() });
    const request = await gateway.waitForRequest();
    gateway.decide(request.payload.approvalId, { verdict: 'approve' });
    expect(await answer).toMatchObject({ stopReason: 'approval-budget', text: '', tripwire: { code: 'AGENT.APPROVAL_BUDGET' } });
    expect(gateway.requests()).toHaveLength(1);
    expect(refunded).toHaveLength(1);
    expect(model.prompts).toHaveLength(1);
    // Which of the two parallel calls asked first is Mastra's to order: one was asked, the other refused.
    const refused = toolAudit.events().filter((e) => e.code === 'CONNECTOR.APPROVAL_BUDGET');
    expect(refused).toEqual([expect.objectContaining({ decision: 'denied' })]);
    expect(['c1', 'c2']).toContain(refused[0]?.detail?.['toolCallId']);
  });

  it('with a budget of 0 asks no one at all, on stream too', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT_KEY });
    const { refund, refunded } = approvalsFor(gateway);
    const streamed = createGuardedAgent({
      id: 'support', name: 'Support', instructions: 'x', allowedRoles: ['operator'], tools: { 'payments.refund': refund }, approvalBudget: 0,
      model: scriptedModel({ streamSteps: [[{ call: call('payments.refund', 'c1', { amount: 10 }) }], [{ text: ['never'] }]] }) as never,
    });
    const stream = await streamed.stream('refund', { requestContext: context() });
    for await (const chunk of stream.textStream) void chunk;
    expect(await stream.result()).toMatchObject({ stopReason: 'approval-budget' });
    expect(gateway.requests()).toHaveLength(0);
    expect(refunded).toEqual([]);
  });

  it('counts a call a guardrail\'s approve verdict parks on a person', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT_KEY });
    const refunded: number[] = [];
    const lookup = createConnector<{ amount: number }, unknown>({
      id: 'payments.lookup', description: 'Look up a payment', inputSchema: z.object({ amount: z.number() }),
      permissions: { sideEffect: 'read' }, approvals: { gateway, waitMs: 5_000 },
      execute: async ({ amount }) => { refunded.push(amount); return { found: true }; },
    });
    const { agent } = agentWith([{ toolCall: call('payments.lookup', 'c1', { amount: 10 }) }, { text: 'never asked' }], { tools: { 'payments.lookup': lookup }, guardrails: [verdictOn('ask-first', 'approve')], approvalBudget: 0 });
    expect(await agent.generate('look it up', { requestContext: context() })).toMatchObject({ stopReason: 'approval-budget' });
    expect(gateway.requests()).toHaveLength(0);
    expect(refunded).toEqual([]);
  });

  it('is refused unless an integer from 0 to 1,000', () => {
    for (const approvalBudget of [-1, 1.5, 1_001, '3']) {
      expect(() => agentWith([{ text: 'x' }], { approvalBudget: approvalBudget as never })).toThrow('approvalBudget must be an integer from 0 to 1000');
    }
  });
});

describe('D42 a reviewer\'s edit', () => {
  const capped: Guardrail = {
    name: 'refund-cap',
    placements: ['tool-args'],
    check: ({ value }) => ((value as { amount: number }).amount > 100 ? { action: 'deny', outcome: 'complete', detections: ['amount.cap'] } : { action: 'allow', outcome: 'complete', detections: [] }),
  };

  it('is judged by the tool-args guardrails again, after the connector\'s schema, and runs when they allow it', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT_KEY });
    const { refund, refunded } = approvalsFor(gateway);
    const judged: unknown[] = [];
    const counting: Guardrail = { name: 'counting', placements: ['tool-args'], check: ({ value }) => { judged.push(value); return { action: 'allow', outcome: 'complete', detections: [] }; } };
    const { agent } = agentWith([{ toolCall: call('payments.refund', 'c1', { amount: 10 }) }, { text: 'Refunded.' }], { tools: { 'payments.refund': refund }, guardrails: [counting] });
    const answer = agent.generate('refund', { requestContext: context() });
    const request = await gateway.waitForRequest();
    gateway.decide(request.payload.approvalId, { verdict: 'approve-with-edits', editedArguments: { amount: 7 } });
    await expect(answer).resolves.toMatchObject({ text: 'Refunded.' });
    expect(refunded).toEqual([7]);
    expect(judged).toEqual([{ amount: 10 }, { amount: 7 }]);
  });

  it('is refused when a guardrail denies it (CONNECTOR.APPROVAL_EDIT_REFUSED): the tool never runs, the verdict is on the record', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT_KEY });
    const toolAudit = new AuditLogger();
    const { refund, refunded } = approvalsFor(gateway, toolAudit);
    const { agent, audit } = agentWith([{ toolCall: call('payments.refund', 'c1', { amount: 10 }) }, { text: 'done' }], { tools: { 'payments.refund': refund }, guardrails: [capped] });
    const answer = agent.generate('refund', { requestContext: context() });
    const request = await gateway.waitForRequest();
    gateway.decide(request.payload.approvalId, { verdict: 'approve-with-edits', editedArguments: { amount: 500 } });
    await answer;
    expect(refunded).toEqual([]);
    expect(toolAudit.events().at(-1)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.APPROVAL_EDIT_REFUSED' });
    const verdicts = audit.events().filter((e) => e.boundary === 'guardrail');
    expect(verdicts.map((e) => [e.code, e.detail?.['edit'] ?? false])).toEqual([['GUARDRAIL.ALLOWED', false], ['GUARDRAIL.DENIED', true]]);
    expect(withoutRandomIds(JSON.stringify(audit.events()))).not.toContain('500');
  });

  it('runs a mask\'s payload when it still fits the schema, and refuses one that does not (CONNECTOR.APPROVAL_EDIT_INVALID)', async () => {
    for (const [payload, expected] of [[{ amount: 100 }, [100]], [{ amount: 'a hundred' }, []]] as const) {
      const gateway = createInMemoryApprovalGateway({ agentKey: AGENT_KEY });
      const { refund, refunded } = approvalsFor(gateway);
      const cap: Guardrail = { name: 'cap', placements: ['tool-args'], check: ({ value }) => ((value as { amount: number }).amount > 100 ? { action: 'mask', outcome: 'complete', detections: [], payload } : { action: 'allow', outcome: 'complete', detections: [] }) };
      const { agent } = agentWith([{ toolCall: call('payments.refund', 'c1', { amount: 10 }) }, { text: 'done' }], { tools: { 'payments.refund': refund }, guardrails: [cap] });
      const answer = agent.generate('refund', { requestContext: context() });
      const request = await gateway.waitForRequest();
      gateway.decide(request.payload.approvalId, { verdict: 'approve-with-edits', editedArguments: { amount: 900 } });
      await answer;
      expect(refunded).toEqual(expected);
    }
  });

  it('is judged too when it comes in a grant the host put in context (a resumed workflow), with no gateway asked', async () => {
    for (const [edited, ran, code] of [[20, [20], 'CONNECTOR.ALLOWED'], [500, [], 'CONNECTOR.APPROVAL_EDIT_REFUSED']] as const) {
      const toolAudit = new AuditLogger();
      const { refund, refunded } = approvalsFor(undefined, toolAudit);
      const rc = context();
      rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf-refunds', runId: 'run-1', suspension: { stepPath: 'approve', suspendedAt: '2026-11-30T10:00:00.000Z', resumeCount: 0 } });
      rc.set(CONNECTOR_GRANTS_CONTEXT_KEY, [bindGrant({ scope: 'run', connectorId: 'payments.refund', runId: 'run-1', editedInput: { amount: edited } } as const, { tenant: 'acme', input: { amount: 10 } })]);
      const { agent } = agentWith([{ toolCall: call('payments.refund', 'c1', { amount: 10 }) }, { text: 'done' }], { tools: { 'payments.refund': refund }, guardrails: [capped] });
      await agent.generate('refund', { requestContext: rc });
      expect(refunded).toEqual(ran);
      expect(toolAudit.events().at(-1)?.code).toBe(code);
    }
  });

  it('is a step of the run of its own with a journal, and a halt on it ends the loop', async () => {
    const entries = new Map<string, JsonValue>();
    const journal: VerdictJournal = { read: async (id) => entries.get(id), record: async (id, entry) => { entries.set(id, entry); return entry; } };
    const halting: Guardrail = {
      name: 'refund-stop',
      placements: ['tool-args'],
      check: ({ value }) => ((value as { amount: number }).amount > 100 ? { action: 'halt', outcome: 'complete', detections: ['amount.cap'] } : { action: 'allow', outcome: 'complete', detections: [] }),
    };
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT_KEY });
    const { refund, refunded } = approvalsFor(gateway);
    const { agent } = agentWith([{ toolCall: call('payments.refund', 'c1', { amount: 10 }) }, { text: 'never said' }], { tools: { 'payments.refund': refund }, guardrails: [halting], verdictJournal: journal });
    const answer = agent.generate('refund', { requestContext: context(), runId: 'run-edit' });
    const request = await gateway.waitForRequest();
    gateway.decide(request.payload.approvalId, { verdict: 'approve-with-edits', editedArguments: { amount: 500 } });
    await expect(answer).resolves.toMatchObject({ stopReason: 'guardrail' });
    expect(refunded).toEqual([]);
    expect(entries.size).toBe(2);
    const steps = [...entries.values()].map((entry) => (entry as { key: { step: string }; decision: { verdict: { action: string } } }));
    expect(steps.map((entry) => [entry.key.step, entry.decision.verdict.action])).toEqual([['c1', 'allow'], ['c1#edit', 'halt']]);
  });
});

describe('D30 a loop with no guardrails', () => {
  it('writes no guardrail steps: no verdict recorded, no guardrail record', async () => {
    const touched: string[] = [];
    const spy: VerdictJournal = { read: async () => { touched.push('read'); return undefined; }, record: async (_id, entry) => { touched.push('record'); return entry; } };
    const { tool } = issueCredit();
    const { agent, audit } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 1 }) }, { text: 'ok' }], { tools: { 'issue-credit': tool }, verdictJournal: spy });
    await agent.generate('go', { requestContext: context(), runId: 'run-1' });
    expect(touched).toEqual([]);
    expect(audit.events().filter((e) => e.boundary === 'guardrail')).toEqual([]);
  });
});

describe('D31 what the record of a turn says', () => {
  it('names the tool, the action and the guardrail, and how many guardrails ran; its reason is a fixed sentence', async () => {
    const { tool } = issueCredit();
    const chatty: Guardrail = { name: 'chatty', placements: ['tool-args'], check: ({ value }) => ({ action: 'deny', outcome: 'complete', detections: [], reason: `amount ${JSON.stringify(value)} is wrong` }) };
    const { agent, audit } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 31337 }) }, { text: 'ok' }], { tools: { 'issue-credit': tool }, guardrails: [verdictOn('first', 'allow'), chatty] });
    await agent.generate('go', { requestContext: context() });
    const [event] = audit.events().filter((e) => e.boundary === 'guardrail');
    expect(event).toMatchObject({ code: 'GUARDRAIL.DENIED', reason: 'refused by a guardrail', detail: { tool: 'issue-credit', verdict: 'deny', guardrail: 'chatty', checked: 2 } });
    expect(withoutRandomIds(JSON.stringify(audit.events()))).not.toContain('31337');
  });
});

describe('D38/D39 placements and actions in the loop', () => {
  it('runs pre-prompt guardrails in the loop too (Duraton evaluates only tool-args): the model sees the masked prompt', async () => {
    const { agent, model } = agentWith([{ text: 'ok' }], { guardrails: [createPiiGuardrail({ placements: ['pre-prompt'] })] });
    await agent.generate('mail jane@example.com', { requestContext: context() });
    expect(model.prompts[0]).toContain('mail [EMAIL]');
    expect(model.prompts[0]).not.toContain('jane@example.com');
  });

  it('hands a mask\'s payload to the handler, never the original', async () => {
    const { tool, credited } = issueCredit();
    const mask: Guardrail = { name: 'cap', placements: ['tool-args'], check: () => ({ action: 'mask', outcome: 'complete', detections: [], payload: { amount: 100 } }) };
    const { agent } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 5000 }) }, { text: 'ok' }], { tools: { 'issue-credit': tool }, guardrails: [mask] });
    await agent.generate('go', { requestContext: context() });
    expect(credited).toEqual([{ amount: 100 }]);
  });

  it('refuses an approve verdict on a tool with no approvals gateway to park it on', async () => {
    const { tool, credited } = issueCredit();
    const { agent, model } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 5 }) }, { text: 'ok' }], { tools: { 'issue-credit': tool }, guardrails: [verdictOn('ask', 'approve')] });
    await agent.generate('go', { requestContext: context() });
    expect(credited).toEqual([]);
    expect(JSON.stringify(toolResults(model.prompts[1]))).toContain('no approvals gateway');
  });
});

describe('D3/D5/D6 Duraton loop options', () => {
  it('refuses maxIterations, prompt and turn by name (maxSteps, generate(prompt) and model take their place), and a tool list', () => {
    for (const option of ['maxIterations', 'prompt', 'turn']) {
      expect(() => agentWith([{ text: 'x' }], { [option]: 6 } as never)).toThrow(`unknown config field "${option}"`);
    }
    const { tool } = issueCredit();
    expect(() => agentWith([{ text: 'x' }], { tools: [tool] as never })).toThrow('tools must be a record of tools');
  });

  it('caps the model calls at maxSteps', async () => {
    const { tool } = issueCredit();
    const { agent, model } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 1 }) }], { tools: { 'issue-credit': tool }, maxSteps: 3 });
    await agent.generate('go', { requestContext: context() });
    expect(model.prompts).toHaveLength(3);
  });
});

describe('D44 a guardrail never changes what it judges', () => {
  it('gets a frozen copy: a write to the value fails its check (deny/partial) and the handler never sees it', async () => {
    const { tool, credited } = issueCredit();
    const meddling: Guardrail = { name: 'meddling', placements: ['tool-args'], check: ({ value }) => { (value as { amount: number }).amount = 0; return { action: 'allow', outcome: 'complete', detections: [] }; } };
    const { agent, audit } = agentWith([{ toolCall: call('issue-credit', 'c1', { amount: 5 }) }, { text: 'ok' }], { tools: { 'issue-credit': tool }, guardrails: [meddling] });
    await agent.generate('go', { requestContext: context() });
    expect(credited).toEqual([]);
    expect(audit.events().filter((e) => e.boundary === 'guardrail')).toEqual([expect.objectContaining({ code: 'GUARDRAIL.FAULT', detail: expect.objectContaining({ fault: 'threw' }) })]);
  });
});
