import { describe, expect, it } from '@jest/globals';
import { AuditLogger } from '../audit/audit-logger.js';
import { check } from './check.js';
import { createPiiGuardrail } from './pii-guardrail.js';
import { type Guardrail, type GuardrailVerdict } from './types.js';

const denyWord = (word: string, action: GuardrailVerdict['action'] = 'deny'): Guardrail => ({
  name: `no-${word}`,
  placements: ['pre-prompt', 'post-model'],
  detections: [`word.${word}`],
  check: ({ value }) => (JSON.stringify(value).includes(word) ? { action, outcome: 'complete', detections: [`word.${word}`], reason: 'word not allowed' } : { action: 'allow', outcome: 'complete', detections: [] }),
});

describe('check: a value on its own', () => {
  it('clears an allowed value and returns it as given', async () => {
    const result = await check('plain', { guardrails: [denyWord('bomb')], input: { placement: 'pre-prompt', value: 'hello' } });
    expect(result).toMatchObject({ tripped: false, value: 'hello', verdict: { action: 'allow' }, cancelled: false });
  });

  it('returns the replacement under mask, without tripping', async () => {
    const result = await check('pii', { guardrails: [createPiiGuardrail()], input: { placement: 'pre-prompt', value: 'mail jane@example.com' } });
    expect(result).toMatchObject({ tripped: false, value: 'mail [EMAIL]', by: 'pii', verdict: { action: 'mask', detections: ['pii.email'] } });
  });

  it('trips on deny and hands back no value', async () => {
    const result = await check('deny', { guardrails: [denyWord('bomb')], input: { placement: 'pre-prompt', value: 'a bomb' } });
    expect(result).toMatchObject({ tripped: true, by: 'no-bomb', stage: 'input' });
    expect(result.value).toBeUndefined();
  });

  it('trips when a guardrail throws (deny/partial)', async () => {
    const result = await check('fault', { guardrails: [{ name: 'boom', placements: ['pre-prompt'], check: () => { throw new Error('x'); } }], input: { placement: 'pre-prompt', value: 'x' } });
    expect(result).toMatchObject({ tripped: true, verdict: { action: 'deny', outcome: 'partial' } });
  });
});

describe('check: guarding a call', () => {
  it('never runs the call when the input check trips', async () => {
    let ran = false;
    const result = await check('gate', { guardrails: [denyWord('bomb')], input: { placement: 'pre-prompt', value: 'bomb' }, call: () => { ran = true; return 'answer'; } });
    expect(ran).toBe(false);
    expect(result.tripped).toBe(true);
    expect(result.result).toBeUndefined();
  });

  it('passes the masked input to the call and checks the output after it', async () => {
    const seen: unknown[] = [];
    const result = await check<string>('both', {
      guardrails: [createPiiGuardrail(), denyWord('secret')],
      input: { placement: 'pre-prompt', value: 'ask jane@example.com' },
      call: (_signal, value) => { seen.push(value); return 'reply to +14155550123'; },
      output: (answer) => ({ placement: 'post-model', value: answer }),
    });
    expect(seen).toEqual(['ask [EMAIL]']);
    expect(result).toMatchObject({ tripped: false, stage: 'output', value: 'reply to [PHONE]', result: 'reply to +14155550123' });
  });

  it('withholds the result when the output check trips', async () => {
    const result = await check<string>('out', { guardrails: [denyWord('secret')], call: () => 'the secret is 42', output: (a) => ({ placement: 'post-model', value: a }) });
    expect(result).toMatchObject({ tripped: true, stage: 'output' });
    expect(result.result).toBeUndefined();
  });

  it('records each decision in the audit trail without content', async () => {
    const audit = new AuditLogger();
    await check('audited', { guardrails: [denyWord('bomb')], input: { placement: 'pre-prompt', value: 'a bomb recipe' }, audit });
    const [event] = audit.events();
    expect(event).toMatchObject({ boundary: 'guardrail', action: 'guardrail.pre-prompt', resource: 'check:audited', decision: 'denied', code: 'GUARDRAIL.DENIED', detections: ['word.bomb'], detail: { placement: 'pre-prompt', guardrail: 'no-bomb', check: 'audited' } });
    expect(JSON.stringify(audit.events())).not.toContain('recipe');
  });
});

describe('check: parallel', () => {
  it('aborts the running call through its AbortSignal when the check trips', async () => {
    let aborted = false;
    const slowDeny: Guardrail = { name: 'slow-deny', placements: ['pre-prompt'], check: async () => { await new Promise((r) => setTimeout(r, 10)); return { action: 'deny', outcome: 'complete', detections: [] }; } };
    const result = await check<string>('race', {
      guardrails: [slowDeny],
      input: { placement: 'pre-prompt', value: 'q' },
      parallel: true,
      call: (signal) => new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => resolve('late answer'), 5_000);
        signal.addEventListener('abort', () => { aborted = true; clearTimeout(timer); reject(new Error('aborted')); });
      }),
    });
    expect(aborted).toBe(true);
    expect(result).toMatchObject({ tripped: true, cancelled: true });
    expect(result.result).toBeUndefined();
  });

  it('returns the call result when the parallel check clears, after both finished', async () => {
    const order: string[] = [];
    const slowAllow: Guardrail = { name: 'slow-allow', placements: ['pre-prompt'], check: async () => { await new Promise((r) => setTimeout(r, 20)); order.push('check'); return { action: 'allow', outcome: 'complete', detections: [] }; } };
    const result = await check<string>('race-ok', { guardrails: [slowAllow], input: { placement: 'pre-prompt', value: 'q' }, parallel: true, call: async () => { order.push('call'); return 'answer'; } });
    expect(order).toEqual(['call', 'check']);
    expect(result).toMatchObject({ tripped: false, result: 'answer', cancelled: false });
  });

  it('refuses parallel without an input check', async () => {
    await expect(check('bad', { guardrails: [], parallel: true, call: () => 1 })).rejects.toThrow(TypeError);
  });
});
