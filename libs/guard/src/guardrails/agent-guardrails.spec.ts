import { describe, expect, it } from '@jest/globals';
import { MockMemory } from '@mastra/core/memory';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { createGuardedAgent, type GuardedAgentConfig } from '../agent/guarded-agent.js';
import { createInMemoryApprovalGateway } from '../approvals/in-memory-approval-gateway.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { createConnector } from '../connector-sdk/connector.js';
import { CONNECTOR_EXECUTION_CONTEXT_KEY } from '../connector-sdk/context-keys.js';
import { denyPatterns } from '../policy-engine/policies/deny-patterns.js';
import { scriptedModel, type ScriptedStep } from '../testing/scripted-model.js';
import { createPiiGuardrail } from './pii-guardrail.js';
import { type Guardrail, type GuardrailAction, type GuardrailPlacement, type GuardrailVerdict } from './types.js';

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-1', entryPath: 'test' });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf-1', runId: 'run-1' });
  return rc;
}

/**
 * A guardrail that answers `action` at `placement` when `when(value)` holds, else allows. Its reason
 * is free text, as a careless guardrail's would be: records show the action's catalogue sentence.
 */
function rule(name: string, placement: GuardrailPlacement, action: GuardrailAction, when: (value: unknown) => boolean = () => true, extra: Partial<GuardrailVerdict> = {}): Guardrail {
  return {
    name,
    placements: [placement],
    detections: [`${name}.hit`, ...(extra.detections ?? [])],
    check: ({ value }) => (when(value) ? { action, outcome: 'complete', detections: [`${name}.hit`], reason: `refused by ${name}`, ...extra } : { action: 'allow', outcome: 'complete', detections: [] }),
  };
}

function refundTool(executed: unknown[]) {
  return createTool({
    id: 'issue-refund',
    description: 'Refund an order',
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    execute: async (input) => {
      executed.push(input);
      return { refunded: input.amount, note: 'sent to jane@example.com' };
    },
  });
}

function agentWith(steps: ScriptedStep[], guardrails: Guardrail[], extra: Partial<GuardedAgentConfig> = {}) {
  const audit = new AuditLogger();
  const executed: unknown[] = [];
  const model = scriptedModel({ steps });
  const agent = createGuardedAgent({
    id: 'refund-bot',
    name: 'Refund bot',
    instructions: 'Refund orders.',
    model: model as never,
    allowedRoles: ['operator'],
    tools: { 'issue-refund': refundTool(executed) },
    guardrails,
    audit,
    maxSteps: 4,
    ...extra,
  });
  return { agent, audit, executed, model };
}

/** The tool results a model received in one prompt. */
function toolResults(prompt: string): { toolCallId: string; value: unknown }[] {
  const messages = JSON.parse(prompt) as { role: string; content: { type: string; toolCallId?: string; output?: { value?: unknown } }[] | string }[];
  return messages
    .filter((m) => m.role === 'tool' && Array.isArray(m.content))
    .flatMap((m) => (m.content as { type: string; toolCallId?: string; output?: { value?: unknown } }[]).filter((p) => p.type === 'tool-result'))
    .map((p) => ({ toolCallId: String(p.toolCallId), value: p.output?.value }));
}

const refundCall = (amount: number, id = 'call-1'): ScriptedStep => ({ toolCall: { toolName: 'issue-refund', toolCallId: id, args: { orderId: 'o-1', amount } } });
const over100 = (v: unknown) => (v as { amount?: number }).amount! > 100;

