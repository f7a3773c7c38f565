import { describe, expect, it } from '@jest/globals';
import { canonicalJson, cloneJson, isJsonObject, isJsonValue, jsonEqual, MAX_JSON_DEPTH } from './json.js';
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

describe('canonicalJson', () => {
  // The text digests and signatures were taken over, as first defined: every value must keep it.
  const reference = (value: unknown): string =>
    JSON.stringify(value, (_key, v: unknown) =>
      v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
    );
  /** The text, or the class of the error, the same way for both. */
  const outcome = (write: (value: unknown) => string, value: unknown): string => {
    try {
      return `text ${String(write(value))}`;
    } catch (error) {
      return `throws ${(error as Error).constructor.name}`;
    }
  };

  it('sorts keys at every level and writes one text whatever the insertion order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { f: 1, e: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"e":2,"f":1}]},"b":1}');
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });

  it('writes every tricky value byte for byte as its definition does', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = { back: cyclic };
    const getter = Object.defineProperty({ z: 1 }, 'a', { get: () => ({ y: 2, x: 1 }), enumerable: true });
    const hidden = Object.defineProperty({ b: 1 }, 'a', { value: 2, enumerable: false });
    const holey = new Array<unknown>(3);
    holey[1] = 'x';
    const arrayWithProps = Object.assign([2, 1], { extra: 1 });
    class Point {
      constructor(
        readonly y = 1,
        readonly x = 2,
      ) {}
    }
    const deep = (levels: number): unknown => {
      let value: unknown = { b: 1, a: 2 };
      for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { z: value, y: i };
      return value;
    };
    const cases: unknown[] = [
      { '10': 1, '9': 2, b: 3, a: 4, '01': 5, '4294967295': 6, '4294967294': 7, '-1': 8, '1.5': 9, '': 10 },
      { x: { '2': 'b', '1': 'a' } },
      JSON.parse('{"__proto__":{"b":1,"a":2},"a":1}'),
      { é: 1, e: 2, ä: 3, '\u{1F600}': 4, '\uffff': 5, '\ud800': 6, Z: 7, _: 8, ' ': 9 },
      { s: 'quote " backslash \\ newline \n tab \t nul \u0000 lone \udc00 emoji \u{1F600} line sep \u2028' },
      [-0, 0, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, 0.1 + 0.2, -1.5e300, 123456789012345680000],
      Object.assign(Object.create(null) as object, { b: 1, a: [Object.assign(Object.create(null) as object, { d: 1, c: 2 })] }),
      deep(MAX_JSON_DEPTH - 2),
      deep(MAX_JSON_DEPTH),
      deep(MAX_JSON_DEPTH + 2),
      deep(300),
      { a: undefined, b: 1 },
      [undefined, 1, () => 1, Symbol('s')],
      holey,
      { f: () => 1, s: Symbol('s'), n: Number.NaN, i: -Infinity },
      { d: new Date(0), m: new Map([[1, 2]]), set: new Set([1]), p: new Point(), r: /x/g },
      { t: { toJSON: () => ({ b: 1, a: 2 }) }, u: { toJSON: 1, a: 2 } },
      getter,
      hidden,
      arrayWithProps,
      new Number(3),
      Object('str'),
      cyclic,
      { big: 10n },
      undefined,
      null,
      'top',
      42,
      true,
      [],
      {},
    ];
    for (const value of cases) expect(outcome(canonicalJson, value)).toBe(outcome(reference, value));
  });

  it('writes thousands of generated values as its definition does', () => {
    // A seeded generator (mulberry32): the same values on every run.
    let seed = 22;
    const random = (): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const keys = ['a', 'b', 'B', 'aa', 'a b', '_', 'é', '\u{1F600}', '\ud800', '', '0', '1', '10', '2', '007', '1e3', '__proto__', 'toJSON', 'constructor', 'zz'];
    const leaves: unknown[] = [0, -0, 1, -1.25, 1e21, 1e-9, Number.NaN, 'x', '', '"\\\n', '\udfff', true, false, null, undefined];
    const make = (depth: number): unknown => {
      const roll = random();
      if (depth > 4 || roll < 0.35) return pick(leaves);
      if (roll < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => make(depth + 1));
      const object: Record<string, unknown> = random() < 0.1 ? (Object.create(null) as Record<string, unknown>) : {};
      for (let i = Math.floor(random() * 6); i > 0; i--) Object.defineProperty(object, pick(keys), { value: make(depth + 1), enumerable: true, writable: true, configurable: true });
      return object;
    };
    for (let i = 0; i < 5_000; i++) {
      const value = make(0);
      expect(outcome(canonicalJson, value)).toBe(outcome(reference, value));
    }
  });
});
