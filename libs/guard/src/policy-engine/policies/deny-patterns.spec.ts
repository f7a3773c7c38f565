import { describe, expect, it } from '@jest/globals';
import { judge } from './judge.testing.js';
import { denyPatterns } from './deny-patterns.js';


describe('denyPatterns', () => {
  describe('string patterns', () => {
    it('denies a phrase regardless of letter case', async () => {
      const policy = denyPatterns(['Project Nightingale']);
      expect(await judge(policy, 'the PROJECT nightingale files')).toEqual({
        allowed: false,
        detections: ['deny-pattern:0'],
      });
    });

    it('denies full-width letters that fold to the phrase under NFKC', async () => {
      const policy = denyPatterns(['secret plan']);
      expect((await judge(policy, 'the ＳＥＣＲＥＴ ｐｌａｎ is here')).allowed).toBe(false);
    });

    it('matches a full-width pattern against plain text', async () => {
      const policy = denyPatterns(['ｈｕｎｔｅｒ２']);
      expect((await judge(policy, 'password hunter2')).allowed).toBe(false);
    });

    it('allows ordinary prose that contains none of the phrases', async () => {
      const policy = denyPatterns(['drop table', 'rm -rf /']);
      expect(await judge(policy, 'The table was dropped off at the front desk this morning.')).toEqual({ allowed: true });
    });

    it('names every matching pattern by its index, never by its text', async () => {
      const policy = denyPatterns(['alpha', 'bravo', 'charlie']);
      const decision = await judge(policy, 'charlie then alpha');
      expect(decision).toEqual({ allowed: false, detections: ['deny-pattern:0', 'deny-pattern:2'] });
      expect(JSON.stringify(decision)).not.toMatch(/alpha|charlie/);
    });

    it('holds back as many characters as the longest phrase', () => {
      expect(denyPatterns(['abc', 'a longer phrase', 'xy']).holdBackChars).toBe(15);
    });

    it('holds back the longer of a phrase and its NFKC form', () => {
      // U+FB01 (one character) folds to "fi" (two).
      expect(denyPatterns(['\ufb01le']).holdBackChars).toBe(4);
    });
  });

  describe('RegExp patterns', () => {
    it('matches a RegExp as written, so case matters unless it has the i flag', async () => {
      const policy = denyPatterns([/Forbidden/, /banned/i]);
      expect(await judge(policy, 'forbidden')).toEqual({ allowed: true });
      expect(await judge(policy, 'Forbidden')).toEqual({ allowed: false, detections: ['deny-pattern:0'] });
      expect(await judge(policy, 'BANNED')).toEqual({ allowed: false, detections: ['deny-pattern:1'] });
    });

    it('denies on every call with a global RegExp, which would otherwise resume from lastIndex', async () => {
      const policy = denyPatterns([/secret/g]);
      expect((await judge(policy, 'a secret')).allowed).toBe(false);
      expect((await judge(policy, 'a secret')).allowed).toBe(false);
      expect((await judge(policy, 'a secret')).allowed).toBe(false);
    });

    it('matches anywhere with a sticky RegExp, whose flag would pin it to lastIndex', async () => {
      const policy = denyPatterns([/secret/y]);
      expect((await judge(policy, 'the secret')).allowed).toBe(false);
    });

    it('neither reads nor moves the lastIndex of the caller RegExp', async () => {
      const callers = /secret/g;
      callers.lastIndex = 7;
      const policy = denyPatterns([callers]);
      expect((await judge(policy, 'secret at the start')).allowed).toBe(false);
      expect(callers.lastIndex).toBe(7);
      expect(callers.flags).toBe('g');
    });

    it('also tries the NFKC form of the text, so full-width letters meet the RegExp as ASCII', async () => {
      const policy = denyPatterns([/drop table/i]);
      expect((await judge(policy, 'ＤＲＯＰ ＴＡＢＬＥ users')).allowed).toBe(false);
    });

    it('buffers the whole segment when a RegExp is present and no bound is given', () => {
      expect(denyPatterns(['abc', /x+/]).holdBackChars).toBeUndefined();
    });

    it('uses the hold-back bound the caller gives for RegExp patterns', () => {
      expect(denyPatterns([/ab{1,8}/], { holdBackChars: 9 }).holdBackChars).toBe(9);
      expect(denyPatterns([/ab+/], { holdBackChars: Number.POSITIVE_INFINITY }).holdBackChars).toBe(Infinity);
    });
  });

  describe('shape', () => {
    it('defaults to both phases, every channel and the name deny-patterns', () => {
      const policy = denyPatterns(['x']);
      expect(policy.name).toBe('deny-patterns');
      expect(policy.phases).toEqual(['input', 'output']);
      expect(policy.channels).toEqual(['answer', 'reasoning', 'object']);
    });

    it('takes a name, phases and channels from the options', () => {
      const policy = denyPatterns(['x'], { name: 'no-x', phases: ['input'], channels: ['reasoning'] });
      expect([policy.name, policy.phases, policy.channels]).toEqual(['no-x', ['input'], ['reasoning']]);
    });

    it('returns a frozen evaluator with frozen lists and frozen decisions', async () => {
      const policy = denyPatterns(['x']);
      expect(Object.isFrozen(policy)).toBe(true);
      expect(Object.isFrozen(policy.phases)).toBe(true);
      expect(Object.isFrozen(policy.channels)).toBe(true);
      const denied = await judge(policy, 'x');
      expect(Object.isFrozen(denied)).toBe(true);
      expect(!denied.allowed && Object.isFrozen(denied.detections)).toBe(true);
    });

    it('keeps no state between calls: the same text gets the same answer', async () => {
      const policy = denyPatterns(['x', /y/g]);
      const first = await judge(policy, 'x y');
      expect(await judge(policy, 'nothing')).toEqual({ allowed: true });
      expect(await judge(policy, 'x y')).toEqual(first);
    });

    it('is not affected by a later change to the caller options or pattern list', async () => {
      const patterns: (string | RegExp)[] = ['x'];
      const phases: ('input' | 'output')[] = ['input'];
      const policy = denyPatterns(patterns, { phases });
      patterns[0] = 'y';
      phases.push('output');
      expect(policy.phases).toEqual(['input']);
      expect((await judge(policy, 'x')).allowed).toBe(false);
    });
  });

  describe('construction refuses', () => {
    const cases: [string, () => unknown][] = [
      ['an empty pattern list', () => denyPatterns([])],
      ['a patterns value that is not an array', () => denyPatterns('secret' as never)],
      ['an empty string pattern', () => denyPatterns(['ok', ''])],
      ['a blank string pattern', () => denyPatterns(['  \t'])],
      ['a pattern that is neither string nor RegExp', () => denyPatterns([42 as never])],
      ['a RegExp that matches empty text', () => denyPatterns([/x*/])],
      ['an unknown option field', () => denyPatterns(['x'], { holdbackChars: 5 } as never)],
      ['options that are not an object', () => denyPatterns(['x'], 'loud' as never)],
      ['an unknown phase', () => denyPatterns(['x'], { phases: ['inptu' as never] })],
      ['an empty phase list', () => denyPatterns(['x'], { phases: [] })],
      ['a repeated phase', () => denyPatterns(['x'], { phases: ['input', 'input'] })],
      ['an unknown channel', () => denyPatterns(['x'], { channels: ['tool' as never] })],
      ['a zero hold-back', () => denyPatterns([/x/], { holdBackChars: 0 })],
      ['a fractional hold-back', () => denyPatterns([/x/], { holdBackChars: 1.5 })],
      ['a NaN hold-back', () => denyPatterns([/x/], { holdBackChars: Number.NaN })],
      ['a string hold-back', () => denyPatterns([/x/], { holdBackChars: '8' as never })],
      ['a hold-back shorter than a string pattern', () => denyPatterns(['abcdef', /x/], { holdBackChars: 3 })],
      ['an empty name', () => denyPatterns(['x'], { name: '' })],
      ['a name with spaces', () => denyPatterns(['x'], { name: 'my policy' })],
    ];
    it.each(cases)('%s with a TypeError', (_label, build) => {
      expect(build).toThrow(TypeError);
    });

    it('without echoing a pattern in the message', () => {
      const secret = 'AKIAIOSFODNN7EXAMPLE';
      for (const build of [
        () => denyPatterns([secret, '']),
        () => denyPatterns([new RegExp(`${secret}|`)]),
        () => denyPatterns([secret], { [secret]: true } as never),
      ]) {
        expect(build).toThrow(TypeError);
        expect(build).not.toThrow(secret);
      }
    });

    it('with a message that names the misspelled option', () => {
      expect(() => denyPatterns(['x'], { chanels: ['answer'] } as never)).toThrow(/unknown option "chanels"/);
    });
  });
});
