import { describe, expect, it } from '@jest/globals';
import { diffJson, sameJson, sides } from './assets/diff.js';

describe('the inbox’s diff of edited against original arguments', () => {
  it('reports only the field an edit changed, with both values', () => {
    expect(diffJson({ orderId: 'o-1', amount: 300 }, { orderId: 'o-1', amount: 120 })).toEqual([{ kind: 'changed', path: '/amount', before: 300, after: 120 }]);
  });

  it('reports added and removed fields at their JSON Pointer, escaping "/" and "~" in keys', () => {
    const changes = diffJson({ a: { 'x/y': 1, keep: true }, gone: 'v' }, { a: { 'x/y': 2, keep: true, 'n~e': null }, fresh: [1] });
    expect(changes).toEqual([
      { kind: 'changed', path: '/a/x~1y', before: 1, after: 2 },
      { kind: 'added', path: '/a/n~0e', after: null },
      { kind: 'removed', path: '/gone', before: 'v' },
      { kind: 'added', path: '/fresh', after: [1] },
    ]);
  });

  it('compares arrays index by index, and a change of type at the field itself', () => {
    expect(diffJson({ items: [1, 2, 3] }, { items: [1, 5] })).toEqual([
      { kind: 'changed', path: '/items/1', before: 2, after: 5 },
      { kind: 'removed', path: '/items/2', before: 3 },
    ]);
    expect(diffJson({ to: { name: 'x' } }, { to: 'x' })).toEqual([{ kind: 'changed', path: '/to', before: { name: 'x' }, after: 'x' }]);
    expect(diffJson(1, 'one')).toEqual([{ kind: 'changed', path: '', before: 1, after: 'one' }]);
  });

  it('finds no change when only the key order differs', () => {
    expect(sameJson({ a: 1, b: [{ c: 2, d: 3 }] }, { b: [{ d: 3, c: 2 }], a: 1 })).toBe(true);
    expect(diffJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toEqual([]);
  });

  it('compares a deeply nested hostile value whole past a depth, as one change', () => {
    let before: unknown = 'x';
    let after: unknown = 'y';
    for (let i = 0; i < 2_000; i += 1) {
      before = [before];
      after = [after];
    }
    const changes = diffJson(before, after);
    expect(changes).toHaveLength(1);
    // 64 levels of "/0", then the rest compared whole.
    expect(changes[0]?.path).toBe('/0'.repeat(64));
  });

  it('prints each side as compact JSON, and nothing for the side a field lacks', () => {
    expect(sides({ kind: 'changed', path: '/a', before: { n: 1 }, after: 'two' })).toEqual({ before: '{"n":1}', after: '"two"' });
    expect(sides({ kind: 'added', path: '/b', after: null })).toEqual({ before: '', after: 'null' });
    expect(sides({ kind: 'removed', path: '/c', before: [1] })).toEqual({ before: '[1]', after: '' });
  });
});
