import { type JsonValue } from '@gatehouse/contracts';

/**
 * True when `value` survives a JSON round trip unchanged: no Date, Map, class instance,
 * non-finite number, sparse array or nested undefined. A replayed result must have the type
 * the first call returned.
 */
export function isJsonNative(value: unknown): value is JsonValue | undefined {
  if (value === undefined) return true;
  const seen = new Set<object>();
  const walk = (v: unknown): boolean => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
    if (typeof v === 'number') return Number.isFinite(v);
    if (typeof v !== 'object' || seen.has(v)) return false;
    seen.add(v);
    try {
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i += 1) if (!(i in v) || !walk(v[i])) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      return Object.keys(v).every((k) => {
        const d = Object.getOwnPropertyDescriptor(v, k);
        return d !== undefined && 'value' in d && d.value !== undefined && walk(d.value);
      });
    } finally {
      seen.delete(v);
    }
  };
  return walk(value);
}

/** A deep copy of a JSON-native value (a JSON round trip; `undefined` stays `undefined`). */
export function cloneJson<T extends JsonValue | undefined>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}