describe('guardrails in the agent loop: tool-args', () => {
  it('returns a denied call to the real model as that tool\'s result, so its next turn sees the refusal', async () => {
    const { agent, audit, executed, model } = agentWith([refundCall(500), refundCall(50, 'call-2'), { text: 'Refunded 50.' }], [rule('refund-limit', 'tool-args', 'deny', over100)]);
    const result = await agent.generate('refund order o-1', { requestContext: context() });
    expect(result).toMatchObject({ text: 'Refunded 50.', stopReason: 'finished' });
    // The model's second turn received the refusal as the tool result of call-1.
    expect(toolResults(model.prompts[1] as string)).toEqual([
      { toolCallId: 'call-1', value: { valid: false, tool: 'issue-refund', error: 'tool call "issue-refund" refused: refused by a guardrail' } },
    ]);
    expect(executed).toEqual([{ orderId: 'o-1', amount: 50 }]);
    const decisions = audit.events().filter((e) => e.boundary === 'guardrail');
    expect(decisions.map((e) => `${e.decision}:${e.code}`)).toEqual(['denied:GUARDRAIL.DENIED', 'allowed:GUARDRAIL.ALLOWED']);
    expect(decisions[0]).toMatchObject({ action: 'guardrail.tool-args', policy: { name: 'refund-limit', phase: 'tool-args' }, detections: ['refund-limit.hit'], detail: { placement: 'tool-args', guardrail: 'refund-limit', tool: 'issue-refund', toolCallId: 'call-1' }, context: { tenant: 'acme', runId: 'run-1' } });
  });

  it('runs the tool with the masked arguments; the original never reaches it', async () => {
    const masker = rule('mask-amount', 'tool-args', 'mask', () => true, { payload: { orderId: 'o-1', amount: 1 } });
    const { agent, executed, audit } = agentWith([refundCall(500), { text: 'done' }], [masker]);
    await agent.generate('go', { requestContext: context() });
    expect(executed).toEqual([{ orderId: 'o-1', amount: 1 }]);
    expect(audit.events().find((e) => e.boundary === 'guardrail')).toMatchObject({ decision: 'masked', code: 'GUARDRAIL.MASKED' });
  });

  it('records an observe verdict and changes nothing', async () => {
    const { agent, executed, audit } = agentWith([refundCall(500), { text: 'done' }], [rule('watch', 'tool-args', 'observe')]);
    await agent.generate('go', { requestContext: context() });
    expect(executed).toEqual([{ orderId: 'o-1', amount: 500 }]);
    expect(audit.events().find((e) => e.boundary === 'guardrail')).toMatchObject({ decision: 'observed', code: 'GUARDRAIL.OBSERVED' });
  });

  it('turns a throwing guardrail into a refusal (deny/partial), never an execution', async () => {
    const boom: Guardrail = { name: 'boom', placements: ['tool-args'], check: () => { throw new Error('crashed on o-1'); } };
    const { agent, executed, audit, model } = agentWith([refundCall(5), { text: 'done' }], [boom]);
    await agent.generate('go', { requestContext: context() });
    expect(executed).toEqual([]);
    expect(model.prompts[1]).toContain('guardrail check failed');
    expect(audit.events().find((e) => e.boundary === 'guardrail')).toMatchObject({ decision: 'error', code: 'GUARDRAIL.FAULT', detail: { fault: 'threw' } });
    expect(JSON.stringify(audit.events())).not.toContain('crashed');
  });

  it('refuses an approve on a tool without an approvals gateway (fail closed)', async () => {
    const { agent, executed, model } = agentWith([refundCall(5), { text: 'done' }], [rule('needs-person', 'tool-args', 'approve')]);
    await agent.generate('go', { requestContext: context() });
    expect(executed).toEqual([]);
    expect(model.prompts[1]).toContain('no approvals gateway');
  });

  it('parks an approve on the connector\'s approvals gateway and runs after a reviewer approves', async () => {
    const gateway = createInMemoryApprovalGateway();
    const executed: unknown[] = [];
    const connectorAudit = new AuditLogger();
    const refund = createConnector<{ orderId: string; amount: number }, unknown>({
      id: 'issue-refund',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
      permissions: { sideEffect: 'write', requiresApproval: true },
      execute: async (i) => { executed.push(i); return { refunded: i.amount }; },
      audit: connectorAudit,
      approvals: { gateway, waitMs: 5_000 },
    });
    const { agent, model } = agentWith([refundCall(5), { text: 'done' }], [rule('needs-person', 'tool-args', 'approve')], { tools: { 'issue-refund': refund } });
    const run = agent.generate('go', { requestContext: context() });
    const request = await gateway.waitForRequest();
    expect(executed).toEqual([]);
    gateway.decide(request.payload.approvalId, { verdict: 'approve' });
    expect((await run).text).toBe('done');
    expect(executed).toEqual([{ orderId: 'o-1', amount: 5 }]);
    expect(model.prompts[1]).toContain('refunded');
  });

  it('parks a call on a person even when the connector itself does not require approval', async () => {
    const gateway = createInMemoryApprovalGateway();
    const executed: unknown[] = [];
    const refund = createConnector<{ orderId: string; amount: number }, unknown>({
      id: 'issue-refund',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
      permissions: { sideEffect: 'write' }, // no requiresApproval: only the guardrail asks for a person
      execute: async (i) => { executed.push(i); return { refunded: i.amount }; },
      audit: new AuditLogger(),
      approvals: { gateway, waitMs: 5_000 },
    });
    const { agent } = agentWith(
      [refundCall(500), { toolCall: { toolName: 'issue-refund', toolCallId: 'call-2', args: { orderId: 'o-2', amount: 5 } } }, { text: 'done' }],
      [rule('big-refunds-need-a-person', 'tool-args', 'approve', over100)],
      { tools: { 'issue-refund': refund } },
    );
    const run = agent.generate('go', { requestContext: context() });
    const request = await gateway.waitForRequest();
    expect(request.payload.reason).toBe('a guardrail requires approval for this call');
    expect(executed).toEqual([]);
    gateway.decide(request.payload.approvalId, { verdict: 'deny' });
    expect((await run).text).toBe('done');
    // The parked call never ran; the small one, which the guardrail allowed, ran without asking.
    expect(executed).toEqual([{ orderId: 'o-2', amount: 5 }]);
    expect(gateway.requests()).toHaveLength(1);
  });
});

