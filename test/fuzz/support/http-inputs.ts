import { createHmac } from 'node:crypto';
import fc from 'fast-check';

// Building blocks of malformed HTTP requests. Every generator of a *body* or *query* takes a
// description of the endpoint's fields and yields only inputs that are certainly invalid (a
// required field missing or of a wrong type, a value outside its enum or pattern, an unknown key
// where the schema is strict): the fuzz asserts that nothing changes state, so an input the
// service could accept would make a flaky test, not a finding.

/** Marks every junk string value: an error body containing it has echoed a request value. */
export const CANARY = 'fz-canary-7c1e';

/** A JSON-encodable value, possibly holding `RawJson` parts. */
export type Junk = unknown;

/**
 * JSON text spliced in verbatim by `jsonText`: nesting deep enough to overflow a recursive
 * validator also overflows JSON.stringify, so it is written as text.
 */
export class RawJson {
  constructor(readonly text: string) {}
}

let rawNonce = 0;

/** JSON text of `value` (a string is taken as text already), with `RawJson` parts spliced in. */
export function jsonText(value: Junk): string {
  if (typeof value === 'string') return value;
  if (value instanceof RawJson) return value.text;
  const raws: string[] = [];
  const token = `__raw_${(rawNonce += 1)}_`;
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (!(v instanceof RawJson)) return v;
    raws.push(v.text);
    return `${token}${raws.length - 1}`;
  });
  return raws.length === 0 ? text : text.replace(new RegExp(`"${token}(\\d+)"`, 'g'), (_m, i: string) => raws[Number(i)] ?? 'null');
}

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

/** Strings meant to break parsers, SQL, templates, paths and terminals; each carries the canary. */
const NASTY = [
  "'; DROP TABLE approvals; --",
  '${process.exit(1)}',
  '{{7*7}}',
  '../../../../etc/passwd',
  '<script>alert(1)</script>',
  '\u0000nul',
  '\u202eevil',
  '\ud83d\ude00 emoji',
  'line\r\nbreak',
  '%00%2e%2e',
  'NaN',
  'Infinity',
  '-0',
  'null',
  'true',
  '[object Object]',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
] as const;

/** A junk string value (always with the canary, so echoes are detectable). */
export function junkString(options: { maxLength?: number } = {}): fc.Arbitrary<string> {
  const maxLength = options.maxLength ?? 300;
  return fc
    .oneof(
      { weight: 4, arbitrary: fc.string({ maxLength: Math.min(maxLength, 60) }) },
      { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: Math.min(maxLength, 60) }) },
      { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: Math.min(maxLength, 30) }) },
      { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
      { weight: 1, arbitrary: fc.integer({ min: 257, max: Math.max(257, maxLength) }).map((n) => 'x'.repeat(n)) },
    )
    .map((s) => `${s}${CANARY}`);
}

/** A deeply nested array or object (the depth where recursive validators overflow the stack is a few thousand). */
export function deepNesting(minDepth = 100): fc.Arbitrary<Junk> {
  return fc
    // At most 15,000 levels: 75 kB as objects, under the services' 100 kB body limit, so it reaches the validators.
    .record({ depth: fc.integer({ min: minDepth, max: Math.max(minDepth, 15_000) }), kind: fc.constantFrom('array', 'object') })
    .map(({ depth, kind }) => new RawJson(kind === 'array' ? `${'['.repeat(depth)}"${CANARY}"${']'.repeat(depth)}` : `${'{"d":'.repeat(depth)}"${CANARY}"${'}'.repeat(depth)}`));
}

/** An object carrying prototype keys as own properties (JSON.parse makes them own; so does this). */
export function prototypeKeys(): fc.Arbitrary<Record<string, Junk>> {
  return fc
    .array(fc.record({ key: fc.constantFrom(...PROTO_KEYS), value: fc.oneof(fc.constant({ polluted: CANARY }), fc.constant({ prototype: { polluted: CANARY } }), junkString()) }), {
      minLength: 1,
      maxLength: 3,
    })
    .map((entries) => {
      const out: Record<string, Junk> = {};
      for (const { key, value } of entries) Object.defineProperty(out, key, { value, enumerable: true, configurable: true, writable: true });
      return out;
    });
}

