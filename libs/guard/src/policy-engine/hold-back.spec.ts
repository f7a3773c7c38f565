import { describe, expect, it } from '@jest/globals';
import { snapshotPolicies } from './evaluate.js';
import { releasableLength, tokenRunStart, windowStart } from './hold-back.js';
import { type PolicyEvaluator } from './types.js';

const bounded = (name: string, holdBackChars: number | undefined): PolicyEvaluator => ({
  name,
  phases: ['output'],
  channels: ['answer'],
  holdBackChars,
  evaluate: () => ({ allowed: true }),
});

describe('hold-back arithmetic', () => {
  it('finds the start of the trailing token', () => {
    expect(tokenRunStart('hello world', 11)).toBe(6);
    expect(tokenRunStart('hello world ', 12)).toBe(12);
    expect(tokenRunStart('token', 5)).toBe(0);
  });

  it('keeps the longest window of all policies unreleased', () => {
    const policies = snapshotPolicies([bounded('a', 3), bounded('b', 8)], 'test');
    // 20 chars, ends with whitespace: release all but the last 8.
    expect(releasableLength('abcd efgh ijkl mnop ', policies)).toBe(12);
  });

  it('never releases part of the trailing token', () => {
    const policies = snapshotPolicies([bounded('a', 2)], 'test');
    expect(releasableLength('key is AKIAIOSFOD', policies)).toBe(7);
  });

  it('holds the whole segment when any policy is unbounded', () => {
    const policies = snapshotPolicies([bounded('a', 2), bounded('regex', undefined)], 'test');
    expect(releasableLength('a long text with spaces ', policies)).toBe(0);
    const infinite = snapshotPolicies([bounded('inf', Number.POSITIVE_INFINITY)], 'test');
    expect(releasableLength('a long text with spaces ', infinite)).toBe(0);
  });

  it('starts a window early enough to see a match ending in new text, and the token it cuts', () => {
    expect(windowStart('0123456789 abcdef', 17, 4)).toBe(11);
    expect(windowStart('aaaa bbbb cccc dddd ', 20, 4)).toBe(16);
    expect(windowStart('anything', 0, 4)).toBe(0);
  });
});