describe('guardrails in the agent loop: halt', () => {
  it('ends the loop with stopReason guardrail and haltedBy, keeping sibling calls that already ran on the record', async () => {
    const steps: ScriptedStep[] = [{ toolCalls: [{ toolName: 'issue-refund', toolCallId: 'call-a', args: { orderId: 'o-1', amount: 5 } }, { toolName: 'issue-refund', toolCallId: 'call-b', args: { orderId: 'o-2', amount: 9_999 } }] }, { text: 'should never be asked' }];
    const { agent, executed, audit, model } = agentWith(steps, [rule('fraud-stop', 'tool-args', 'halt', over100)]);
    const result = await agent.generate('go', { requestContext: context() });
    expect(result).toMatchObject({ stopReason: 'guardrail', haltedBy: 'fraud-stop', text: '', tripwire: { code: 'GUARDRAIL.HALTED' } });
    expect(model.prompts).toHaveLength(1);
    expect(executed).toEqual([{ orderId: 'o-1', amount: 5 }]);
    const decisions = audit.events().filter((e) => e.boundary === 'guardrail').map((e) => `${String(e.detail?.['toolCallId'])}:${e.code}`);
    expect(decisions.sort()).toEqual(['call-a:GUARDRAIL.ALLOWED', 'call-b:GUARDRAIL.HALTED']);
  });
});

