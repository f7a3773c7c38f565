/**
 * What an edit changes: the edited arguments against the original ones, field by field, so a
 * reviewer confirms exactly what will run. Pure (no DOM), so a unit spec runs it in Node.
 */

/** One difference at a JSON Pointer (`''` is the whole value). */
export type FieldChange =
  | { readonly kind: 'added'; readonly path: string; readonly after: unknown }
  | { readonly kind: 'removed'; readonly path: string; readonly before: unknown }
  | { readonly kind: 'changed'; readonly path: string; readonly before: unknown; readonly after: unknown };

/**
 * Past this depth two values are compared whole and reported as one change: arguments come
 * from agents, and a hostile nesting must not exhaust the page's stack.
 */
const MAX_DEPTH = 64;

type JsonObject = Readonly<Record<string, unknown>>;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON Pointer segment (RFC 6901). */
const segment = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1');

/** Deep equality of two JSON values; object key order does not matter. */
export function sameJson(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true;
  if (depth > MAX_DEPTH) return JSON.stringify(a) === JSON.stringify(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameJson(item, b[i], depth + 1));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameJson(a[key], b[key], depth + 1));
  }
  return false;
}

/** Every field the edit adds, removes or changes, in the original's order and then the edit's new fields. */
export function diffJson(before: unknown, after: unknown, path = '', depth = 0): FieldChange[] {
  if (sameJson(before, after, depth)) return [];
  if (depth < MAX_DEPTH && isObject(before) && isObject(after)) {
    const changes: FieldChange[] = [];
    for (const key of Object.keys(before)) {
      const at = `${path}/${segment(key)}`;
      if (Object.hasOwn(after, key)) changes.push(...diffJson(before[key], after[key], at, depth + 1));
      else changes.push({ kind: 'removed', path: at, before: before[key] });
    }
    for (const key of Object.keys(after)) if (!Object.hasOwn(before, key)) changes.push({ kind: 'added', path: `${path}/${segment(key)}`, after: after[key] });
    return changes;
  }
  if (depth < MAX_DEPTH && Array.isArray(before) && Array.isArray(after)) {
    const changes: FieldChange[] = [];
    for (let i = 0; i < Math.max(before.length, after.length); i += 1) {
      const at = `${path}/${i}`;
      if (i >= after.length) changes.push({ kind: 'removed', path: at, before: before[i] });
      else if (i >= before.length) changes.push({ kind: 'added', path: at, after: after[i] });
      else changes.push(...diffJson(before[i], after[i], at, depth + 1));
    }
    return changes;
  }
  return [{ kind: 'changed', path, before, after }];
}

/** A change's values as the page prints them: compact JSON, or nothing for the side that lacks one. */
export function sides(change: FieldChange): { readonly before: string; readonly after: string } {
  const show = (value: unknown) => JSON.stringify(value) ?? String(value);
  switch (change.kind) {
    case 'added':
      return { before: '', after: show(change.after) };
    case 'removed':
      return { before: show(change.before), after: '' };
    case 'changed':
      return { before: show(change.before), after: show(change.after) };
    default: {
      const never: never = change;
      return never;
    }
  }
}
