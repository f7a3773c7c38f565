import { describe, expect, it } from '@jest/globals';
import { runGuardrails, validateGuardrails, validateVerdict } from './run-guardrails.js';
import { type Guardrail, type GuardrailInput, type GuardrailPlacement, type GuardrailVerdict } from './types.js';

const input = (value: GuardrailInput['value'] = 'hello there', placement: GuardrailPlacement = 'tool-args'): GuardrailInput => ({ placement, value, context: { agentId: 'a' }, signal: new AbortController().signal });

function guardrail(name: string, verdict: GuardrailVerdict | (() => unknown), placements: GuardrailPlacement[] = ['tool-args'], calls: string[] = []): Guardrail {
  return {
    name,
    placements,
    ...(typeof verdict === 'function' ? {} : { detections: verdict.detections }),
    check: () => {
      calls.push(name);
      return (typeof verdict === 'function' ? verdict() : verdict) as GuardrailVerdict;
    },
  };
}
const allow: GuardrailVerdict = { action: 'allow', outcome: 'complete', detections: [] };
const deny: GuardrailVerdict = { action: 'deny', outcome: 'complete', detections: ['rule.x'], reason: 'limit.exceeded' };

describe('runGuardrails: ordering and placement', () => {
  it('keeps the detections of guardrails that all allowed on the allow (a record then names the bundle an allow was made under)', async () => {
    const versioned: GuardrailVerdict = { action: 'allow', outcome: 'complete', detections: ['gatekeeper.allow', 'gatekeeper.bundle:refunds@3'] };
    const decision = await runGuardrails([guardrail('gatekeeper', versioned), guardrail('pii', allow), guardrail('again', { ...versioned, detections: ['gatekeeper.allow'] })], input());
    expect(decision).toEqual({ verdict: { action: 'allow', outcome: 'complete', detections: ['gatekeeper.allow', 'gatekeeper.bundle:refunds@3'] }, by: undefined, ran: ['gatekeeper', 'pii', 'again'] });
    expect((await runGuardrails([guardrail('pii', allow)], input())).verdict.detections).toEqual([]);
  });

  it('runs in order and lets the first verdict that is not allow decide; later ones do not run', async () => {
    const calls: string[] = [];
    const decision = await runGuardrails([guardrail('a', allow, undefined, calls), guardrail('b', deny, undefined, calls), guardrail('c', { ...deny, reason: 'scope.denied' }, undefined, calls)], input());
    expect(calls).toEqual(['a', 'b']);
    expect(decision).toMatchObject({ by: 'b', ran: ['a', 'b'], verdict: { action: 'deny', outcome: 'complete', reason: 'limit.exceeded', detections: ['rule.x'] } });
  });

  it('skips a guardrail that does not declare the placement', async () => {
    const calls: string[] = [];
    const decision = await runGuardrails([guardrail('prompt-only', deny, ['pre-prompt'], calls), guardrail('args', allow, ['tool-args'], calls)], input());
    expect(calls).toEqual(['args']);
    expect(decision).toMatchObject({ by: undefined, ran: ['args'], verdict: { action: 'allow', outcome: 'complete' } });
  });

  it('allows with nothing run when no guardrail applies', async () => {
    expect(await runGuardrails([], input())).toMatchObject({ verdict: { action: 'allow' }, ran: [] });
  });
});

describe('runGuardrails: each action', () => {
  it.each<[GuardrailVerdict['action'], Partial<GuardrailVerdict>]>([
    ['observe', { detections: ['rule.seen'] }],
    ['mask', { payload: { to: '[EMAIL]' } }],
    ['rewrite', { payload: 'repaired' }],
    ['deny', {}],
    ['approve', {}],
    ['halt', {}],
  ])('returns %s as the deciding verdict', async (action, extra) => {
    const later: string[] = [];
    const decision = await runGuardrails([guardrail('first', { action, outcome: 'complete', detections: [], ...extra }), guardrail('later', deny, undefined, later)], input());
    expect(decision.by).toBe('first');
    expect(decision.verdict).toMatchObject({ action, ...extra });
    expect(later).toEqual([]);
  });

  it('hands back a frozen copy of a mask payload, so the guardrail cannot change it afterwards', async () => {
    const payload = { to: '[EMAIL]' };
    const decision = await runGuardrails([guardrail('m', { action: 'mask', outcome: 'complete', detections: ['pii.email'], payload })], input());
    payload.to = 'changed@example.com';
    expect(decision.verdict.payload).toEqual({ to: '[EMAIL]' });
    expect(Object.isFrozen(decision.verdict.payload)).toBe(true);
  });
});