/** Any JSON value, including the awkward ones. */
export function junkJson(): fc.Arbitrary<Junk> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 2, arbitrary: junkString() },
    { weight: 1, arbitrary: fc.constantFrom<Junk>(null, true, false, 0, -1, 1.5, -0, 2 ** 53 + 1, 1e308, [], {}) },
    { weight: 1, arbitrary: prototypeKeys() },
    { weight: 1, arbitrary: deepNesting() },
  );
}

/** Text that is not JSON: truncated, commented, single-quoted, NaN, trailing commas, control characters, bytes. */
export function malformedJsonText(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.json({ maxDepth: 2 }).filter((t) => t.length > 1).map((t) => t.slice(0, -1)),
    fc.constantFrom(
      '{',
      '{"a":',
      '{"a":1,}',
      "{'a':1}",
      '{"a":NaN}',
      '{"a":Infinity}',
      '{"a":01}',
      '{"a":1}{"b":2}',
      '{"a":1} trailing',
      '/* comment */ {}',
      '\ufeff{"a":1',
      '{"a":"\u0001"}',
      '{"a":"\\ud800"',
      '{"a":"\\x41"}',
      '[1,,2]',
      'undefined',
      '{"__proto__":',
      '1e99999x',
    ),
    fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 200 }).filter((t) => !isJson(t)),
  );
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** One field of a request object: a value that is valid for it, junk that is certainly not, and whether it may be left out. */
export interface FieldSpec {
  readonly valid: Junk;
  readonly invalid: fc.Arbitrary<Junk>;
  readonly required: boolean;
  /**
   * Broken in about one input in ten rather than one in two: for fields whose only invalid values
   * are expensive to refuse (nesting deep enough to overflow a validator's stack), so they do not
   * take the whole time budget.
   */
  readonly rare?: boolean;
}

/** A request object's fields; `strict` when the schema refuses unknown keys. */
export interface ObjectSpec {
  readonly fields: Readonly<Record<string, FieldSpec>>;
  readonly strict: boolean;
}

/** Junk of every JSON type but `keep` (for "a value of the wrong type"). */
export function wrongType(keep: 'string' | 'number' | 'boolean' | 'object' | 'array' | 'none'): fc.Arbitrary<Junk> {
  const all: Record<string, fc.Arbitrary<Junk>> = {
    string: junkString(),
    number: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
    boolean: fc.boolean(),
    null: fc.constant(null),
    object: fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), junkJson(), { maxKeys: 3 }), prototypeKeys()),
    array: fc.array(junkJson(), { maxLength: 4 }),
  };
  return fc.oneof(...Object.entries(all).filter(([type]) => type !== keep).map(([, arbitrary]) => arbitrary));
}

/** Strings for a field that must be one of `allowed`: anything else (wrong case, padding, junk). */
export function notOneOf(allowed: readonly string[]): fc.Arbitrary<Junk> {
  const set = new Set(allowed);
  return fc.oneof(
    fc.oneof(...allowed.map((a) => fc.constantFrom(a.toUpperCase(), ` ${a}`, `${a} `, `${a}${CANARY}`, `${a}\u0000`))).filter((s) => !set.has(s)),
    junkString().filter((s) => !set.has(s)),
    wrongType('none'),
  );
}

/** Strings that fail `pattern` (and values that are not strings). */
export function notMatching(pattern: RegExp, maxLength = 300): fc.Arbitrary<Junk> {
  return fc.oneof(junkString({ maxLength }).filter((s) => !pattern.test(s)), fc.constant(''), wrongType('string'));
}

/** Numbers a field bounded to integers in [min, max] refuses, and non-numbers. */
export function notIntegerIn(min: number, max: number): fc.Arbitrary<Junk> {
  return fc.oneof(
    fc.constantFrom(min - 1, max + 1, min + 0.5, -1e21, 1e21, -0.000001).filter((n) => !(Number.isInteger(n) && n >= min && n <= max)),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !(Number.isInteger(n) && n >= min && n <= max)),
    wrongType('number'),
  );
}

