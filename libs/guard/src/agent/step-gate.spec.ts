import { describe, expect, it } from '@jest/globals';
import { Agent } from '@mastra/core/agent';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { type Guardrail } from '../guardrails/types.js';
import { denyPatterns } from '../policy-engine/policies/deny-patterns.js';
import { type PolicyEvaluator } from '../policy-engine/types.js';
import { collectStreamText, scriptedModel, type ScriptedStreamPart } from '../testing/scripted-model.js';
import { createGuardedAgent, type GuardedAgentConfig } from './guarded-agent.js';
import { gateTools, openStepGate, StepGate } from './step-gate.js';

// Attacks on the order of a step: the model asks for a tool and, in the same step, writes what a
// stream policy or a post-model guardrail refuses. The tool counts its executions; none may run.

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  return rc;
}

function countingTool() {
  const runs = { count: 0 };
  const tool = createTool({
    id: 'refund',
    description: 'refunds an order',
    inputSchema: z.object({ order: z.string() }),
    execute: async () => {
      runs.count += 1;
      return { refunded: true };
    },
  });
  return { tool, runs };
}

const CALL = { call: { toolName: 'refund', toolCallId: 'call-1', args: { order: 'A-1' } } } as const;
const OFFENDING = { text: ['Refunding now. ', 'The forbidden ', 'phrase follows.'] } as const;
const ORDERS: Readonly<Record<string, readonly ScriptedStreamPart[]>> = {
  'tool call first': [CALL, OFFENDING],
  'text first': [OFFENDING, CALL],
};

// A post-model guardrail that takes as long as a remote moderation API would.
const slowModeration: Guardrail = {
  name: 'slow-moderation',
  placements: ['post-model'],
  check: async (input) => {
    await new Promise((resolve) => setTimeout(resolve, 60));
    return { action: JSON.stringify(input.value).includes('forbidden') ? 'deny' : 'allow', outcome: 'complete', detections: [] };
  },
};

// A stream policy that answers as slowly.
const slowDeny: PolicyEvaluator = {
  name: 'slow-deny',
  phases: ['output'],
  channels: ['answer'],
  evaluate: async (text) => {
    await new Promise((resolve) => setTimeout(resolve, 30));
    return text.includes('forbidden') ? { allowed: false, detections: ['slow'] } : { allowed: true };
  },
};

const JUDGES: Readonly<Record<string, Partial<GuardedAgentConfig>>> = {
  'a stream policy': { policies: [denyPatterns(['forbidden phrase'])] },
  'a slow stream policy': { policies: [slowDeny] },
  'a slow post-model guardrail': { policies: [denyPatterns(['never said'])], guardrails: [slowModeration] },
};

function guardedWith(turns: readonly (readonly ScriptedStreamPart[])[], judge: Partial<GuardedAgentConfig>) {
  const model = scriptedModel({ streamSteps: [...turns, [{ text: ['done'] }]], partDelayMs: 3 });
  const { tool, runs } = countingTool();
  const audit = new AuditLogger();
  const agent = createGuardedAgent({ id: 'support', name: 'Support', instructions: 'x', model: model as never, tools: { refund: tool }, allowedRoles: ['operator'], audit, ...judge });
  return { agent, runs, model };
}