describe('guardrails in the agent loop: tool-result, pre-prompt, post-model', () => {
  it('masks a tool result before the model sees it', async () => {
    const { agent, model } = agentWith([refundCall(5), { text: 'done' }], [createPiiGuardrail({ placements: ['tool-result'] })]);
    await agent.generate('go', { requestContext: context() });
    expect(model.prompts[1]).toContain('[EMAIL]');
    expect(model.prompts[1]).not.toContain('jane@example.com');
  });

  it('replaces a denied tool result with a refusal', async () => {
    const { agent, model, executed } = agentWith([refundCall(5), { text: 'done' }], [rule('no-results', 'tool-result', 'deny')]);
    await agent.generate('go', { requestContext: context() });
    expect(executed).toHaveLength(1);
    expect(model.prompts[1]).toContain('refused: refused by a guardrail');
    expect(model.prompts[1]).not.toContain('jane@example.com');
  });

  it('masks the prompt before the model sees it', async () => {
    const { agent, model, audit } = agentWith([{ text: 'ok' }], [createPiiGuardrail({ placements: ['pre-prompt'] })]);
    await agent.generate('refund the order of jane@example.com', { requestContext: context() });
    expect(model.prompts[0]).toContain('refund the order of [EMAIL]');
    expect(model.prompts[0]).not.toContain('jane@example.com');
    expect(JSON.stringify(audit.events())).not.toContain('jane@example.com');
  });

  it('refuses a denied prompt before the model runs', async () => {
    const { agent, model } = agentWith([{ text: 'ok' }], [rule('no-prompts', 'pre-prompt', 'deny')]);
    const result = await agent.generate('hello', { requestContext: context() });
    expect(model.prompts).toHaveLength(0);
    expect(result).toMatchObject({ text: '', stopReason: 'tripwire', tripwire: { code: 'GUARDRAIL.DENIED', reason: 'refused by a guardrail' } });
  });

  it('halts on a prompt', async () => {
    const { agent, model } = agentWith([{ text: 'ok' }], [rule('stop-all', 'pre-prompt', 'halt')]);
    const result = await agent.generate('hello', { requestContext: context() });
    expect(model.prompts).toHaveLength(0);
    expect(result).toMatchObject({ stopReason: 'guardrail', haltedBy: 'stop-all' });
  });

  it('masks the answer, and refuses a denied one', async () => {
    const masked = agentWith([{ text: 'write to jane@example.com' }], [createPiiGuardrail({ placements: ['post-model'] })]);
    expect(await masked.agent.generate('hi', { requestContext: context() })).toMatchObject({ text: 'write to [EMAIL]', stopReason: 'finished' });
    const denied = agentWith([{ text: 'the answer' }], [rule('no-answers', 'post-model', 'deny')]);
    expect(await denied.agent.generate('hi', { requestContext: context() })).toMatchObject({ text: '', stopReason: 'tripwire', tripwire: { code: 'GUARDRAIL.DENIED' } });
  });

  it('halts on the answer of generate() with stopReason guardrail, and refuses when the guardrail throws', async () => {
    const halting = agentWith([{ text: 'the answer' }], [rule('stop-all', 'post-model', 'halt')]);
    expect(await halting.agent.generate('hi', { requestContext: context() })).toMatchObject({ stopReason: 'guardrail', haltedBy: 'stop-all', text: '', tripwire: { code: 'GUARDRAIL.HALTED' } });
    const throwing: Guardrail = { name: 'broken', placements: ['post-model'], check: () => { throw new Error('jane@example.com'); } };
    const broken = agentWith([{ text: 'mail jane@example.com' }], [throwing]);
    const result = await broken.agent.generate('hi', { requestContext: context() });
    expect(result).toMatchObject({ stopReason: 'tripwire', text: '' });
    expect(JSON.stringify(result)).not.toContain('jane');
  });
});

