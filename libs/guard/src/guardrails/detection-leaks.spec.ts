// An attacker's view of detection names: a content policy or a guardrail (user-written, or one
// fooled by its input) that spells what it judged into the names of its detections. A detection
// name travels to the audit record, the audit export and the SIEM, so only names declared before
// any content was seen may get there; every other one becomes the single `undeclared` marker.
import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { createGuardedAgent } from '../agent/guarded-agent.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { type AuditEvent } from '../audit/types.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { evaluatePolicies, snapshotPolicies } from '../policy-engine/evaluate.js';
import { type PolicyEvaluator } from '../policy-engine/types.js';
import { scriptedModel, type ScriptedStep } from '../testing/scripted-model.js';
import { recordsOf } from './leak-records.testing.js';
import { runGuardrails } from './run-guardrails.js';
import { type Guardrail, type GuardrailPlacement } from './types.js';

const PROMPT = 'refund order q7z of 4242 to card 4111111111111111';
const ARGS = { orderId: 'q7z', amount: 4242 };
const base64 = (text: string) => Buffer.from(text).toString('base64url');

/** Names a leaky inspector gives, each carrying a fragment of what it judged (all valid name shapes). */
const LEAKS = [
  { name: 'a number from the text', detection: 'leaky.4242', fragment: '4242' },
  { name: 'a three-character id', detection: 'order:q7z', fragment: 'q7z' },
  { name: 'a card number', detection: 'card-4111111111111111', fragment: '4111111111111111' },
  { name: 'the value base64-encoded', detection: `b64.${base64('q7z:4242')}`, fragment: base64('q7z:4242') },
] as const;

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-1', entryPath: 'test' });
  return rc;
}

function leakyPolicy(detection: string): PolicyEvaluator {
  return {
    name: 'leaky-policy',
    phases: ['input'],
    channels: ['answer'],
    detections: ['leaky.hit'],
    evaluate: () => ({ allowed: false, detections: ['leaky.hit', detection] }),
  };
}

function leakyGuardrail(placement: GuardrailPlacement, detection: string): Guardrail {
  return {
    name: 'leaky-guardrail',
    placements: [placement],
    detections: ['leaky.hit'],
    check: () => ({ action: 'deny', outcome: 'complete', detections: ['leaky.hit', detection], reason: 'content.blocked' }),
  };
}

function agentWith(steps: ScriptedStep[], parts: { policies?: PolicyEvaluator[]; guardrails?: Guardrail[] }) {
  const exported: AuditEvent[] = [];
  const audit = new AuditLogger({ sink: (event) => void exported.push(event) });
  const model = scriptedModel({ steps });
  const refund = createTool({
    id: 'issue-refund',
    description: 'Refund an order',
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    execute: async () => ({ refunded: true }),
  });
  const agent = createGuardedAgent({
    id: 'refund-bot', name: 'Refund bot', instructions: 'Refund orders.', model: model as never,
    allowedRoles: ['operator'], tools: { 'issue-refund': refund }, audit, maxSteps: 3, ...parts,
  });
  return { agent, audit, exported, model };
}

const toolCall: ScriptedStep = { toolCall: { toolName: 'issue-refund', toolCallId: 'call-1', args: ARGS } };

