import { describe, expect, it } from '@jest/globals';
import { Agent, TripWire } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { RequestContext } from '@mastra/core/request-context';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { RBACMiddleware } from '../rbac/rbac-middleware.js';
import { collectStreamText, scriptedModel } from '../testing/scripted-model.js';
import { createContentPolicyGate } from './content-policy-gate.js';
import { denyPatterns } from './policies/deny-patterns.js';
import { maxTextLength } from './policies/max-text-length.js';
import { PolicyEngine } from './policy-engine.js';
import { type PolicyEvaluator, policyDenialReason } from './types.js';

function plainAgent(model: ReturnType<typeof scriptedModel>, engine: PolicyEngine, extraInput: unknown[] = []) {
  const agent = new Agent({
    id: 'plain',
    name: 'plain',
    instructions: 'x',
    model: model as never,
    inputProcessors: [...extraInput, engine] as never,
    outputProcessors: [engine],
  });
  new Mastra({ agents: { plain: agent }, logger: false });
  return agent;
}

const throwingAbort = (reason?: string): never => {
  throw new TripWire(reason ?? 'aborted');
};

describe('PolicyEngine', () => {
  it('snapshots the policy list: later changes do not alter enforcement', async () => {
    const policies: PolicyEvaluator[] = [denyPatterns(['alpha'])];
    const engine = new PolicyEngine({ policies });
    policies.length = 0;
    policies.push(denyPatterns(['hello']));
    const agent = plainAgent(scriptedModel({ text: 'ok' }), engine);
    const allowed = await agent.generate('hello');
    expect(allowed.tripwire).toBeUndefined();
    const denied = await agent.generate('alpha');
    expect(denied.tripwire?.reason).toBe(policyDenialReason('deny-patterns', 'input'));
  });

  it('shows the caller a static reason, never what the evaluator saw', async () => {
    const leaky: PolicyEvaluator = {
      name: 'leaky',
      phases: ['input'],
      channels: ['answer'],
      detections: ['ok-id'],
      evaluate: () => ({ allowed: false, detections: ['card 4111 1111 1111 1111', 'ok-id'] }),
    };
    const audit = new AuditLogger();
    const agent = plainAgent(scriptedModel(), new PolicyEngine({ policies: [leaky], audit }));
    const result = await agent.generate('my card is 4111 1111 1111 1111');
    expect(result.tripwire?.reason).toBe('Content blocked by policy "leaky" (input)');
    expect(JSON.stringify(audit.events())).not.toContain('4111 1111'); // grouped: ids and timestamps are random digits
    expect(audit.events()[0]?.detections).toEqual(['ok-id', 'undeclared']);
  });

  it('aborts on a non-string text chunk instead of passing it unjudged', async () => {
    const engine = new PolicyEngine({ policies: [denyPatterns(['x'])], holdBack: true });
    await expect(
      engine.processOutputStream({
        part: { type: 'text-delta', runId: 'r', from: 'AGENT', payload: { id: 't', text: 42 } } as never,
        streamParts: [],
        state: {},
        abort: throwingAbort as never,
        retryCount: 0,
      }),
    ).rejects.toThrow('Content policy evaluation failed');
  });

  it('without hold-back judges each chunk before it is shown, so earlier chunks may already be visible', async () => {
    const engine = new PolicyEngine({ policies: [denyPatterns(['ABC-123'])] });
    const agent = plainAgent(scriptedModel({ chunks: ['The code is ABC', '-123 ok'] }), engine);
    const stream = await agent.stream('hi');
    const { text } = await collectStreamText(stream.fullStream as never);
    expect(text).toBe('The code is ABC');
    expect(stream.tripwire?.reason).toBe(policyDenialReason('deny-patterns', 'output'));
  });

  it('with an unbounded policy emits nothing from a denied segment', async () => {
    const engine = new PolicyEngine({ policies: [denyPatterns([/secret-\d+/])], holdBack: true });
    const agent = plainAgent(scriptedModel({ chunks: ['lots of harmless words ', 'and then secret-', '42 appears'] }), engine);
    const stream = await agent.stream('hi');
    const { text } = await collectStreamText(stream.fullStream as never);
    expect(text).toBe('');
  });

  it('fails closed when a policy exceeds the evaluation deadline', async () => {
    const slow: PolicyEvaluator = { name: 'slow', phases: ['input'], channels: ['answer'], evaluate: () => new Promise(() => undefined) };
    const agent = plainAgent(scriptedModel(), new PolicyEngine({ policies: [slow], evaluationTimeoutMs: 50 }));
    const result = await agent.generate('hi');
    expect(result.tripwire?.reason).toBe('Content policy evaluation failed');
  });

  it('refuses unknown options and malformed policies at construction', () => {
    expect(() => new PolicyEngine({ policies: [], holdback: true } as never)).toThrow(/unknown option "holdback"/);
    expect(() => new PolicyEngine({ policies: [{ name: 'x', phases: ['middle'], channels: ['answer'], evaluate: () => ({ allowed: true }) }] as never })).toThrow(/invalid phases/);
    expect(() => new PolicyEngine({ policies: [denyPatterns(['a']), denyPatterns(['b'])] })).toThrow(/two policies are named/);
  });
});