describe('guardrails in the agent loop: stream', () => {
  function streaming(chunks: string[], guardrails: Guardrail[], extra: Partial<GuardedAgentConfig> = {}) {
    const audit = new AuditLogger();
    const model = scriptedModel({ chunks });
    const agent = createGuardedAgent({ id: 'support', name: 'Support', instructions: 'Answer.', model: model as never, allowedRoles: ['operator'], guardrails, audit, ...extra });
    return { agent, audit, model };
  }

  async function readAll(stream: ReadableStream<{ type: string; payload?: unknown }>) {
    const chunks: { type: string; payload?: unknown }[] = [];
    const reader = stream.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
    const text = chunks.filter((c) => c.type === 'text-delta').map((c) => String((c.payload as { text: string }).text)).join('');
    return { chunks, text, types: chunks.map((c) => c.type) };
  }

  it('masks a streamed answer before any of it is shown, even an address split across chunks', async () => {
    const { agent } = streaming(['Write to jane@exa', 'mple.com, or call ', 'us.'], [createPiiGuardrail({ placements: ['post-model'] })]);
    const stream = await agent.stream('hi', { requestContext: context() });
    const { chunks, text, types } = await readAll(stream.fullStream);
    expect(text).toBe('Write to [EMAIL], or call us.');
    // No chunk repeats the unjudged answer: step-finish and finish carry no text, messages or steps.
    expect(JSON.stringify(chunks)).not.toContain('jane');
    expect(JSON.stringify(chunks)).not.toContain('exa');
    expect(types.filter((t) => t === 'text-delta')).toHaveLength(1);
    expect(types.indexOf('text-delta')).toBeLessThan(types.indexOf('text-end'));
    expect(await stream.result()).toMatchObject({ stopReason: 'finished', text: 'Write to [EMAIL], or call us.', tripwire: undefined });
  });

  it('serves the judged text on textStream too, and result() without reading the stream', async () => {
    const { agent } = streaming(['mail jane@example.com'], [createPiiGuardrail({ placements: ['post-model'] })]);
    const first = await agent.stream('hi', { requestContext: context() });
    const pieces: string[] = [];
    const reader = first.textStream.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) pieces.push(next.value);
    expect(pieces.join('')).toBe('mail [EMAIL]');
    const second = await agent.stream('hi', { requestContext: context() });
    expect(await second.result()).toMatchObject({ stopReason: 'finished', text: 'mail [EMAIL]' });
  });

  it('refuses a denied streamed answer: nothing of it is shown, the stream ends with a tripwire', async () => {
    const { agent, audit } = streaming(['the secret ', 'answer'], [rule('no-answers', 'post-model', 'deny')]);
    const stream = await agent.stream('hi', { requestContext: context() });
    const { chunks, text, types } = await readAll(stream.fullStream);
    expect(text).toBe('');
    expect(JSON.stringify(chunks)).not.toContain('secret');
    expect(types.at(-1)).toBe('tripwire');
    expect(chunks.at(-1)?.payload).toMatchObject({ reason: 'refused by a guardrail', processorId: 'gatehouse-guardrails', metadata: { code: 'GUARDRAIL.DENIED', guardrail: 'no-answers' } });
    expect(await stream.result()).toMatchObject({ stopReason: 'tripwire', text: '', tripwire: { code: 'GUARDRAIL.DENIED', reason: 'refused by a guardrail' } });
    expect(audit.events().find((e) => e.boundary === 'guardrail')).toMatchObject({ decision: 'denied', code: 'GUARDRAIL.DENIED' });
    expect(JSON.stringify(audit.events())).not.toContain('secret');
  });

  it('halts on a streamed answer with stopReason guardrail', async () => {
    const { agent } = streaming(['fine'], [rule('stop-all', 'post-model', 'halt')]);
    const stream = await agent.stream('hi', { requestContext: context() });
    const { text } = await readAll(stream.fullStream);
    expect(text).toBe('');
    expect(await stream.result()).toMatchObject({ stopReason: 'guardrail', haltedBy: 'stop-all', text: '' });
  });

  it('refuses, never passes, when a post-model guardrail throws', async () => {
    const throwing: Guardrail = { name: 'broken', placements: ['post-model'], check: () => { throw new Error('jane@example.com'); } };
    const { agent } = streaming(['text'], [throwing]);
    const stream = await agent.stream('hi', { requestContext: context() });
    const { text } = await readAll(stream.fullStream);
    expect(text).toBe('');
    const result = await stream.result();
    expect(result).toMatchObject({ stopReason: 'tripwire', text: '' });
    expect(JSON.stringify(result)).not.toContain('jane');
  });

  it('judges the answer after the content policies held its tail back (their tail replaces text-end)', async () => {
    const { agent } = streaming(['Hello ', 'jane@example.com, ', 'how can I help?'], [createPiiGuardrail({ placements: ['post-model'] })], {
      policies: [denyPatterns(['forbidden phrase'])],
    });
    const stream = await agent.stream('hi', { requestContext: context() });
    const { text, types } = await readAll(stream.fullStream);
    expect(text).toBe('Hello [EMAIL], how can I help?');
    expect(types).toContain('text-end');
    expect(await stream.result()).toMatchObject({ stopReason: 'finished', text: 'Hello [EMAIL], how can I help?' });
  });

  it('ends a halted streamed run with stopReason guardrail', async () => {
    const { agent } = agentWith([{ text: 'ok' }], [rule('stop-all', 'pre-prompt', 'halt')]);
    const stream = await agent.stream('hello', { requestContext: context() });
    const reader = stream.fullStream.getReader();
    while (!(await reader.read()).done) { /* drain */ }
    expect(await stream.result()).toMatchObject({ stopReason: 'guardrail', haltedBy: 'stop-all', text: '' });
  });
});

