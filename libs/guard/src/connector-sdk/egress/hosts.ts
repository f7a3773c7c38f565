import { isIP, isIPv4, isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';

// LDH labels plus `_`, which the WHATWG URL parser also lets through in hostnames.
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
// The URL parser reads a host whose last label is numeric as an IPv4 address (`127.1`,
// `0x7f.1`), so such a "hostname" would never match what a request actually carries.
const NUMERIC_LABEL = /^(?:0x[0-9a-f]*|[0-9]+)$/;
const MAX_HOSTNAME = 253;

/**
 * Validates and normalizes egress host patterns: exact hostnames, IP literals, or a leading
 * `*.` wildcard over at least two labels. Throws a TypeError naming `where` on the first bad entry.
 */
export function validateEgressPatterns(patterns: readonly string[], where: string): readonly string[] {
  if (!Array.isArray(patterns)) throw new TypeError(`${where} must be an array of host patterns`);
  const normalized: string[] = [];
  patterns.forEach((pattern: unknown, index) => {
    const result = normalizePattern(pattern);
    if (typeof result !== 'string') throw new TypeError(`${where}[${index}]${quote(pattern)} ${result.problem}`);
    if (!normalized.includes(result)) normalized.push(result);
  });
  return Object.freeze(normalized);
}

/** True when `host` falls under `pattern`; `*.example.com` covers subdomains at any depth but not `example.com`. */
export function hostMatches(pattern: string, host: string): boolean {
  const p = normalizeHost(pattern);
  const h = normalizeHost(host);
  if (p === '' || h === '') return false;
  if (p.startsWith('*.')) {
    if (isIP(h) !== 0) return false;
    const suffix = p.slice(1);
    return h.length > suffix.length && h.endsWith(suffix);
  }
  return p === h;
}

/** True when any pattern covers `host`. */
export function egressDomainAllowed(host: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => hostMatches(pattern, host));
}

/**
 * The declared patterns the organization allowlist does NOT cover (empty when all are within).
 * A wildcard is covered only by an equal or broader wildcard, never by an exact host.
 */
export function declaredEgressWithin(declared: readonly string[], allowlist: readonly string[]): string[] {
  return declared.filter((pattern) => !covered(pattern, allowlist));
}

/**
 * Canonical form used for comparison: lower-cased, without a trailing dot or IPv6 brackets,
 * IPv6 compressed the way the URL parser writes it.
 */
export function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (isIPv6(h)) return canonicalIPv6(h) ?? h;
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

function covered(pattern: string, allowlist: readonly string[]): boolean {
  const declared = normalizeHost(pattern);
  if (!declared.startsWith('*.')) return egressDomainAllowed(declared, allowlist);
  const suffix = declared.slice(2);
  return allowlist.some((entry) => {
    const allowed = normalizeHost(entry);
    if (!allowed.startsWith('*.')) return false;
    const allowedSuffix = allowed.slice(2);
    return suffix === allowedSuffix || suffix.endsWith(`.${allowedSuffix}`);
  });
}

function normalizePattern(raw: unknown): string | { problem: string } {
  if (typeof raw !== 'string') return { problem: 'must be a string' };
  if (raw.length === 0) return { problem: 'is empty' };
  if (/\s/.test(raw)) return { problem: 'must not contain whitespace' };
  let p = raw.toLowerCase();
  if (/[/?#@\\]/.test(p)) return { problem: 'must be a bare hostname, not a URL or a path' };
  if (p === '*' || p === '*.') return { problem: 'is a bare "*", which would allow every host' };

  if (p.startsWith('[')) {
    const inner = p.endsWith(']') ? p.slice(1, -1) : '';
    const canonical = isIPv6(inner) ? canonicalIPv6(inner) : undefined;
    return canonical ?? { problem: 'must be an IPv6 address inside the brackets, without a port or zone' };
  }
  if (isIPv6(p)) return canonicalIPv6(p) ?? { problem: 'must be an IPv6 address without a zone' };
  if (p.includes(':')) return { problem: 'must not carry a port' };

  if (p.endsWith('.')) p = p.slice(0, -1);
  const wildcard = p.startsWith('*.');
  let rest = wildcard ? p.slice(2) : p;
  if (rest.includes('*')) return { problem: 'may use a wildcard only as a leading "*."' };
  if (isIPv4(rest)) return wildcard ? { problem: 'cannot put a wildcard in front of an IP address' } : rest;
  if (/[^\x20-\x7e]/.test(rest)) {
    // IDN: requests carry the punycode form, so that is what must be compared.
    rest = domainToASCII(rest);
    if (rest === '') return { problem: 'is not a valid internationalized hostname' };
  }
  if (rest.length === 0 || rest.length > MAX_HOSTNAME) return { problem: 'is not a valid hostname' };
  const labels = rest.split('.');
  if (!labels.every((label) => LABEL.test(label))) return { problem: 'is not a valid hostname' };
  if (NUMERIC_LABEL.test(labels[labels.length - 1] ?? '')) return { problem: 'looks like an IP address; give a dotted-quad IPv4 or an IPv6 literal' };
  if (wildcard && labels.length < 2) return { problem: 'needs at least two labels after "*." (for example *.example.com)' };
  return wildcard ? `*.${rest}` : rest;
}

function canonicalIPv6(address: string): string | undefined {
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    // Zone ids (`fe80::1%eth0`) pass isIPv6 but have no place in a URL.
    return undefined;
  }
}

// Configuration is not secret, but a URL pasted by mistake may carry credentials.
function quote(value: unknown): string {
  if (typeof value !== 'string' || value.includes('@') || value.length > 120) return '';
  return ` (${JSON.stringify(value)})`;
}
