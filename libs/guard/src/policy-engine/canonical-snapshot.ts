// Structured values a policy judges (object snapshots, tool arguments and results) are judged as this
// text, and what is forwarded is parsed back from it, so a value cannot change after it was judged.

/** JSON with sorted keys; undefined for anything JSON cannot carry faithfully (unlike contracts' `canonicalJson`, which does not check). */
export function canonicalSnapshot(value: unknown): string | undefined {
  const seen = new Set<object>();
  const walk = (v: unknown): unknown => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new TypeError('non-finite number');
      return v;
    }
    if (typeof v !== 'object') throw new TypeError('not JSON');
    if (seen.has(v)) throw new TypeError('cycle');
    seen.add(v);
    try {
      if (Array.isArray(v)) return v.map((item) => walk(item));
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) throw new TypeError('not a plain object');
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v).sort()) {
        const descriptor = Object.getOwnPropertyDescriptor(v, key);
        if (!descriptor || !('value' in descriptor)) throw new TypeError('accessor property');
        if (descriptor.value === undefined) continue;
        out[key] = walk(descriptor.value);
      }
      return out;
    } finally {
      seen.delete(v);
    }
  };
  try {
    return JSON.stringify(walk(value));
  } catch {
    return undefined;
  }
}
