// RFC 6901 JSON Pointers: the instance locations failures name, and `$ref` fragments.

/** One step of an instance location: a property name or an array index. */
export type PathSegment = string | number;

/** One segment of a pointer, with its `/`. */
export function pointerStep(segment: PathSegment): string {
  return typeof segment === 'number' ? `/${segment}` : `/${escapeToken(segment)}`;
}

function escapeToken(token: string): string {
  return token.includes('~') || token.includes('/') ? token.replace(/~/g, '~0').replace(/\//g, '~1') : token;
}

/** The reference tokens of a pointer, or undefined when it is not a valid RFC 6901 pointer. */
export function parsePointer(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return undefined;
  const tokens: string[] = [];
  for (const raw of pointer.slice(1).split('/')) {
    // `~` must be followed by `0` or `1`.
    if (/~(?![01])/u.test(raw)) return undefined;
    tokens.push(raw.replace(/~1/g, '/').replace(/~0/g, '~'));
  }
  return tokens;
}