describe('runGuardrails: faults fail closed', () => {
  it('turns a throwing guardrail into deny/partial without its message', async () => {
    const decision = await runGuardrails([guardrail('boom', () => { throw new Error('secret value 4111'); })], input());
    expect(decision).toMatchObject({ by: 'boom', fault: 'threw', verdict: { action: 'deny', outcome: 'partial', reason: 'guardrail.fault' } });
    expect(JSON.stringify(decision)).not.toContain('secret value');
  });

  it('turns a rejecting async guardrail into deny/partial', async () => {
    const decision = await runGuardrails([{ name: 'async', placements: ['tool-args'], check: async () => Promise.reject(new Error('x')) }], input());
    expect(decision.verdict).toMatchObject({ action: 'deny', outcome: 'partial' });
  });

  it.each<[string, unknown]>([
    ['a mask without a payload', { action: 'mask', outcome: 'complete', detections: [] }],
    ['a rewrite with a non-JSON payload', { action: 'rewrite', outcome: 'complete', detections: [], payload: new Date() }],
    ['a deny carrying a payload', { action: 'deny', outcome: 'complete', detections: [], payload: 'x' }],
    ['an unknown action', { action: 'block', outcome: 'complete', detections: [] }],
    ['an allow that is only partial', { action: 'allow', outcome: 'partial', detections: [] }],
    ['detections that are not names', { action: 'deny', outcome: 'complete', detections: ['jane@example.com matched'] }],
    ['undefined', undefined],
    ['an unknown field', { action: 'allow', outcome: 'complete', detections: [], extra: 1 }],
  ])('treats %s as a fault (deny/partial)', async (_what, answer) => {
    const decision = await runGuardrails([guardrail('bad', () => answer)], input());
    expect(decision).toMatchObject({ fault: 'invalid-verdict', verdict: { action: 'deny', outcome: 'partial' } });
  });

  it('times out a guardrail that never answers, and aborts its signal', async () => {
    let aborted = false;
    const hanging: Guardrail = {
      name: 'slow',
      placements: ['tool-args'],
      check: ({ signal }) => new Promise<GuardrailVerdict>(() => signal.addEventListener('abort', () => (aborted = true))),
    };
    const decision = await runGuardrails([hanging], input(), { timeoutMs: 20 });
    expect(decision).toMatchObject({ fault: 'timeout', verdict: { action: 'deny', outcome: 'partial' } });
    expect(aborted).toBe(true);
  });

  it('drops a reason that is not a catalogue code, whatever it says', async () => {
    for (const reason of ['found jane@example.com in the request', 'nothing to see', 'toString', '__proto__', '']) {
      const decision = await runGuardrails([guardrail('leaky', { action: 'deny', outcome: 'complete', detections: [], reason })], input({ to: 'jane@example.com' }));
      expect(decision).toMatchObject({ by: 'leaky', verdict: { action: 'deny', outcome: 'complete' } });
      expect(decision.verdict).not.toHaveProperty('reason');
      expect(decision.fault).toBeUndefined();
    }
  });

  it('refuses a reason that is not a string as an invalid verdict', async () => {
    const decision = await runGuardrails([guardrail('odd', () => ({ action: 'deny', outcome: 'complete', detections: [], reason: { code: 'limit.exceeded' } }))], input());
    expect(decision).toMatchObject({ fault: 'invalid-verdict', verdict: { action: 'deny', outcome: 'partial', reason: 'guardrail.invalid-verdict' } });
  });
});

describe('validateVerdict', () => {
  it('accepts a complete verdict and freezes it', () => {
    const v = validateVerdict({ action: 'observe', outcome: 'complete', detections: ['pii.email'], reason: 'pii.detected' });
    expect(v).toEqual({ action: 'observe', outcome: 'complete', detections: ['pii.email'], reason: 'pii.detected' });
    expect(Object.isFrozen(v)).toBe(true);
  });
});

describe('declared detections', () => {
  it('refuses a guardrail whose declaration is not a list of names', () => {
    const bad = (detections: unknown) => ({ name: 'g', placements: ['tool-args'], detections, check: () => allow }) as unknown as Guardrail;
    expect(() => validateGuardrails([bad('pii.email')], 'test')).toThrow(TypeError);
    expect(() => validateGuardrails([bad(['an email'])], 'test')).toThrow(TypeError);
    expect(validateGuardrails([bad(['pii.email', 'schema.$ref', 'gatekeeper.bundle:set@3'])], 'test')).toHaveLength(1);
  });

  it('records a declared name beside a $ (schema.$ref) instead of refusing the verdict', async () => {
    const refs = guardrail('schema', { action: 'deny', outcome: 'complete', detections: ['schema.$ref', 'schema.required'], reason: 'schema.invalid' });
    expect((await runGuardrails([refs], input())).verdict).toMatchObject({ action: 'deny', outcome: 'complete', detections: ['schema.$ref', 'schema.required'] });
  });

  it('treats a declaration getter that throws as declaring nothing, and keeps the verdict', async () => {
    const throwing = { name: 'g', placements: ['tool-args'], get detections(): string[] { throw new Error('x'); }, check: () => deny } as Guardrail;
    expect((await runGuardrails([throwing], input())).verdict).toMatchObject({ action: 'deny', detections: ['undeclared'] });
  });
});