/**
 * Objects that are certainly invalid for `spec`: at least one field is broken (left out when
 * required, or given junk), the others valid or broken too; with unknown keys where the schema
 * is strict, and sometimes prototype keys or deep nesting riding along.
 */
export function invalidObject(spec: ObjectSpec): fc.Arbitrary<Record<string, Junk>> {
  const names = Object.keys(spec.fields);
  const common = names.filter((n) => !(spec.fields[n] as FieldSpec).rare);
  const rare = names.filter((n) => (spec.fields[n] as FieldSpec).rare);
  const broken = fc
    .tuple(fc.subarray(common), rare.length > 0 ? fc.oneof({ weight: 9, arbitrary: fc.constant<string[]>([]) }, { weight: 1, arbitrary: fc.subarray(rare, { minLength: 1 }) }) : fc.constant<string[]>([]))
    .map(([a, b]) => [...a, ...b])
    .filter((picked) => picked.length > 0);
  const extraKey = fc.oneof(junkString({ maxLength: 40 }), fc.constantFrom('x', 'extra', 'id', 'admin', 'role')).filter((k) => !(k in spec.fields));
  return fc
    .record({
      broken,
      // For each broken field: drop it (only if required) or give it junk.
      drop: fc.array(fc.boolean(), { minLength: names.length, maxLength: names.length }),
      junk: fc.tuple(...names.map((n) => (spec.fields[n] as FieldSpec).invalid)),
      optionalKept: fc.array(fc.boolean(), { minLength: names.length, maxLength: names.length }),
      extras: spec.strict ? fc.array(fc.tuple(extraKey, junkJson()), { maxLength: 3 }) : fc.array(fc.tuple(extraKey, junkJson()), { maxLength: 2 }),
      proto: fc.option(prototypeKeys(), { freq: 4 }),
    })
    .map(({ broken, drop, junk, optionalKept, extras, proto }) => {
      const out: Record<string, Junk> = {};
      names.forEach((name, i) => {
        const field = spec.fields[name] as FieldSpec;
        if (broken.includes(name)) {
          // Leaving out an optional field is valid: only a required one may be dropped.
          if (field.required && drop[i]) return;
          out[name] = junk[i];
          return;
        }
        if (field.required || optionalKept[i]) out[name] = field.valid;
      });
      for (const [key, value] of extras) out[key] = value;
      if (proto) for (const key of Object.keys(proto)) Object.defineProperty(out, key, { value: proto[key], enumerable: true, configurable: true, writable: true });
      return out;
    });
}

/** A whole body that is not even an object: arrays, scalars, null. */
export function nonObjectJson(): fc.Arbitrary<Junk> {
  return fc.oneof(fc.array(junkJson(), { maxLength: 4 }), junkString(), fc.integer(), fc.boolean(), fc.constant(null), deepNesting().map((d) => [d]));
}

/** A request body as sent: its text, content type and the kind of malformation (for reports). */
export interface BodyInput {
  readonly text: string;
  readonly contentType: string | undefined;
  readonly kind: string;
}

/**
 * Bodies certainly invalid for `spec`, in every shape: invalid objects as JSON, non-objects,
 * malformed JSON, oversized bodies (past the 100 kB limit), the body under content types the
 * services do not parse as JSON, and as a form whose required fields are missing.
 */
