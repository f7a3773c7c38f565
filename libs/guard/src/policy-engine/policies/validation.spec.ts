import { describe, expect, it } from '@jest/globals';
import { readEnumList, readHoldBackChars, readInteger, readName, statelessCopy } from './validation.js';

describe('option validation', () => {
  describe('readName', () => {
    it('keeps a short identifier and falls back when absent', () => {
      expect(readName('p', 'my-policy.v2', 'd')).toBe('my-policy.v2');
      expect(readName('p', undefined, 'd')).toBe('d');
    });

    it.each(['', '-leading', 'has space', 'x'.repeat(65), 'line\nbreak'])('refuses the name %p', (name) => {
      expect(() => readName('p', name, 'd')).toThrow(TypeError);
    });
  });

  describe('readEnumList', () => {
    const allowed = ['a', 'b'] as const;
    it('returns a frozen copy of the fallback when absent', () => {
      const list = readEnumList('p', 'f', undefined, ['a'], allowed);
      expect(list).toEqual(['a']);
      expect(Object.isFrozen(list)).toBe(true);
    });

    it.each([[[]], [['c']], [['a', 'a']], ['a'], [[1]]])('refuses %p', (value) => {
      expect(() => readEnumList('p', 'f', value, ['a'], allowed)).toThrow(TypeError);
    });
  });

  describe('numbers', () => {
    it('accepts integers in range and refuses the rest', () => {
      expect(readInteger('p', 'n', 5, 1, 1, 10)).toBe(5);
      expect(readInteger('p', 'n', undefined, 3, 1, 10)).toBe(3);
      for (const bad of [0, 11, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '5']) {
        expect(() => readInteger('p', 'n', bad, 1, 1, 10)).toThrow(TypeError);
      }
    });

    it('accepts a positive integer or Infinity as a hold-back', () => {
      expect(readHoldBackChars('p', undefined)).toBeUndefined();
      expect(readHoldBackChars('p', 12)).toBe(12);
      expect(readHoldBackChars('p', Number.POSITIVE_INFINITY)).toBe(Infinity);
      for (const bad of [0, -1, 1.5, Number.NaN, Number.NEGATIVE_INFINITY, '12']) {
        expect(() => readHoldBackChars('p', bad)).toThrow(TypeError);
      }
    });
  });

  describe('statelessCopy', () => {
    it('drops g and y but keeps the other flags and the source', () => {
      const copy = statelessCopy(/a.b/dgimsuy);
      expect(copy.source).toBe('a.b');
      expect(copy.flags).toBe('dimsu');
    });

    it('returns a new object, leaving the original untouched', () => {
      const original = /x/g;
      original.lastIndex = 3;
      const copy = statelessCopy(original);
      expect(copy).not.toBe(original);
      expect([original.flags, original.lastIndex]).toEqual(['g', 3]);
    });
  });
});
