import { describe, expect, it } from '@jest/globals';
import type { PolicyContext, PolicyEvaluator } from '../types.js';
import { judge as judgeSegment } from './judge.testing.js';
import { maxTextLength } from './max-text-length.js';

// Streaming by default here: the length rule must hold before a segment is final.
const judge = (policy: PolicyEvaluator, text: string, context: Partial<PolicyContext> = {}) => judgeSegment(policy, text, { final: false, ...context });

describe('maxTextLength', () => {
  it('allows a segment of exactly the maximum length', async () => {
    expect(await judge(maxTextLength(5), 'abcde')).toEqual({ allowed: true });
  });

  it('denies a segment one character over the maximum', async () => {
    expect(await judge(maxTextLength(5), 'abcdef')).toEqual({ allowed: false, detections: ['max-text-length'] });
  });

  it('judges the whole segment when it is given only a trailing window', async () => {
    const policy = maxTextLength(12);
    expect(await judge(policy, 'abc', { offset: 10 })).toEqual({ allowed: false, detections: ['max-text-length'] });
    expect(await judge(policy, 'ab', { offset: 10 })).toEqual({ allowed: true });
  });

  it('does not let a segment length smaller than the text under-count', async () => {
    expect((await judge(maxTextLength(3), 'abcdef', { segmentLength: 2 })).allowed).toBe(false);
  });

  it('denies when the segment length is not a number, failing closed', async () => {
    expect((await judge(maxTextLength(100), 'abc', { segmentLength: Number.NaN })).allowed).toBe(false);
  });

  it('needs no hold-back and defaults to the output answer channel', () => {
    const policy = maxTextLength(10);
    expect(policy.holdBackChars).toBe(0);
    expect(policy.name).toBe('max-text-length');
    expect(policy.phases).toEqual(['output']);
    expect(policy.channels).toEqual(['answer']);
  });

  it('can be placed on the input phase for the content gate', () => {
    expect(maxTextLength(10, { phases: ['input'] }).phases).toEqual(['input']);
  });

  it('returns a frozen evaluator', () => {
    const policy = maxTextLength(10);
    expect(Object.isFrozen(policy)).toBe(true);
    expect(Object.isFrozen(policy.phases)).toBe(true);
  });

  describe('construction refuses', () => {
    const cases: [string, () => unknown][] = [
      ['zero', () => maxTextLength(0)],
      ['a negative maximum', () => maxTextLength(-5)],
      ['a fractional maximum', () => maxTextLength(2.5)],
      ['NaN', () => maxTextLength(Number.NaN)],
      ['Infinity', () => maxTextLength(Number.POSITIVE_INFINITY)],
      ['an unsafe integer', () => maxTextLength(2 ** 60)],
      ['a numeric string', () => maxTextLength('100' as never)],
      ['an unknown option field', () => maxTextLength(10, { maxChars: 5 } as never)],
      ['a hold-back option, which this policy does not take', () => maxTextLength(10, { holdBackChars: 5 } as never)],
      ['an unknown phase', () => maxTextLength(10, { phases: ['both' as never] })],
      ['an unknown channel', () => maxTextLength(10, { channels: ['answers' as never] })],
    ];
    it.each(cases)('%s with a TypeError', (_label, build) => {
      expect(build).toThrow(TypeError);
    });
  });
});