export function invalidBody(spec: ObjectSpec): fc.Arbitrary<BodyInput> {
  const json = (kind: string) => (value: Junk): BodyInput => ({ text: jsonText(value), contentType: 'application/json', kind });
  const required = Object.keys(spec.fields).filter((n) => (spec.fields[n] as FieldSpec).required);
  return fc.oneof(
    { weight: 14, arbitrary: invalidObject(spec).map(json('invalid-object')) },
    { weight: 2, arbitrary: nonObjectJson().map((v) => ({ text: typeof v === 'string' ? JSON.stringify(v) : jsonText(v), contentType: 'application/json', kind: 'not-an-object' })) },
    { weight: 3, arbitrary: malformedJsonText().map((text) => ({ text, contentType: 'application/json', kind: 'malformed-json' })) },
    { weight: 1, arbitrary: fc.integer({ min: 102_500, max: 160_000 }).map((n) => ({ text: `{"pad":"${'p'.repeat(n)}"}`, contentType: 'application/json', kind: 'too-large' })) },
    {
      weight: 2,
      arbitrary: fc
        .record({ body: invalidObject(spec), type: fc.constantFrom('text/plain', 'application/xml', 'application/octet-stream', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'multipart/form-data; boundary=x', 'application/vnd.api+json') })
        .map(({ body, type }) => ({ text: jsonText(body), contentType: type, kind: `content-type ${type.split(';')[0]}` })),
    },
    { weight: 1, arbitrary: junkString().map((text) => ({ text, contentType: undefined, kind: 'no-content-type' })) },
    ...(required.length > 0 ? [{ weight: 2, arbitrary: formWithout(spec, required) }] : []),
  );
}

/** An urlencoded form with every field as text but at least one required field missing, plus junk pairs (some qs-style nested). */
function formWithout(spec: ObjectSpec, required: readonly string[]): fc.Arbitrary<BodyInput> {
  return fc
    .record({
      missing: fc.subarray([...required], { minLength: 1 }),
      junk: fc.array(fc.tuple(fc.constantFrom('a[b][c]', '__proto__[polluted]', 'constructor[prototype][x]', 'x', 'x[]', ''), junkString({ maxLength: 40 })), { maxLength: 4 }),
    })
    .map(({ missing, junk }) => {
      const form = new URLSearchParams();
      for (const [name, field] of Object.entries(spec.fields)) {
        if (!missing.includes(name)) form.append(name, typeof field.valid === 'string' ? field.valid : JSON.stringify(field.valid));
      }
      for (const [key, value] of junk) form.append(key, value);
      return { text: form.toString(), contentType: 'application/x-www-form-urlencoded', kind: 'form-missing-required' };
    });
}

/** A query string (without `?`) that is certainly invalid for `spec` (whose values are strings on the wire). */
export function invalidQuery(spec: ObjectSpec): fc.Arbitrary<{ query: string; kind: string }> {
  return invalidObject(spec).map((object) => {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(object)) {
      if (value === undefined) continue;
      // A broken field may be junk of any type; on the wire it becomes text, repeated for arrays.
      if (Array.isArray(value) && value.length > 0) for (const item of value) params.append(key, queryText(item));
      else params.append(key, queryText(value));
    }
    return { query: params.toString(), kind: 'invalid-query' };
  });
}

function queryText(value: Junk): string {
  if (typeof value === 'string') return value;
  const text = jsonText(value);
  return text.length > 2_000 ? text.slice(0, 2_000) : text;
}