describe('guardrails in the agent loop: post-model and memory', () => {
  // What the thread holds, as a person reading it back (or a later turn) would see it.
  async function stored(memory: MockMemory, thread: string): Promise<string[]> {
    const { messages } = await memory.recall({ threadId: thread, resourceId: 'user-1' } as never);
    return messages.map((m) => `${m.role}: ${((m.content as { parts?: { type: string; text?: string }[] }).parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('')}`);
  }

  /** The PII guardrail at post-model, counting how often it is asked. */
  function countingPii(): { guardrail: Guardrail; calls: () => number } {
    const inner = createPiiGuardrail({ placements: ['post-model'] });
    let calls = 0;
    return { guardrail: { ...inner, check: (input) => { calls += 1; return inner.check(input); } }, calls: () => calls };
  }

  function remembering(guardrails: Guardrail[], options: { steps?: ScriptedStep[]; chunks?: string[] }) {
    const memory = new MockMemory({ options: { lastMessages: 10 } });
    const audit = new AuditLogger();
    const model = scriptedModel(options);
    const agent = createGuardedAgent({ id: 'support', name: 'Support', instructions: 'Answer.', model: model as never, allowedRoles: ['operator'], guardrails, audit, memory: memory as never });
    return { agent, memory, audit, model };
  }

  it('stores the masked answer of generate(), so the thread never holds what the caller did not get', async () => {
    const pii = countingPii();
    const { agent, memory, audit } = remembering([pii.guardrail], { steps: [{ text: 'Write to jane@example.com today.' }] });
    const result = await agent.generate('who handles refunds?', { requestContext: context(), memory: { thread: 't-gen', resource: 'user-1' } });
    expect(result).toMatchObject({ stopReason: 'finished', text: 'Write to [EMAIL] today.' });
    expect(await stored(memory, 't-gen')).toEqual(['user: who handles refunds?', 'assistant: Write to [EMAIL] today.']);
    expect(pii.calls()).toBe(1);
    expect(audit.events().filter((e) => e.boundary === 'guardrail').map((e) => `${e.decision}:${e.code}`)).toEqual(['masked:GUARDRAIL.MASKED']);
  });

  it('stores the masked blocks of stream(), each block judged once for the caller and the memory together', async () => {
    const pii = countingPii();
    const { agent, memory, audit } = remembering([pii.guardrail], { chunks: ['Write to jane@exa', 'mple.com, or call ', 'us.'] });
    const stream = await agent.stream('who handles refunds?', { requestContext: context(), memory: { thread: 't-stream', resource: 'user-1' } });
    expect(await stream.result()).toMatchObject({ stopReason: 'finished', text: 'Write to [EMAIL], or call us.' });
    expect(await stored(memory, 't-stream')).toEqual(['user: who handles refunds?', 'assistant: Write to [EMAIL], or call us.']);
    expect(pii.calls()).toBe(1);
    expect(audit.events().filter((e) => e.boundary === 'guardrail')).toHaveLength(1);
  });

  it('stores nothing of a turn whose answer a guardrail refused, on generate() and on stream()', async () => {
    const deny = rule('no-answers', 'post-model', 'deny', (v) => String(v).includes('secret'));
    const { agent, memory, model } = remembering([deny], { steps: [{ text: 'the secret is 42' }, { text: 'Sorry.' }], chunks: ['the secret ', 'is 42'] });
    const options = { requestContext: context(), memory: { thread: 't-refused', resource: 'user-1' } };
    expect(await agent.generate('tell me', options)).toMatchObject({ stopReason: 'tripwire', text: '', tripwire: { code: 'GUARDRAIL.DENIED' } });
    const stream = await agent.stream('tell me again', options);
    expect(await stream.result()).toMatchObject({ stopReason: 'tripwire', text: '' });
    expect(await agent.generate('ok then', options)).toMatchObject({ text: 'Sorry.' });
    expect(await stored(memory, 't-refused')).toEqual(['user: ok then', 'assistant: Sorry.']);
    expect(model.prompts.at(-1)).not.toContain('secret');
  });
});