describe('a detection name that carries the judged content', () => {
  describe.each(LEAKS)('$name', ({ detection, fragment }) => {
    it('from an input policy reaches neither the audit record, the export nor the SIEM event', async () => {
      const { agent, audit, exported, model } = agentWith([{ text: 'ok' }], { policies: [leakyPolicy(detection)] });
      const result = await agent.generate(PROMPT, { requestContext: context() });
      expect(result.tripwire).toMatchObject({ code: 'POLICY.DENIED' });
      expect(model.prompts).toHaveLength(0);
      const denial = audit.events().find((e) => e.code === 'POLICY.DENIED');
      expect(denial?.detections).toEqual(['leaky.hit', 'undeclared']);
      expect(exported.length).toBeGreaterThan(0);
      expect(recordsOf(audit, exported)).not.toContain(fragment);
    });

    it('from a tool-args guardrail reaches neither the audit record, the export nor the SIEM event', async () => {
      const { agent, audit, exported } = agentWith([toolCall, { text: 'done' }], { guardrails: [leakyGuardrail('tool-args', detection)] });
      await agent.generate('go', { requestContext: context() });
      const decision = audit.events().find((e) => e.boundary === 'guardrail');
      expect(decision).toMatchObject({ code: 'GUARDRAIL.DENIED', detections: ['leaky.hit', 'undeclared'] });
      expect(recordsOf(audit, exported)).not.toContain(fragment);
    });

    it('as Duraton\'s { rule, detected } from a tool-args guardrail reaches neither the audit record, the export nor the SIEM event', async () => {
      const duratonShaped = {
        name: 'leaky-guardrail',
        placements: ['tool-args'],
        detections: ['leaky.hit'],
        check: () => ({ action: 'deny', outcome: 'complete', detections: [{ rule: 'leaky.hit', detected: true }, { rule: detection, detected: true }] }),
      } as unknown as Guardrail;
      const { agent, audit, exported } = agentWith([toolCall, { text: 'done' }], { guardrails: [duratonShaped] });
      await agent.generate('go', { requestContext: context() });
      expect(audit.events().find((e) => e.boundary === 'guardrail')).toMatchObject({ code: 'GUARDRAIL.DENIED', detections: ['leaky.hit', 'undeclared'] });
      expect(recordsOf(audit, exported)).not.toContain(fragment);
    });

    it('from a pre-prompt guardrail reaches neither the record nor the caller', async () => {
      const { agent, audit, exported } = agentWith([{ text: 'ok' }], { guardrails: [leakyGuardrail('pre-prompt', detection)] });
      const result = await agent.generate(PROMPT, { requestContext: context() });
      expect(result.tripwire).toMatchObject({ code: 'GUARDRAIL.DENIED' });
      expect(JSON.stringify(result.tripwire)).not.toContain(fragment);
      expect(recordsOf(audit, exported)).not.toContain(fragment);
    });
  });

  it('collapses any number of undeclared names into one marker, so not even their count is recorded', async () => {
    const many: Guardrail = {
      name: 'many',
      placements: ['egress'],
      detections: ['leaky.hit'],
      check: () => ({ action: 'deny', outcome: 'complete', detections: ['a.1', 'leaky.hit', 'a.2', 'a.3', 'leaky.hit'] }),
    };
    const { verdict } = await runGuardrails([many], { placement: 'egress', value: 'x', context: {}, signal: new AbortController().signal });
    expect(verdict.detections).toEqual(['leaky.hit', 'undeclared']);
  });

  it('from a guardrail that declares nothing is only the marker, and its verdict still stands', async () => {
    const legacy: Guardrail = { name: 'legacy', placements: ['egress'], check: () => ({ action: 'deny', outcome: 'complete', detections: ['order:q7z'] }) };
    const { verdict } = await runGuardrails([legacy], { placement: 'egress', value: 'x', context: {}, signal: new AbortController().signal });
    expect(verdict).toMatchObject({ action: 'deny', detections: ['undeclared'] });
  });

  it('from a policy that declares nothing is only the marker, and its denial still stands', async () => {
    const legacy: PolicyEvaluator = { name: 'legacy', phases: ['input'], channels: ['answer'], evaluate: () => ({ allowed: false, detections: ['order:q7z', 'n.4242'] }) };
    // segmentLength in both places: the request's shape is changing under the Unicode work.
    const outcome = await evaluatePolicies(snapshotPolicies([legacy], 'test'), {
      phase: 'input', channel: 'answer', final: true, timeoutMs: 1000, segmentLength: 1,
      textFor: () => ({ text: 'x', offset: 0, segmentLength: 1, previousSegmentLength: 0 }),
    } as never);
    expect(outcome).toEqual({ kind: 'denied', policy: 'legacy', detections: ['undeclared'] });
  });

  it('from allowing guardrails is dropped from the allow record as well', async () => {
    const chatty: Guardrail = { name: 'chatty', placements: ['egress'], detections: ['seen'], check: () => ({ action: 'allow', outcome: 'complete', detections: ['seen', 'host:q7z'] }) };
    const { verdict } = await runGuardrails([chatty], { placement: 'egress', value: 'x', context: {}, signal: new AbortController().signal });
    expect(verdict.detections).toEqual(['seen', 'undeclared']);
  });
});
