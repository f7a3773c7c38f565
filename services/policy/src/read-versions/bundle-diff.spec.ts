import { describe, expect, it } from '@jest/globals';
import { type JsonValue } from '@gatehouse/contracts';
import { diffJson } from './bundle-diff.js';

describe('diffJson', () => {
  it('reports added, removed and changed values at their pointers', () => {
    expect(diffJson({ a: 1, b: { c: 2 }, d: 'x' }, { a: 1, b: { c: 3 }, e: true })).toEqual([
      { path: '/b/c', op: 'changed', from: 2, to: 3 },
      { path: '/d', op: 'removed', from: 'x' },
      { path: '/e', op: 'added', to: true },
    ]);
  });

  it('matches policies by id, so a reordering is no change and an edit names the policy', () => {
    const v1: JsonValue = { policies: [{ id: 'refund-limit', max: 100 }, { id: 'no-weekend', on: true }] };
    const v2: JsonValue = { policies: [{ id: 'no-weekend', on: true }, { id: 'refund-limit', max: 250 }, { id: 'vip', on: false }] };
    expect(diffJson(v1, v2)).toEqual([
      { path: '/policies/refund-limit/max', op: 'changed', from: 100, to: 250 },
      { path: '/policies/vip', op: 'added', to: { id: 'vip', on: false } },
    ]);
  });

  it('escapes pointer tokens and compares other arrays by index', () => {
    expect(diffJson({ 'a/b': [1, 2] }, { 'a/b': [1, 3, 4] })).toEqual([
      { path: '/a~1b/1', op: 'changed', from: 2, to: 3 },
      { path: '/a~1b/2', op: 'added', to: 4 },
    ]);
    expect(diffJson({ same: [1] }, { same: [1] })).toEqual([]);
  });
});