describe('RBACMiddleware on a plain Mastra agent', () => {
  it('refuses a caller whose role is not allowed, before the model', async () => {
    const model = scriptedModel();
    const agent = new Agent({ id: 'rbac', name: 'rbac', instructions: 'x', model: model as never, inputProcessors: [new RBACMiddleware({ allowedRoles: ['admin'] })] });
    new Mastra({ agents: { rbac: agent }, logger: false });
    const rc = new RequestContext();
    rc.set(ACTOR_CONTEXT_KEY, { id: 'u', role: 'viewer' });
    const result = await agent.generate('hi', { requestContext: rc });
    expect(result.tripwire?.reason).toBe('Caller is not authorized to use this agent');
    expect(model.prompts).toHaveLength(0);
    rc.set(ACTOR_CONTEXT_KEY, { id: 'u', role: 'admin' });
    expect((await agent.generate('hi', { requestContext: rc })).tripwire).toBeUndefined();
  });
});

describe('createContentPolicyGate', () => {
  it('returns only allowed, denied or error', async () => {
    const failing: PolicyEvaluator = { name: 'failing', phases: ['input'], channels: ['answer'], evaluate: () => { throw new Error('x'); } };
    const audit = new AuditLogger();
    const gate = createContentPolicyGate({ policies: [denyPatterns(['drop table'])], audit });
    expect(await gate.check({ text: 'select 1' })).toEqual({ status: 'allowed' });
    expect(await gate.check({ text: 'DROP TABLE users' })).toEqual({ status: 'denied' });
    expect(await createContentPolicyGate({ policies: [failing] }).check({ text: 'a' })).toEqual({ status: 'error' });
    expect(JSON.stringify(audit.events())).not.toContain('users');
  });

  it('refuses a policy that could never judge input', () => {
    expect(() => createContentPolicyGate({ policies: [maxTextLength(100)] })).toThrow(/never judges input/);
    expect(createContentPolicyGate({ policies: [maxTextLength(100, { phases: ['input'] })] })).toBeDefined();
  });
});

describe('PolicyEngine on structured-output snapshots', () => {
  const part = (object: unknown) => ({ type: 'object', runId: 'r', from: 'AGENT', object }) as never;
  const args = (p: never) => ({ part: p, streamParts: [], state: {}, abort: throwingAbort as never, retryCount: 0 });

  it('judges the canonical JSON of an object chunk and forwards the canonical clone', async () => {
    const engine = new PolicyEngine({ policies: [denyPatterns(['internal-only'])] });
    const input = { b: 1, a: { note: 'fine' } };
    const out = (await engine.processOutputStream(args(part(input)))) as unknown as { object: unknown };
    expect(out.object).toEqual(input);
    expect(out.object).not.toBe(input);
    await expect(engine.processOutputStream(args(part({ note: 'INTERNAL-ONLY data' })))).rejects.toThrow('Content blocked by policy "deny-patterns" (output)');
  });

  it('aborts on a snapshot JSON cannot carry faithfully', async () => {
    const engine = new PolicyEngine({ policies: [denyPatterns(['x'])] });
    const withGetter = Object.defineProperty({}, 'secret', { get: () => 'changes every read', enumerable: true });
    await expect(engine.processOutputStream(args(part(withGetter)))).rejects.toThrow('Content policy evaluation failed');
    await expect(engine.processOutputStream(args(part({ n: Number.NaN })))).rejects.toThrow('Content policy evaluation failed');
  });
});
