import { type JsonValue } from '@gatehouse/contracts';

/** One difference between two JSON values, at an RFC 6901 pointer. */
export interface JsonChange {
  readonly path: string;
  readonly op: 'added' | 'removed' | 'changed';
  readonly from?: JsonValue;
  readonly to?: JsonValue;
}

const escape = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1');
const isObject = (v: JsonValue | undefined): v is { [key: string]: JsonValue } => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The differences from `a` to `b`, depth first in key order: objects by key, arrays by index,
 * anything else compared as a whole. Policies keyed by `id` in an array are matched by id
 * (`/policies/<id>`), so a reordering is not reported as a change of every element.
 */
export function diffJson(a: JsonValue | undefined, b: JsonValue | undefined, path = ''): JsonChange[] {
  if (a === undefined && b === undefined) return [];
  if (a === undefined) return [{ path: path || '/', op: 'added', to: b as JsonValue }];
  if (b === undefined) return [{ path: path || '/', op: 'removed', from: a }];
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => diffJson(a[k], b[k], `${path}/${escape(k)}`));
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const byId = (list: JsonValue[]) => (list.every((e) => isObject(e) && typeof e['id'] === 'string') ? new Map(list.map((e) => [(e as { id: string }).id, e])) : undefined);
    const ia = byId(a);
    const ib = byId(b);
    if (ia && ib) {
      const ids = [...new Set([...ia.keys(), ...ib.keys()])].sort();
      return ids.flatMap((id) => diffJson(ia.get(id), ib.get(id), `${path}/${escape(id)}`));
    }
    const length = Math.max(a.length, b.length);
    return Array.from({ length }, (_, i) => diffJson(a[i], b[i], `${path}/${i}`)).flat();
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [{ path: path || '/', op: 'changed', from: a, to: b }];
}
