// JSON values, one place for every package: the canonical text that digests and signatures are
// taken over, the check that a value is JSON, a copy and equality. Each walk is bounded by
// depth and refuses cycles, so a hostile value fails cleanly instead of overflowing the stack.
import { type JsonValue } from './events/common.js';

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** How deep a value may nest (levels below it) before `isJsonValue` refuses and `jsonEqual` gives up, unless told otherwise. */
export const MAX_JSON_DEPTH = 64;

/** JSON with object keys sorted at every level: one byte sequence per value. */
export function canonicalJson(value: unknown): string {
  // Digests and signatures are taken over this text, so it may never change: plain JSON data,
  // the usual case, is written by one walk without a sorted copy of every object; anything else
  // (a Date, undefined, a hole, a class instance, a cycle, deep nesting) by the replacer, which
  // defines the text. `json.spec.ts` holds the walk to the replacer's bytes.
  return plainCanonicalJson(value, 0) ?? canonicalJsonByReplacer(value);
}

/** The definition of `canonicalJson`: a JSON.stringify whose replacer sorts each object's keys. */
function canonicalJsonByReplacer(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/**
 * `canonicalJson` of plain JSON data, or undefined where the walk does not reproduce the replacer
 * and leaves the value to it: anything not a string, finite number, boolean, null, dense array or
 * plain object; a `toJSON` method; a key starting with a digit (the replacer's sorted copy lists
 * array-index keys first, in numeric order, as every object does); nesting past MAX_JSON_DEPTH.
 * A getter is read here and, should the walk give up further on, once more by the replacer.
 */
function plainCanonicalJson(value: unknown, depth: number): string | undefined {
  if (typeof value === 'string') return JSON.stringify(value);
  // A finite number's JSON text is its ECMAScript string (-0 included, which both write as 0).
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value === null) return 'null';
  if (typeof value !== 'object' || depth >= MAX_JSON_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) {
      const item = i in value ? plainCanonicalJson(value[i], depth + 1) : undefined;
      if (item === undefined) return undefined;
      text += i === 0 ? item : `,${item}`;
    }
    return `${text}]`;
  }
  if (!hasPlainPrototype(value)) return undefined;
  // Default sort: UTF-16 code units, the replacer's order.
  const keys = Object.keys(value).sort();
  let text = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const first = key.charCodeAt(0);
    if (first >= 0x30 && first <= 0x39) return undefined;
    const item = plainCanonicalJson((value as Record<string, unknown>)[key], depth + 1);
    if (item === undefined) return undefined;
    text += `${i === 0 ? '' : ','}${JSON.stringify(key)}:${item}`;
  }
  return `${text}}`;
}

/** True for a JSON object: not null, not an array. */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * True for a JSON value that survives a JSON round trip unchanged: strings, booleans, null,
 * finite numbers, arrays without holes, and objects with a plain prototype (`Object` or null)
 * whose own keys are data properties holding JSON values; no Date, Map, class instance, getter,
 * `undefined` or cycle, and at most `maxDepth` levels below the value (`Infinity` for no limit).
 */
export function isJsonValue(value: unknown, maxDepth = MAX_JSON_DEPTH): value is JsonValue {
  const seen = new Set<object>();
  const walk = (v: unknown, depth: number): boolean => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
    if (typeof v === 'number') return Number.isFinite(v);
    if (typeof v !== 'object' || depth > maxDepth || seen.has(v)) return false;
    seen.add(v);
    try {
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (!(i in v) || !walk(v[i], depth + 1)) return false;
        return true;
      }
      if (!hasPlainPrototype(v)) return false;
      for (const key of Object.keys(v)) {
        const descriptor = Object.getOwnPropertyDescriptor(v, key);
        if (descriptor === undefined || !('value' in descriptor) || !walk(descriptor.value, depth + 1)) return false;
      }
      return true;
    } finally {
      // A value may share one object in two places; only a cycle is refused.
      seen.delete(v);
    }
  };
  return walk(value, 0);
}

/** A deep copy of a JSON value, by a JSON round trip (`undefined` stays `undefined`). */
export function cloneJson<T extends JsonValue | undefined>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/**
 * JSON equality: `1` equals `1.0`, object key order is irrelevant, arrays compare in order.
 * What is not JSON (`undefined`, a non-finite number, a class instance) is never equal. Throws a
 * RangeError when both sides nest deeper than `maxDepth` levels.
 */
export function jsonEqual(a: unknown, b: unknown, maxDepth = MAX_JSON_DEPTH, depth = 0): boolean {
  if (a === b) return a !== undefined && (typeof a !== 'number' || Number.isFinite(a));
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (depth > maxDepth) throw new RangeError('a value nests too deeply to compare');
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i], maxDepth, depth + 1)) return false;
    return true;
  }
  if (Array.isArray(b) || !hasPlainPrototype(a) || !hasPlainPrototype(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], maxDepth, depth + 1)) return false;
  }
  return true;
}

function hasPlainPrototype(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** A deep, frozen copy of a JSON value (so a guardrail cannot change a payload after it was judged). */
export function freezeJson(value: JsonValue): JsonValue {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return Object.freeze(value.map(freezeJson)) as JsonValue;
  const out: Record<string, JsonValue> = {};
  for (const key of Object.keys(value)) {
    // defineProperty: a `__proto__` key stays an own data property instead of changing the prototype.
    Object.defineProperty(out, key, { value: freezeJson(value[key] as JsonValue), enumerable: true, writable: false, configurable: false });
  }
  return Object.freeze(out);
}
