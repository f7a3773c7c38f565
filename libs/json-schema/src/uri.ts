// URI references as RFC 3986 defines them, for `$id`, `$ref` and `$schema`. Written against the
// RFC rather than with WHATWG `URL`: `URL` cannot resolve against non-hierarchical bases such as
// `urn:uuid:…` or `tag:…`, which schema identifiers use, and it rewrites what it parses.

/** The five components of a URI reference (RFC 3986 §3); an absent component is `undefined`. */
interface UriParts {
  readonly scheme: string | undefined;
  readonly authority: string | undefined;
  readonly path: string;
  readonly query: string | undefined;
  readonly fragment: string | undefined;
}

// RFC 3986 Appendix B: splits any string into the five components (it never fails).
const URI_COMPONENTS = /^(?:([^:/?#]+):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/su;

function parse(reference: string): UriParts {
  const match = URI_COMPONENTS.exec(reference);
  // The pattern matches every string; the fallback only satisfies the type checker.
  if (match === null) return { scheme: undefined, authority: undefined, path: reference, query: undefined, fragment: undefined };
  return { scheme: match[1], authority: match[2], path: match[3] ?? '', query: match[4], fragment: match[5] };
}

function recompose(parts: UriParts): string {
  let result = '';
  if (parts.scheme !== undefined) result += `${parts.scheme}:`;
  if (parts.authority !== undefined) result += `//${parts.authority}`;
  result += parts.path;
  if (parts.query !== undefined) result += `?${parts.query}`;
  if (parts.fragment !== undefined) result += `#${parts.fragment}`;
  return result;
}

// RFC 3986 §5.2.4.
function removeDotSegments(path: string): string {
  let input = path;
  const output: string[] = [];
  while (input.length > 0) {
    if (input.startsWith('../')) input = input.slice(3);
    else if (input.startsWith('./')) input = input.slice(2);
    else if (input.startsWith('/./')) input = input.slice(2);
    else if (input === '/.') input = '/';
    else if (input.startsWith('/../')) {
      input = input.slice(3);
      output.pop();
    } else if (input === '/..') {
      input = '/';
      output.pop();
    } else if (input === '.' || input === '..') input = '';
    else {
      const next = input.indexOf('/', input.startsWith('/') ? 1 : 0);
      const segment = next === -1 ? input : input.slice(0, next);
      output.push(segment);
      input = input.slice(segment.length);
    }
  }
  return output.join('');
}

// RFC 3986 §5.2.3.
function mergePaths(base: UriParts, referencePath: string): string {
  if (base.authority !== undefined && base.path === '') return `/${referencePath}`;
  const lastSlash = base.path.lastIndexOf('/');
  return lastSlash === -1 ? referencePath : base.path.slice(0, lastSlash + 1) + referencePath;
}

/** Resolves `reference` against the absolute URI `base` (RFC 3986 §5.2.2, strict). */
export function resolveUri(reference: string, base: string): string {
  const r = parse(reference);
  const b = parse(base);
  let target: UriParts;
  if (r.scheme !== undefined) {
    target = { ...r, path: removeDotSegments(r.path) };
  } else if (r.authority !== undefined) {
    target = { ...r, scheme: b.scheme, path: removeDotSegments(r.path) };
  } else if (r.path === '') {
    target = { scheme: b.scheme, authority: b.authority, path: b.path, query: r.query ?? b.query, fragment: r.fragment };
  } else {
    const path = r.path.startsWith('/') ? removeDotSegments(r.path) : removeDotSegments(mergePaths(b, r.path));
    target = { scheme: b.scheme, authority: b.authority, path, query: r.query, fragment: r.fragment };
  }
  return normalizeUri(recompose(target));
}

/**
 * The syntax-based normalisation both sides of a lookup get (RFC 3986 §6.2.2 and §6.2.3, in
 * part): scheme and host in lower case, an empty path after an authority as `/`.
 */
export function normalizeUri(uri: string): string {
  const parts = parse(uri);
  if (parts.scheme === undefined) return uri;
  const authority = parts.authority === undefined ? undefined : lowerCaseHost(parts.authority);
  const path = authority !== undefined && parts.path === '' ? '/' : parts.path;
  return recompose({ ...parts, scheme: parts.scheme.toLowerCase(), authority, path });
}

function lowerCaseHost(authority: string): string {
  const at = authority.lastIndexOf('@');
  return at === -1 ? authority.toLowerCase() : authority.slice(0, at + 1) + authority.slice(at + 1).toLowerCase();
}

/** Splits a URI into the part before `#` and the fragment (`''` when there is none or it is empty). */
export function splitFragment(uri: string): { readonly uri: string; readonly fragment: string } {
  const hash = uri.indexOf('#');
  return hash === -1 ? { uri, fragment: '' } : { uri: uri.slice(0, hash), fragment: uri.slice(hash + 1) };
}
