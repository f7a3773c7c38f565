// The `format` values the validator asserts, each checked against the grammar its RFC gives.
// A format not listed here passes (the specification's rule for unknown formats). Checks are
// plain functions and regular expressions: nothing here builds code from the value.

type FormatCheck = (value: string) => boolean;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/u;
const TIME = /^(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/u;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

// RFC 3339 full-date.
function isDate(value: string): boolean {
  const match = DATE.exec(value);
  if (match === null) return false;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (month < 1 || month > 12 || day < 1) return false;
  const days = month === 2 && isLeapYear(year) ? 29 : (DAYS_IN_MONTH[month - 1] as number);
  return day <= days;
}

// RFC 3339 full-time (an offset is required). A leap second (`:60`) is only valid at 23:59 UTC.
function isTime(value: string): boolean {
  const match = TIME.exec(value);
  if (match === null) return false;
  const hour = Number(match[1]);
  const minute = Number(match[2]);
  const second = Number(match[3]);
  const sign = match[4] === '-' ? -1 : 1;
  const offsetHour = match[5] === undefined ? 0 : Number(match[5]);
  const offsetMinute = match[6] === undefined ? 0 : Number(match[6]);
  if (hour > 23 || minute > 59 || second > 60 || offsetHour > 23 || offsetMinute > 59) return false;
  if (second < 60) return true;
  const utcMinutes = (((hour * 60 + minute - sign * (offsetHour * 60 + offsetMinute)) % 1440) + 1440) % 1440;
  return utcMinutes === 23 * 60 + 59;
}

function isDateTime(value: string): boolean {
  const separator = value.search(/[Tt]/u);
  return separator === 10 && isDate(value.slice(0, 10)) && isTime(value.slice(11));
}

// RFC 3339 Appendix A (ISO 8601 durations): units in order, each at most once, weeks alone.
const DURATION = /^P(?:(?:\d+Y(?:\d+M(?:\d+D)?)?|\d+M(?:\d+D)?|\d+D)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)$/u;

const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/u;
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/u;

function isIpv4(value: string): boolean {
  return IPV4.test(value);
}

// RFC 4291 §2.2: eight groups, one `::` for a run of zero groups, an IPv4 tail for the last two.
function isIpv6(value: string): boolean {
  if (value.length > 45) return false;
  let text = value;
  if (text.includes('.')) {
    const lastColon = text.lastIndexOf(':');
    if (lastColon === -1 || !isIpv4(text.slice(lastColon + 1))) return false;
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return false;
  if (halves.length === 1) {
    const groups = text.split(':');
    return groups.length === 8 && groups.every((group) => HEX_GROUP.test(group));
  }
  const head = halves[0] === '' ? [] : (halves[0] as string).split(':');
  const tail = halves[1] === '' ? [] : (halves[1] as string).split(':');
  return head.length + tail.length <= 7 && [...head, ...tail].every((group) => HEX_GROUP.test(group));
}

// RFC 1123 host names: labels of letters, digits and inner hyphens, 1–63 characters each.
const HOSTNAME_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/u;

function isHostname(value: string): boolean {
  const name = value.endsWith('.') ? value.slice(0, -1) : value;
  if (name.length === 0 || name.length > 253) return false;
  return name.split('.').every((label) => HOSTNAME_LABEL.test(label));
}

// RFC 5321 §4.1.2 mailbox: a dot-atom or quoted local part, then a host name or address literal.
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/u;
const QUOTED_LOCAL = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/u;

function isEmail(value: string): boolean {
  const at = value.lastIndexOf('@');
  if (at <= 0) return false;
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (local.length > 64 || !(DOT_ATOM.test(local) || QUOTED_LOCAL.test(local))) return false;
  if (domain.startsWith('[') && domain.endsWith(']')) {
    const literal = domain.slice(1, -1);
    return literal.startsWith('IPv6:') ? isIpv6(literal.slice(5)) : isIpv4(literal);
  }
  return isHostname(domain);
}

// RFC 3986 §3 component grammars (ASCII only: an IRI is not a URI).
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/u;
const USERINFO = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2})*$/u;
const REG_NAME = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/u;
const PORT = /^\d*$/u;
const IP_FUTURE = /^v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+$/u;
const PATH = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/u;
const QUERY_OR_FRAGMENT = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*$/u;
const URI_COMPONENTS = /^(?:([^:/?#]+):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/su;

function isAuthority(authority: string): boolean {
  const at = authority.lastIndexOf('@');
  if (at !== -1 && !USERINFO.test(authority.slice(0, at))) return false;
  let hostPort = authority.slice(at + 1);
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close === -1) return false;
    const literal = hostPort.slice(1, close);
    if (!(isIpv6(literal) || IP_FUTURE.test(literal))) return false;
    hostPort = hostPort.slice(close + 1);
    return hostPort === '' || (hostPort.startsWith(':') && PORT.test(hostPort.slice(1)));
  }
  const colon = hostPort.indexOf(':');
  const host = colon === -1 ? hostPort : hostPort.slice(0, colon);
  return REG_NAME.test(host) && (colon === -1 || PORT.test(hostPort.slice(colon + 1)));
}

function isUriReferenceOf(value: string, requireScheme: boolean): boolean {
  const match = URI_COMPONENTS.exec(value);
  if (match === null) return false;
  const [, scheme, authority, path = '', query, fragment] = match;
  if (scheme === undefined ? requireScheme : !SCHEME.test(scheme)) return false;
  if (authority !== undefined && !isAuthority(authority)) return false;
  if (!PATH.test(path)) return false;
  // Without a scheme or authority, a colon in the first segment would read as a scheme.
  if (scheme === undefined && authority === undefined && (path.split('/')[0] ?? '').includes(':')) return false;
  return (query === undefined || QUERY_OR_FRAGMENT.test(query)) && (fragment === undefined || QUERY_OR_FRAGMENT.test(fragment));
}

// RFC 3987: an IRI is a URI that may also hold non-ASCII characters where a URI holds
// unreserved ones. Checked as the URI it maps to, each such character standing in for one.
const NON_ASCII = /[\u0080-\u{10ffff}]/gu;

function isIriReferenceOf(value: string, requireScheme: boolean): boolean {
  return isUriReferenceOf(value.replace(NON_ASCII, 'a'), requireScheme);
}

// RFC 6570 §2: literals, and expressions of an optional operator and comma-separated variables
// (with an optional prefix length or explode modifier).
const URI_TEMPLATE =
  /^(?:[!#$&(-;=?-[\]_a-z~\u00a0-\u{10ffff}]|%[0-9A-Fa-f]{2}|\{[+#./;?&=,!@|]?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(?::[1-9]\d{0,3}|\*)?(?:,(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(?::[1-9]\d{0,3}|\*)?)*\})*$/u;

const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/u;
const JSON_POINTER = /^(?:\/(?:[^~/]|~[01])*)*$/u;
const RELATIVE_JSON_POINTER = /^(?:0|[1-9]\d*)(?:#|(?:\/(?:[^~/]|~[01])*)*)$/u;

// ECMA-262 regular expressions, as `pattern` reads them (with the `u` flag).
function isRegex(value: string): boolean {
  try {
    new RegExp(value, 'u');
    return true;
  } catch {
    return false;
  }
}

const FORMATS: ReadonlyMap<string, FormatCheck> = new Map<string, FormatCheck>([
  ['date-time', isDateTime],
  ['date', isDate],
  ['time', isTime],
  ['duration', (value) => DURATION.test(value)],
  ['email', isEmail],
  ['hostname', isHostname],
  ['ipv4', isIpv4],
  ['ipv6', isIpv6],
  ['uri', (value) => isUriReferenceOf(value, true)],
  ['uri-reference', (value) => isUriReferenceOf(value, false)],
  ['iri', (value) => isIriReferenceOf(value, true)],
  ['iri-reference', (value) => isIriReferenceOf(value, false)],
  ['uri-template', (value) => URI_TEMPLATE.test(value)],
  ['uuid', (value) => UUID.test(value)],
  ['regex', isRegex],
  ['json-pointer', (value) => JSON_POINTER.test(value)],
  ['relative-json-pointer', (value) => RELATIVE_JSON_POINTER.test(value)],
]);

/** The check for a format name, or undefined for a format this validator does not assert. */
export function formatCheck(name: string): FormatCheck | undefined {
  return FORMATS.get(name);
}
