// An attacker's view of guardrail reasons: a guardrail (user-written, or one fooled by its input)
// whose free-text reason repeats, encodes or paraphrases the value it judged. None of it may reach
// the audit record (and so the SIEM), the caller's tripwire, or the tool result the model reads.
import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { createGuardedAgent } from '../agent/guarded-agent.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { type AuditEvent } from '../audit/types.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { scriptedModel, type ScriptedStep } from '../testing/scripted-model.js';
import { recordsOf } from './leak-records.testing.js';
import { GUARDRAIL_REASONS } from './reasons.js';
import { type Guardrail, type GuardrailAction, type GuardrailPlacement } from './types.js';

const ARGS = { orderId: 'q7z', amount: 4242, note: 'hunter-two-secret' };
const PROMPT = 'refund order q7z of 4242, note hunter-two-secret';
const base64 = (text: string) => Buffer.from(text).toString('base64');

/** Reasons a leaky guardrail might give, with the fragment of the value each one carries. */
const LEAKS: readonly { readonly name: string; readonly reason: (value: unknown) => string; readonly fragment: (value: unknown) => string }[] = [
  { name: 'a number from the value', reason: () => 'card ending 4242', fragment: () => '4242' },
  { name: 'a three-character id', reason: () => 'order q7z is not refundable', fragment: () => 'q7z' },
  { name: 'the value base64-encoded', reason: (v) => `blocked ${base64(JSON.stringify(v))}`, fragment: (v) => base64(JSON.stringify(v)) },
  { name: 'the value uppercased', reason: (v) => `blocked ${JSON.stringify(v).toUpperCase()}`, fragment: () => 'HUNTER-TWO-SECRET' },
];

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-1', entryPath: 'test' });
  return rc;
}

function leaky(placement: GuardrailPlacement, action: GuardrailAction, reason: (value: unknown) => string): Guardrail {
  return { name: 'leaky', placements: [placement], check: ({ value }) => ({ action, outcome: 'complete', detections: ['leaky.hit'], reason: reason(value) }) };
}

function agentWith(steps: ScriptedStep[], guardrail: Guardrail, chunks?: readonly string[]) {
  const exported: AuditEvent[] = [];
  const audit = new AuditLogger({ sink: (event) => void exported.push(event) });
  const model = scriptedModel({ steps, ...(chunks ? { chunks } : {}) });
  const refund = createTool({
    id: 'issue-refund',
    description: 'Refund an order',
    inputSchema: z.object({ orderId: z.string(), amount: z.number(), note: z.string() }),
    execute: async () => ({ refunded: true }),
  });
  const agent = createGuardedAgent({
    id: 'refund-bot', name: 'Refund bot', instructions: 'Refund orders.', model: model as never,
    allowedRoles: ['operator'], tools: { 'issue-refund': refund }, guardrails: [guardrail], audit, maxSteps: 3,
  });
  return { agent, audit, exported, model };
}

/** The outputs of the tool results the model received in one prompt (not the call's input, which it wrote). */
function toolResults(prompt: string | undefined): string {
  const messages = JSON.parse(prompt ?? '[]') as { role: string; content: { type?: string; output?: unknown }[] | string }[];
  const parts = messages.filter((m) => m.role === 'tool' && Array.isArray(m.content)).flatMap((m) => m.content as { type?: string; output?: unknown }[]);
  return JSON.stringify(parts.filter((p) => p.type === 'tool-result').map((p) => p.output));
}

const toolCall: ScriptedStep = { toolCall: { toolName: 'issue-refund', toolCallId: 'call-1', args: ARGS } };

