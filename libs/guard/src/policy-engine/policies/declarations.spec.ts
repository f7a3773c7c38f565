// The shipped policies declare every detection they report, so the engine records their names
// and never has to replace one with `undeclared`.
import { describe, expect, it } from '@jest/globals';
import { evaluatePolicies, snapshotPolicies } from '../evaluate.js';
import { type PolicyEvaluator, UNDECLARED_DETECTION } from '../types.js';
import { classifierPolicy } from './classifier-policy.js';
import { denyPatterns } from './deny-patterns.js';
import { maxTextLength } from './max-text-length.js';
import { piiSecrets } from './pii-secrets.js';

async function recorded(policy: PolicyEvaluator, text: string, phase: 'input' | 'output' = 'input') {
  return evaluatePolicies(snapshotPolicies([policy], 'test'), {
    phase, channel: 'answer', final: true, timeoutMs: 1000, segmentLength: text.length,
    textFor: () => ({ text, offset: 0, segmentLength: text.length, previousSegmentLength: 0 }),
  } as never);
}

describe('the shipped policies declare their detections', () => {
  it('denyPatterns declares deny-pattern:<index> for each of its patterns, and no more', async () => {
    const policy = denyPatterns(['alpha', /beta\d/, 'gamma']);
    expect(policy.detections).toEqual(['deny-pattern:0', 'deny-pattern:1', 'deny-pattern:2']);
    expect(await recorded(policy, 'beta7 and gamma')).toMatchObject({ kind: 'denied', detections: ['deny-pattern:1', 'deny-pattern:2'] });
  });

  it('maxTextLength declares max-text-length', async () => {
    const policy = maxTextLength(3, { phases: ['input'] });
    expect(policy.detections).toEqual(['max-text-length']);
    expect(await recorded(policy, 'too long')).toMatchObject({ kind: 'denied', detections: ['max-text-length'] });
  });

  it('piiSecrets declares the detectors it runs', async () => {
    expect(piiSecrets({ detectors: ['email', 'jwt'] }).detections).toEqual(['email', 'jwt']);
    const all = piiSecrets();
    expect(await recorded(all, 'write to jane@example.com')).toMatchObject({ kind: 'denied', detections: ['email'] });
  });

  it('classifierPolicy declares its configured labels and its failures, which reach the record', async () => {
    const policy = classifierPolicy({ classify: () => ({ allowed: false, label: 'toxicity.high' }), labels: ['toxicity.high'] });
    expect(await recorded(policy, 'x')).toMatchObject({ kind: 'denied', detections: ['toxicity.high'] });
    const failing = classifierPolicy({ classify: () => { throw new Error('down'); } });
    expect(await recorded(failing, 'x')).toMatchObject({ kind: 'denied', detections: ['classifier-error'] });
  });

  it('none of them reports a name it did not declare', async () => {
    const outcomes = await Promise.all([
      recorded(denyPatterns(['a']), 'a'),
      recorded(piiSecrets(), 'key AKIAIOSFODNN7EXAMPLE, mail a@b.example, card 4111 1111 1111 1111'),
      recorded(maxTextLength(1, { phases: ['input'] }), 'ab'),
    ]);
    for (const outcome of outcomes) expect(JSON.stringify(outcome)).not.toContain(UNDECLARED_DETECTION);
  });
});

describe('a declaration', () => {
  it.each([
    ['not an array', 'email'],
    ['a name with a space', ['an email']],
    ['a name that is not a string', [7]],
  ])('that is %s is refused when the engine is built', (_case, detections) => {
    const policy = { name: 'p', phases: ['input'], channels: ['answer'], detections, evaluate: () => ({ allowed: true }) } as never;
    expect(() => snapshotPolicies([policy], 'test')).toThrow(TypeError);
  });

  it('is copied when the engine is built: adding a name later changes nothing', async () => {
    const detections = ['seen'];
    const policy: PolicyEvaluator = { name: 'p', phases: ['input'], channels: ['answer'], detections, evaluate: () => ({ allowed: false, detections: ['seen', 'late'] }) };
    const snapshot = snapshotPolicies([policy], 'test');
    detections.push('late');
    const outcome = await evaluatePolicies(snapshot, {
      phase: 'input', channel: 'answer', final: true, timeoutMs: 1000,
      textFor: () => ({ text: 'x', offset: 0, segmentLength: 1, previousSegmentLength: 0 }),
    } as never);
    expect(outcome).toEqual({ kind: 'denied', policy: 'p', detections: ['seen', UNDECLARED_DETECTION] });
  });
});