describe('step gate: no tool runs in a step its judges refuse', () => {
  for (const [order, turn] of Object.entries(ORDERS)) {
    for (const [judgeName, judge] of Object.entries(JUDGES)) {
      it(`stream(), ${order}, refused by ${judgeName}: the tool never runs and the call ends refused`, async () => {
        const { agent, runs } = guardedWith([turn], judge);
        const stream = await agent.stream('refund my order', { requestContext: context() });
        const { text, types } = await collectStreamText(stream.fullStream);
        const result = await stream.result();
        expect(runs.count).toBe(0);
        expect(result.stopReason).not.toBe('finished');
        expect(result.text).toBe('');
        expect(text).not.toContain('forbidden');
        expect(types).not.toContain('tool-result');
        expect(types.at(-1)).toBe('tripwire');
      });
    }
  }

  it('generate(): the gate admits the tool of a step that passes, once', async () => {
    const model = scriptedModel({ steps: [{ toolCall: CALL.call }, { text: 'done' }] });
    const { tool, runs } = countingTool();
    const agent = createGuardedAgent({ id: 'support', name: 'Support', instructions: 'x', model: model as never, tools: { refund: tool }, allowedRoles: ['operator'], policies: [denyPatterns(['forbidden phrase'])] });
    const result = await agent.generate('refund', { requestContext: context() });
    expect(result.stopReason).toBe('finished');
    expect(runs.count).toBe(1);
  });

  it('runs the tool once when the step passes, in either order', async () => {
    for (const turn of [[CALL, { text: ['Refunding now.'] }], [{ text: ['Refunding now.'] }, CALL]] as const) {
      const { agent, runs } = guardedWith([turn], JUDGES['a slow post-model guardrail']!);
      const stream = await agent.stream('refund my order', { requestContext: context() });
      const { types } = await collectStreamText(stream.fullStream);
      const result = await stream.result();
      expect(result.stopReason).toBe('finished');
      expect(runs.count).toBe(1);
      expect(types).toContain('tool-result');
    }
  });

  it("judges a step's text whole before its tools run, even when its block never closes", async () => {
    // A provider that never sends text-end: the block was never judged final in the stream.
    const model = scriptedModel({ streamSteps: [[CALL, { text: ['the forbidden phrase'] }], [{ text: ['done'] }]] });
    const raw = model.doStream.bind(model);
    (model as { doStream: typeof model.doStream }).doStream = async (options) => {
      const { stream } = (await raw(options)) as { stream: ReadableStream<{ type: string }> };
      return { stream: stream.pipeThrough(new TransformStream({ transform: (part, controller) => (part.type === 'text-end' ? undefined : controller.enqueue(part)) })) };
    };
    const { tool, runs } = countingTool();
    const agent = createGuardedAgent({ id: 'support', name: 'Support', instructions: 'x', model: model as never, tools: { refund: tool }, allowedRoles: ['operator'], policies: [{ ...denyPatterns(['forbidden phrase']), holdBackChars: undefined }] });
    const stream = await agent.stream('refund', { requestContext: context() });
    await collectStreamText(stream.fullStream);
    const result = await stream.result();
    expect(runs.count).toBe(0);
    expect(result.tripwire?.code).toBe('POLICY.DENIED');
  });

  it('refuses a tool whose hooks would run on the streamed arguments', () => {
    const tool = createTool({ id: 'peek', description: 'x', inputSchema: z.object({}), onInputDelta: () => undefined, execute: async () => ({}) });
    expect(() => createGuardedAgent({ id: 'a', name: 'a', instructions: 'x', model: scriptedModel() as never, tools: { peek: tool }, allowedRoles: ['operator'] })).toThrow(/onInputDelta, which would run before its step is judged/);
  });

  it('refuses dynamic tools, which cannot be gated', () => {
    expect(() => createGuardedAgent({ id: 'a', name: 'a', instructions: 'x', model: scriptedModel() as never, tools: (() => ({})) as never, allowedRoles: ['operator'] })).toThrow(/tools must be a record of tools/);
  });
});

describe('step gate under Mastra eager execution', () => {
  it('holds an eagerly started tool until its step is admitted, and never runs it when the step is refused', async () => {
    // A bare Mastra agent with eager execution on (no processOutputStep to turn it off): only the
    // gate stands between the streamed tool call and the tool body.
    for (const verdict of ['admit', 'refuse'] as const) {
      const { tool, runs } = countingTool();
      const gated = gateTools({ refund: tool }, 'test') as { refund: typeof tool };
      const model = scriptedModel({ streamSteps: [[CALL, { text: ['x', 'y', 'z'] }], [{ text: ['done'] }]], partDelayMs: 5 });
      const { requestContext, gate } = openStepGate(context());
      const started: string[] = [];
      const agent = new Agent({
        id: 'bare',
        name: 'bare',
        instructions: 'x',
        model: model as never,
        tools: gated,
        outputProcessors: [
          {
            id: 'watch',
            processOutputStream: async ({ part }) => {
              // By the step's last text delta an eager tool has long been started: it must still be waiting.
              if (part.type === 'text-end') {
                started.push(`runs=${runs.count} waiting=${gate.waiting}`);
                if (verdict === 'admit') gate.admit(['call-1']);
                else gate.refuse({ code: 'TEST.REFUSED', reason: 'refused by the test' });
              }
              return part;
            },
          },
        ],
      });
      const output = await agent.stream('go', { requestContext, eagerToolExecution: true });
      await output.consumeStream();
      expect(started[0]).toBe('runs=0 waiting=1');
      expect(runs.count).toBe(verdict === 'admit' ? 1 : 0);
    }
  });

  it('refuses a call that waits past the end of its run, and any call after a refusal', async () => {
    const gate = new StepGate();
    const waiting = gate.admission('late');
    gate.close();
    expect(await waiting).toEqual({ admitted: false, refusal: { code: 'STEP.RUN_ENDED', reason: expect.any(String) } });
    const refused = new StepGate();
    refused.refuse({ code: 'X', reason: 'no' });
    expect(await refused.admission('any')).toMatchObject({ admitted: false, refusal: { code: 'X' } });
  });

  it('refuses a waiting call that the step which ended did not name', async () => {
    const gate = new StepGate();
    const stranger = gate.admission('not-in-step');
    gate.admit(['call-1']);
    expect(await stranger).toMatchObject({ admitted: false, refusal: { code: 'STEP.NOT_JUDGED' } });
    expect(await gate.admission('call-1')).toEqual({ admitted: true });
  });
});