describe('guardrails in the agent loop: egress', () => {
  it('lets a guardrail see method, host and path of a connector request and refuse it', async () => {
    const seen: unknown[] = [];
    const egress: Guardrail = { name: 'egress-policy', placements: ['egress'], check: ({ value }) => { seen.push(value); return { action: 'deny', outcome: 'complete', detections: ['egress.blocked'] }; } };
    let sent = false;
    const notify = createConnector<{ to: string }, unknown>({
      id: 'notify',
      description: 'Notify',
      inputSchema: z.object({ to: z.string() }),
      permissions: { sideEffect: 'read', egress: ['api.example.com'] },
      policies: { fetch: async () => { sent = true; return new Response('{}'); } },
      execute: async (_i, _ctx, runtime) => runtime.fetch('https://api.example.com/v1/notify?token=abc', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ to: 'ops' }) }),
    });
    const { agent, model } = agentWith([{ toolCall: { toolName: 'notify', toolCallId: 'n-1', args: { to: 'ops' } } }, { text: 'done' }], [egress], { tools: { notify } });
    await agent.generate('go', { requestContext: context() });
    expect(sent).toBe(false);
    expect(seen).toEqual([{ method: 'POST', host: 'api.example.com', path: '/v1/notify', body: { to: 'ops' } }]);
    expect(model.prompts[1]).toContain('n-1');
  });

  it('asks the guardrail again before following each redirect, and refuses a hop it denies before it is sent', async () => {
    const seen: unknown[] = [];
    const egress: Guardrail = {
      name: 'egress-policy',
      placements: ['egress'],
      check: ({ value }) => {
        seen.push(value);
        const host = (value as { host: string }).host;
        return host === '127.0.0.2' ? { action: 'deny', outcome: 'complete', detections: ['egress.files'] } : { action: 'allow', outcome: 'complete', detections: [] };
      },
    };
    const sent: string[] = [];
    const exportData = createConnector<{ id: string }, unknown>({
      id: 'export',
      description: 'Export',
      inputSchema: z.object({ id: z.string() }),
      // Both hosts are declared (loopback literals, allowed explicitly): only the guardrail can stop the second hop.
      permissions: { sideEffect: 'read', egress: ['127.0.0.1', '127.0.0.2'] },
      policies: {
        networkEgress: { allowedDomains: ['127.0.0.1', '127.0.0.2'], allowPrivateAddresses: ['127.0.0.1', '127.0.0.2'] },
        fetch: async (input) => {
          const url = String(input instanceof Request ? input.url : input);
          sent.push(url);
          return url.startsWith('http://127.0.0.1/') ? new Response(null, { status: 307, headers: { location: 'http://127.0.0.2/dump/7' } }) : new Response('{}');
        },
      },
      execute: async (_i, _ctx, runtime) => runtime.fetch('http://127.0.0.1/v1/export', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: '7' }) }),
    });
    const { agent, audit, model } = agentWith([{ toolCall: { toolName: 'export', toolCallId: 'e-1', args: { id: '7' } } }, { text: 'done' }], [egress], { tools: { export: exportData } });
    await agent.generate('go', { requestContext: context() });
    expect(seen).toEqual([
      { method: 'POST', host: '127.0.0.1', path: '/v1/export', body: { id: '7' } },
      // A 307 sends the same method and body to the next host: the guardrail sees both.
      { method: 'POST', host: '127.0.0.2', path: '/dump/7', body: { id: '7' } },
    ]);
    expect(sent).toEqual(['http://127.0.0.1/v1/export']);
    // One decision per hop on the record; the model reads the refusal as the tool's result.
    expect(audit.events().filter((e) => e.boundary === 'guardrail').map((e) => `${e.code}:${String(e.detail?.['host'])}`)).toEqual(['GUARDRAIL.ALLOWED:127.0.0.1', 'GUARDRAIL.DENIED:127.0.0.2']);
    expect(model.prompts[1]).toContain('egress refused by a guardrail');
  });
});