/** A path segment as sent: percent-encoded junk, or malformed percent-encoding. */
export function pathSegment(valid: (s: string) => boolean): fc.Arbitrary<{ segment: string; kind: string }> {
  return fc.oneof(
    { weight: 6, arbitrary: junkString({ maxLength: 1_500 }).filter((s) => !valid(s)).map((s) => ({ segment: encodeURIComponent(s), kind: 'junk-path' })) },
    { weight: 1, arbitrary: fc.constantFrom('%zz', '%E0%A4%A', '%', '%00', '%C0%AE%C0%AE', '%ff%fe').map((segment) => ({ segment, kind: 'odd-percent-encoding' })) },
    // Encoded slashes stay inside one segment ('.' and '%2e' segments are resolved by the client's URL parser, so they never arrive).
    { weight: 1, arbitrary: fc.constantFrom('%2F', 'a%2Fb', '%2F..%2F', '%5C', '%2e%2e%2F').filter((s) => !valid(decodeURIComponentSafe(s))).map((segment) => ({ segment, kind: 'encoded-slash' })) },
  );
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** An HS256 JWT over `claims` with `secret` (and optionally a forged header). */
export function signJwt(claims: Record<string, unknown>, secret: string, header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' }): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const head = `${part(header)}.${part(claims)}`;
  return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`;
}

/** What a bad Authorization header may be built from: the valid credential (to garble), and a JWT secret when JWTs are accepted. */
export interface AuthMaterial {
  readonly validKey: string;
  readonly jwt?: { readonly secret: string; readonly claims: Record<string, unknown> };
}

/** Authorization headers that must be refused (undefined: no header at all). */
export function badAuthorization(material: AuthMaterial): fc.Arbitrary<{ header: string | undefined; kind: string }> {
  const { validKey } = material;
  const variants: fc.Arbitrary<{ header: string | undefined; kind: string }>[] = [
    fc.constant({ header: undefined, kind: 'auth-missing' }),
    fc.constantFrom('', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'bearer', 'Token abc', `Bearer  ${validKey}`, `Bearer ${validKey} extra`, `Basic ${validKey}`, `${validKey}`).map((header) => ({ header, kind: 'auth-malformed' })),
    // The right length and alphabet, one character off: constant-time comparison must still refuse it.
    fc.nat({ max: validKey.length - 1 }).map((i) => ({ header: `Bearer ${validKey.slice(0, i)}${validKey[i] === 'a' ? 'b' : 'a'}${validKey.slice(i + 1)}`, kind: 'auth-one-char-off' })),
    fc.constantFrom(validKey.toUpperCase(), `${validKey}x`, validKey.slice(0, -1), validKey.slice(0, 15)).filter((k) => k !== validKey).map((k) => ({ header: `Bearer ${k}`, kind: 'auth-near-miss' })),
    fc.string({ unit: fc.constantFrom(...'!#$%&*+-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ^_abcdefghijklmnopqrstuvwxyz|~'), minLength: 16, maxLength: 120 }).map((k) => ({ header: `Bearer ${k}`, kind: 'auth-unknown-key' })),
    fc.integer({ min: 4_097, max: 7_000 }).map((n) => ({ header: `Bearer ${'k'.repeat(n)}`, kind: 'auth-oversized' })),
    fc.string({ unit: fc.constantFrom(...'\u00a0\u00e9\u00ff\u0080\t'), minLength: 1, maxLength: 40 }).map((k) => ({ header: `Bearer ${validKey.slice(0, 8)}${k}x`, kind: 'auth-non-ascii' })),
  ];
  if (material.jwt) variants.push(badJwt(material.jwt.secret, material.jwt.claims));
  return fc.oneof(...variants);
}

/** JWTs that must be refused: alg none, wrong secret, expired, not yet valid, claims of the wrong shape, extra parts, garbage. */
function badJwt(secret: string, claims: Record<string, unknown>): fc.Arbitrary<{ header: string; kind: string }> {
  const now = () => Math.floor(Date.now() / 1000);
  return fc
    .oneof(
      fc.constant(() => signJwt(claims, secret, { alg: 'none', typ: 'JWT' }).split('.').slice(0, 2).join('.') + '.'),
      fc.constant(() => signJwt(claims, secret, { alg: 'none' })),
      fc.constant(() => signJwt(claims, secret, { alg: 'HS512' })),
      fc.constant(() => signJwt(claims, secret, { alg: 'RS256' })),
      fc.constant(() => signJwt(claims, `${secret}-wrong`)),
      fc.constant(() => signJwt({ ...claims, exp: now() - 10 }, secret)),
      fc.constant(() => signJwt({ ...claims, nbf: now() + 3_600 }, secret)),
      fc.constant(() => signJwt({ ...claims, exp: String(now() + 600) }, secret)),
      fc.constant(() => signJwt({ ...claims, tenants: [] }, secret)),
      fc.constant(() => signJwt({ ...claims, sub: '' }, secret)),
      fc.constant(() => `${signJwt(claims, secret)}.extra`),
      fc.constant(() => signJwt(claims, secret).replace(/\.[^.]*$/, '.')),
      fc.jsonValue({ maxDepth: 2 }).map((payload) => () => signJwt(payload as Record<string, unknown>, secret)),
      fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789-_'), minLength: 5, maxLength: 40 }).map((s) => () => `${s}.${s}.${s}`),
    )
    .map((make) => ({ header: `Bearer ${make()}`, kind: 'auth-bad-jwt' }));
}
