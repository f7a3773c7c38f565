// JSON values as the specification sees them, beyond the shared helpers of @gatehouse/contracts
// (`jsonEqual`, `isJsonObject`): canonical keys for `uniqueItems`, lengths in code points, and
// plain copies. Everything that walks a value is depth-bounded, so a deeply nested value fails
// cleanly instead of overflowing the stack.
import { type JsonObject, type JsonValue } from '@gatehouse/contracts';
import { EvaluationDepthError, SchemaProblemError } from './problems.js';

/** How deep a value may nest before equality, keys and copies give up. */
export const MAX_VALUE_DEPTH = 256;

/**
 * A string that two values share exactly when they are JSON-equal (keys sorted, numbers in
 * JavaScript's shortest form, strings quoted): lets `uniqueItems` use a Set instead of
 * comparing every pair.
 */
export function canonicalKey(value: JsonValue, depth = 0): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      // String(-0) is "0": -0 and 0 are the same JSON number.
      return String(value);
    case 'string':
      return JSON.stringify(value);
    default:
      break;
  }
  if (depth > MAX_VALUE_DEPTH) throw new EvaluationDepthError('a value nests too deeply to compare');
  if (Array.isArray(value)) return `[${value.map((item) => canonicalKey(item, depth + 1)).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalKey(value[key] as JsonValue, depth + 1)}`).join(',')}}`;
}

/** The length of a string in Unicode code points (a surrogate pair counts once). */
export function codePointLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--;
        i++;
      }
    }
  }
  return length;
}

/**
 * A deep copy as plain objects and arrays: own enumerable keys only, `__proto__` as an ordinary
 * key, every object a distinct one. The index keys schema objects by identity, so a schema
 * that reuses one object in two places (or contains itself) must become a tree first; a cycle
 * ends at the depth limit. Throws a SchemaProblemError for what is not JSON (a key whose value
 * is `undefined` is dropped, as JSON.stringify drops it).
 */
export function plainCopy(value: JsonValue, depth = 0): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new SchemaProblemError('NOT_A_SCHEMA', 'the schema holds a number JSON cannot represent');
    return value;
  }
  if (typeof value !== 'object') throw new SchemaProblemError('NOT_A_SCHEMA', 'the schema holds a value that is not JSON');
  if (depth > MAX_VALUE_DEPTH) throw new SchemaProblemError('TOO_DEEP', `the schema nests deeper than ${MAX_VALUE_DEPTH} levels`);
  if (Array.isArray(value)) {
    const items: JsonValue[] = [];
    for (let i = 0; i < value.length; i++) items.push(plainCopy(value[i] as JsonValue, depth + 1));
    return items;
  }
  const copy: JsonObject = {};
  for (const key of Object.keys(value)) {
    // As JSON.stringify does: a key whose value is `undefined` is not there.
    if (value[key] === undefined) continue;
    Object.defineProperty(copy, key, { value: plainCopy(value[key] as JsonValue, depth + 1), enumerable: true, configurable: true, writable: true });
  }
  return copy;
}
