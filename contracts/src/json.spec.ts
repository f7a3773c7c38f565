import { describe, expect, it } from '@jest/globals';
import { cloneJson, isJsonObject, isJsonValue, jsonEqual, MAX_JSON_DEPTH } from './json.js';
import { type JsonValue } from './events/common.js';

function nested(levels: number): JsonValue {
  let value: JsonValue = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

describe('isJsonValue', () => {
  it('accepts plain JSON, a shared object and a null-prototype object', () => {
    const shared = { x: 1 };
    expect(isJsonValue({ a: [1, 'x', null, { b: true }], c: shared, d: shared })).toBe(true);
    expect(isJsonValue(Object.assign(Object.create(null) as object, { a: 1 }))).toBe(true);
  });

  it('refuses what a JSON round trip would change: dates, class instances, non-finite numbers, holes, undefined, getters, cycles', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    const getter = Object.defineProperty({}, 'a', { get: () => 1, enumerable: true });
    const holey = new Array<number>(3);
    holey[0] = 1;
    for (const value of [new Date(0), new Map(), Number.NaN, Infinity, holey, { a: undefined }, undefined, getter, cyclic, () => 1]) {
      expect(isJsonValue(value)).toBe(false);
    }
  });

  it('refuses a value nested deeper than its limit, and accepts it with a larger one', () => {
    expect(isJsonValue(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(isJsonValue(nested(MAX_JSON_DEPTH + 2))).toBe(false);
    expect(isJsonValue(nested(MAX_JSON_DEPTH + 2), Infinity)).toBe(true);
  });
});

describe('jsonEqual', () => {
  it('compares JSON values regardless of key order and of how a number is written', () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1.0, { c: 'x' }], a: 1 })).toBe(true);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(jsonEqual([], {})).toBe(false);
  });

  it('never finds what is not JSON equal, even to itself', () => {
    const date = new Date(0);
    expect(jsonEqual(undefined, undefined)).toBe(false);
    expect(jsonEqual(Infinity, Infinity)).toBe(false);
    expect(jsonEqual({ at: date }, { at: new Date(0) })).toBe(false);
  });

  it('throws a RangeError past its depth limit, so the caller decides what too deep means', () => {
    expect(jsonEqual(nested(10), nested(10))).toBe(true);
    expect(() => jsonEqual(nested(MAX_JSON_DEPTH + 5), nested(MAX_JSON_DEPTH + 5))).toThrow(RangeError);
    expect(jsonEqual(nested(MAX_JSON_DEPTH + 5), nested(MAX_JSON_DEPTH + 5), 256)).toBe(true);
  });
});

describe('cloneJson and isJsonObject', () => {
  it('copies deeply and keeps a __proto__ key as an own key', () => {
    const original = JSON.parse('{"__proto__": {"a": 1}, "b": [1]}') as JsonValue;
    const copy = cloneJson(original);
    expect(copy).toEqual(original);
    expect(Object.hasOwn(copy as object, '__proto__')).toBe(true);
    expect((copy as Record<string, JsonValue>)['b']).not.toBe((original as Record<string, JsonValue>)['b']);
    expect(cloneJson(undefined)).toBeUndefined();
  });

  it('tells objects from arrays and null', () => {
    expect([isJsonObject({}), isJsonObject([]), isJsonObject(null), isJsonObject('x')]).toEqual([true, false, false, false]);
  });
});
