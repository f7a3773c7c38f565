import { cloneJson, type JsonValue } from '@gatehouse/contracts';

/** What a redacted value reads as in the request a reviewer sees. */
export const REDACTED = '[REDACTED]';

/** Arguments with the listed values replaced, and the concrete JSON pointers that were. */
export interface RedactedArguments {
  readonly value: JsonValue;
  /** RFC 6901 pointers of every value replaced, sorted; never the values. */
  readonly paths: readonly string[];
}

type Container = JsonValue[] | { [key: string]: JsonValue };

const unescape = (token: string) => token.replace(/~1/g, '/').replace(/~0/g, '~');
const escape = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1');
const pointer = (segments: readonly string[]) => `/${segments.map(escape).join('/')}`;

/**
 * Parses a redaction path: an RFC 6901 JSON pointer (`/card/number`) naming at least one
 * segment, where a segment `*` matches every key or index at that level (`/items/*\/token`).
 */
export function parseRedactPath(path: string): readonly string[] | undefined {
  if (typeof path !== 'string' || !path.startsWith('/') || path.length > 512 || /~[^01]|~$/.test(path)) return undefined;
  return path.slice(1).split('/').map(unescape);
}

function isContainer(value: JsonValue | undefined): value is Container {
  return value !== null && typeof value === 'object';
}

function keysAt(node: Container, segment: string): string[] {
  if (Array.isArray(node)) {
    if (segment === '*') return node.map((_, i) => String(i));
    return /^(0|[1-9]\d*)$/.test(segment) && Number(segment) < node.length ? [segment] : [];
  }
  if (segment === '*') return Object.keys(node);
  return Object.prototype.hasOwnProperty.call(node, segment) ? [segment] : [];
}

function get(node: Container, key: string): JsonValue | undefined {
  return Array.isArray(node) ? node[Number(key)] : node[key];
}

function set(node: Container, key: string, value: JsonValue): void {
  if (Array.isArray(node)) node[Number(key)] = value;
  else node[key] = value;
}

/** Redacts on a copy: the input is never changed; paths that match nothing are skipped. */
export function redactArguments(value: JsonValue, paths: readonly string[]): RedactedArguments {
  const copy = cloneJson(value);
  const hits = new Set<string>();
  const walk = (node: JsonValue | undefined, segments: readonly string[], at: readonly string[]) => {
    if (!isContainer(node) || segments.length === 0) return;
    const [head, ...rest] = segments as [string, ...string[]];
    for (const key of keysAt(node, head)) {
      if (rest.length === 0) {
        set(node, key, REDACTED);
        hits.add(pointer([...at, key]));
      } else {
        walk(get(node, key), rest, [...at, key]);
      }
    }
  };
  for (const path of paths) {
    const segments = parseRedactPath(path);
    if (!segments) throw new TypeError('redaction paths must be JSON pointers');
    walk(copy, segments, []);
  }
  return Object.freeze({ value: copy, paths: Object.freeze([...hits].sort()) });
}

/**
 * A reviewer edits the redacted view: wherever an edit still holds the redaction marker at a
 * redacted path, the original value goes back in (on a copy). Anything the reviewer changed stays.
 */
export function restoreRedacted(edited: JsonValue, original: JsonValue, paths: readonly string[]): JsonValue {
  const copy = cloneJson(edited);
  for (const path of paths) {
    const segments = parseRedactPath(path);
    if (!segments || segments.length === 0) continue;
    let target: JsonValue | undefined = copy;
    let source: JsonValue | undefined = original;
    for (const segment of segments.slice(0, -1)) {
      target = isContainer(target) ? get(target, segment) : undefined;
      source = isContainer(source) ? get(source, segment) : undefined;
    }
    const last = segments[segments.length - 1] as string;
    if (!isContainer(target) || !isContainer(source)) continue;
    const value = get(source, last);
    if (get(target, last) === REDACTED && value !== undefined) set(target, last, value);
  }
  return copy;
}

/** Every scalar at or under `node`, as text. */
function scalars(node: JsonValue | undefined, out: string[]): void {
  if (node === undefined || node === null) return;
  if (isContainer(node)) {
    for (const child of Array.isArray(node) ? node : Object.values(node)) scalars(child, out);
    return;
  }
  out.push(String(node));
}

/**
 * Whether `other` (a dry-run preview, say) repeats any value that `paths` (the concrete pointers
 * `redactArguments` reported) redacted from `original`: a preview that echoes a redacted card
 * number must not reach the reviewer either. Values shorter than 4 characters are not matched.
 */
export function repeatsRedacted(other: JsonValue, original: JsonValue, paths: readonly string[]): boolean {
  if (paths.length === 0) return false;
  const secrets: string[] = [];
  for (const path of paths) {
    const segments = parseRedactPath(path) ?? [];
    let node: JsonValue | undefined = original;
    for (const segment of segments) node = isContainer(node) ? get(node, segment) : undefined;
    scalars(node, secrets);
  }
  const text: string[] = [];
  scalars(other, text);
  return secrets.filter((s) => s.length >= 4).some((secret) => text.some((t) => t.includes(secret)));
}