describe('a guardrail reason that carries the judged value', () => {
  describe.each(LEAKS)('$name', ({ reason, fragment }) => {
    it('reaches neither the audit record nor the tool result the model reads (tool-args deny)', async () => {
      const { agent, audit, exported, model } = agentWith([toolCall, { text: 'done' }], leaky('tool-args', 'deny', reason));
      await agent.generate('go', { requestContext: context() });
      const leaked = fragment(ARGS);
      const guardrailEvents = audit.events().filter((e) => e.boundary === 'guardrail');
      expect(guardrailEvents).toHaveLength(1);
      expect(guardrailEvents[0]).toMatchObject({ code: 'GUARDRAIL.DENIED', policy: { name: 'leaky' } });
      expect(recordsOf(audit, exported)).not.toContain(leaked);
      const results = toolResults(model.prompts[1]);
      expect(results).toContain('refused');
      expect(results).not.toContain(leaked);
    });

    it('reaches neither the record nor the model when a tool result is refused (tool-result deny)', async () => {
      const { agent, audit, exported, model } = agentWith([toolCall, { text: 'done' }], leaky('tool-result', 'deny', () => reason(ARGS)));
      await agent.generate('go', { requestContext: context() });
      expect(recordsOf(audit, exported)).not.toContain(fragment(ARGS));
      expect(toolResults(model.prompts[1])).not.toContain(fragment(ARGS));
    });

    it('reaches neither the record nor the caller\'s tripwire (pre-prompt deny)', async () => {
      const { agent, audit, exported } = agentWith([{ text: 'ok' }], leaky('pre-prompt', 'deny', reason));
      const result = await agent.generate(PROMPT, { requestContext: context() });
      expect(result).toMatchObject({ stopReason: 'tripwire', tripwire: { code: 'GUARDRAIL.DENIED' } });
      const leaked = fragment(PROMPT);
      expect(JSON.stringify(result.tripwire)).not.toContain(leaked);
      expect(recordsOf(audit, exported)).not.toContain(leaked);
    });

    it('reaches neither the record nor the halt reason the caller sees (tool-args halt)', async () => {
      const { agent, audit, exported, model } = agentWith([toolCall, { text: 'never asked' }], leaky('tool-args', 'halt', reason));
      const result = await agent.generate('go', { requestContext: context() });
      expect(result).toMatchObject({ stopReason: 'guardrail', haltedBy: 'leaky', tripwire: { code: 'GUARDRAIL.HALTED' } });
      const leaked = fragment(ARGS);
      expect(JSON.stringify(result.tripwire)).not.toContain(leaked);
      expect(recordsOf(audit, exported)).not.toContain(leaked);
      expect(model.prompts.slice(1).map(toolResults).join('')).not.toContain(leaked);
    });

    it('reaches neither the record nor the streamed tripwire (post-model deny)', async () => {
      const answer = 'order q7z: 4242 refunded, note hunter-two-secret';
      const { agent, audit, exported } = agentWith([{ text: answer }], leaky('post-model', 'deny', reason), [answer]);
      const stream = await agent.stream('go', { requestContext: context() });
      const chunks: unknown[] = [];
      const reader = stream.fullStream.getReader();
      for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
      const result = await stream.result();
      const leaked = fragment(answer);
      expect(result).toMatchObject({ stopReason: 'tripwire', tripwire: { code: 'GUARDRAIL.DENIED' } });
      expect(JSON.stringify([chunks, result.tripwire])).not.toContain(leaked);
      expect(recordsOf(audit, exported)).not.toContain(leaked);
    });
  });
});

describe('a guardrail reason from the catalogue', () => {
  it('shows its fixed sentence to the model and in the record, which names the code, the action and the guardrail', async () => {
    const { agent, audit, model } = agentWith([toolCall, { text: 'done' }], leaky('tool-args', 'deny', () => 'limit.exceeded'));
    await agent.generate('go', { requestContext: context() });
    expect(audit.events().find((e) => e.boundary === 'guardrail')).toMatchObject({
      code: 'GUARDRAIL.DENIED',
      reason: GUARDRAIL_REASONS['limit.exceeded'],
      policy: { name: 'leaky' },
      detail: { guardrail: 'leaky', verdict: 'deny', reasonCode: 'limit.exceeded' },
    });
    expect(toolResults(model.prompts[1])).toContain(`refused: ${GUARDRAIL_REASONS['limit.exceeded']}`);
  });

  it('shows its fixed sentence in the caller\'s tripwire', async () => {
    const { agent } = agentWith([{ text: 'ok' }], leaky('pre-prompt', 'deny', () => 'injection.detected'));
    const result = await agent.generate(PROMPT, { requestContext: context() });
    expect(result.tripwire).toMatchObject({ code: 'GUARDRAIL.DENIED', reason: GUARDRAIL_REASONS['injection.detected'] });
  });

  it('falls back to the action\'s sentence for a reason outside the catalogue, and says which code it used', async () => {
    const { agent, audit } = agentWith([toolCall, { text: 'never asked' }], leaky('tool-args', 'halt', () => 'Limit.Exceeded'));
    const result = await agent.generate('go', { requestContext: context() });
    expect(result.tripwire).toMatchObject({ code: 'GUARDRAIL.HALTED', reason: GUARDRAIL_REASONS['guardrail.halted'] });
    expect(audit.events().find((e) => e.boundary === 'guardrail')).toMatchObject({ reason: GUARDRAIL_REASONS['guardrail.halted'], detail: { reasonCode: 'guardrail.halted' } });
  });
});
