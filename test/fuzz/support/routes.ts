import fc from 'fast-check';
import { type FuzzAnswer, type FuzzRequest, notTypedClientError, type RouteFuzz } from './http-fuzz.js';
import { FUZZ_RUNS } from './fuzz-run.js';
import { type AuthMaterial, badAuthorization, invalidBody, invalidQuery, junkString, type ObjectSpec, pathSegment } from './http-inputs.js';

// Route fuzzers of the four shapes the services' endpoints come in: a JSON body, a query string,
// a path parameter, and nothing but a credential. Each request also carries, now and then, junk
// headers of its own, and (where the route authenticates) mostly a valid credential, so the
// validators behind the authentication run, with a share of refused ones.

/** How a route authenticates: the Authorization values that pass, and what bad ones are made from. */
export interface Credentials {
  readonly valid: readonly string[];
  readonly material: AuthMaterial;
}

type Auth = { readonly header: string | undefined; readonly kind: string };

/** Mostly a valid credential (weight 5), sometimes a refused one (weight 1); none for unauthenticated routes. */
function authorization(credentials: Credentials | undefined): fc.Arbitrary<Auth> {
  if (!credentials) return fc.constant({ header: undefined, kind: '' });
  return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...credentials.valid).map((header) => ({ header, kind: '' })) }, { weight: 1, arbitrary: badAuthorization(credentials.material) });
}

/** Headers no route reads, with values a proxy might pass along. */
function junkHeaders(): fc.Arbitrary<Record<string, string>> {
  const value = fc.string({ unit: fc.constantFrom(...'abcXYZ019 -_=;,:/*%\u00e9\u00ff'), maxLength: 200 }).map((v) => v.trim());
  return fc.option(
    // Not conditional or range headers: a 304 or 206 is HTTP doing its job, not malformed input getting through.
    fc.dictionary(fc.constantFrom('x-forwarded-for', 'x-request-id', 'accept', 'accept-language', 'cookie', 'x-tenant', 'x-gatehouse-role', 'origin', 'forwarded'), value, { maxKeys: 4 }),
    { freq: 3, nil: {} },
  );
}

function headersOf(auth: Auth, junk: Record<string, string>, contentType?: string): Record<string, string> {
  return { ...junk, ...(auth.header !== undefined && { authorization: auth.header }), ...(contentType !== undefined && { 'content-type': contentType }) };
}

const kindOf = (...parts: string[]) => parts.filter((p) => p.length > 0).join(' + ');

/**
 * The judge of routes that must refuse every input with a typed 4xx carrying one of `codes`;
 * a `hostile` request (schema-valid, with hostile values, sent only to routes that read) may
 * also be answered 200 with JSON, never with a 5xx.
 */
export function refusesWith(codes: RegExp): (answer: FuzzAnswer, request: FuzzRequest) => string | undefined {
  return (answer, request) => {
    if (request.kind.startsWith(HOSTILE) && answer.status === 200) return jsonObject(answer);
    return notTypedClientError(answer, codes);
  };
}

/** Kind prefix of schema-valid requests with hostile values (NUL, markup, extremes) at read-only routes. */
export const HOSTILE = 'hostile';

/** A route taking a JSON body: bodies certainly invalid for `spec`, at `paths`. */
export function bodyRoute(name: string, options: { method?: string; paths: fc.Arbitrary<{ path: string; kind: string }>; spec: ObjectSpec; credentials?: Credentials; codes: RegExp }): RouteFuzz {
  return {
    name,
    requests: fc.record({ at: options.paths, body: invalidBody(options.spec), auth: authorization(options.credentials), junk: junkHeaders() }).map(
      ({ at, body, auth, junk }): FuzzRequest => ({
        method: options.method ?? 'POST',
        path: at.path,
        headers: headersOf(auth, junk, body.contentType),
        body: body.text,
        kind: kindOf(at.kind, body.kind, auth.kind),
      }),
    ),
    judge: refusesWith(options.codes),
  };
}

/**
 * A GET route with a query string certainly invalid for `spec`, and (when `hostile` is given:
 * per parameter, values the schema accepts that are hard on what comes after it, the database
 * above all) a share of valid queries that must be answered 200 or 4xx, never 5xx.
 */
export function queryRoute(
  name: string,
  options: { paths: fc.Arbitrary<{ path: string; kind: string }>; spec: ObjectSpec; credentials?: Credentials; codes: RegExp; hostile?: Readonly<Record<string, fc.Arbitrary<string>>> },
): RouteFuzz {
  const queries = options.hostile ? fc.oneof({ weight: 4, arbitrary: invalidQuery(options.spec) }, { weight: 1, arbitrary: hostileQuery(options.hostile) }) : invalidQuery(options.spec);
  return {
    name,
    requests: fc.record({ at: options.paths, query: queries, auth: authorization(options.credentials), junk: junkHeaders() }).map(
      ({ at, query, auth, junk }): FuzzRequest => ({ method: 'GET', path: `${at.path}?${query.query}`, headers: headersOf(auth, junk), kind: kindOf(at.kind, query.kind, auth.kind) }),
    ),
    judge: refusesWith(options.codes),
  };
}

/** Valid queries of one to three hostile parameters. */
function hostileQuery(values: Readonly<Record<string, fc.Arbitrary<string>>>): fc.Arbitrary<{ query: string; kind: string }> {
  const names = Object.keys(values);
  return fc.subarray(names, { minLength: 1, maxLength: Math.min(3, names.length) }).chain((picked) =>
    fc.tuple(...picked.map((n) => values[n] as fc.Arbitrary<string>)).map((vals) => {
      const params = new URLSearchParams();
      picked.forEach((n, i) => params.append(n, vals[i] as string));
      return { query: params.toString(), kind: `${HOSTILE}-query` };
    }),
  );
}

/** Strings a text parameter accepts that are hard on storage and display: NUL, quotes, LIKE wildcards, markup, the longest allowed. */
export function hostileText(maxLength = 256): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom('\u0000', 'a\u0000b', "o'brien", '%', '_', '\\', '"', '<script>x</script>', '\u202e', '\ud83d\ude00', ' ', 'NULL', '*'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
    fc.constant('z'.repeat(maxLength)),
  );
}

/** Paths `template(segment)` with a segment that `valid` refuses (junk, bad percent-encoding, dot segments). */
export function junkPaths(template: (segment: string) => string, valid: (s: string) => boolean): fc.Arbitrary<{ path: string; kind: string }> {
  return pathSegment(valid).map(({ segment, kind }) => ({ path: template(segment), kind }));
}

function readableSegment(segment: string, readable: (s: string) => boolean): boolean {
  try {
    return readable(decodeURIComponent(segment));
  } catch {
    return false;
  }
}

/** A fixed path (for routes whose path is not what is fuzzed). */
export function fixedPath(path: string): fc.Arbitrary<{ path: string; kind: string }> {
  return fc.constant({ path, kind: '' });
}

/**
 * A GET route whose only input is a path parameter: every drawn segment must be refused, but
 * segments that `readable` accepts (a route that answers any well-formed one) may be answered 200.
 */
export function pathRoute(name: string, options: { template: (segment: string) => string; valid: (s: string) => boolean; readable?: (s: string) => boolean; credentials?: Credentials; codes: RegExp }): RouteFuzz {
  const readable = options.readable;
  const paths = readable ? pathSegment(options.valid).map(({ segment, kind }) => ({ path: options.template(segment), kind: readableSegment(segment, readable) ? `${HOSTILE}-${kind}` : kind })) : junkPaths(options.template, options.valid);
  return {
    name,
    requests: fc.record({ at: paths, auth: authorization(options.credentials), junk: junkHeaders(), query: fc.option(junkString({ maxLength: 60 }), { nil: undefined }) }).map(
      ({ at, auth, junk, query }): FuzzRequest => ({
        method: 'GET',
        // A query string is ignored by these routes; it rides along so its parsing is exercised too.
        path: query === undefined ? at.path : `${at.path}?q=${encodeURIComponent(query)}`,
        headers: headersOf(auth, junk),
        kind: kindOf(at.kind, auth.kind),
      }),
    ),
    judge: refusesWith(options.codes),
  };
}

/** A route whose only input is the credential: every request carries a refused one. */
export function authOnlyRoute(name: string, options: { method?: string; path: string; credentials: Credentials; codes: RegExp }): RouteFuzz {
  return {
    name,
    requests: fc.record({ auth: badAuthorization(options.credentials.material), junk: junkHeaders(), query: fc.option(junkString({ maxLength: 60 }), { nil: undefined }) }).map(
      ({ auth, junk, query }): FuzzRequest => ({
        method: options.method ?? 'GET',
        path: query === undefined ? options.path : `${options.path}?q=${encodeURIComponent(query)}`,
        headers: headersOf(auth, junk),
        kind: auth.kind,
      }),
    ),
    judge: refusesWith(options.codes),
  };
}

/**
 * A route that takes no input (status, health, documents, the inbox page): junk query strings,
 * headers, bodies and wrong methods. A GET must still answer 200 with what `ok` accepts; any
 * other method is a typed 404 (no such route).
 */
export function inputlessRoute(name: string, options: { path: string; ok: (answer: FuzzAnswer) => string | undefined; codes: RegExp; runs?: number }): RouteFuzz {
  return {
    name,
    // Nothing here is parsed but the query string, the headers and the method: a tenth of the inputs.
    runs: options.runs ?? Math.max(50, Math.ceil(FUZZ_RUNS / 10)),
    requests: fc
      .record({
        method: fc.oneof({ weight: 4, arbitrary: fc.constant('GET') }, { weight: 1, arbitrary: fc.constantFrom('POST', 'PUT', 'DELETE', 'PATCH') }),
        query: fc.option(junkString({ maxLength: 200 }), { nil: undefined }),
        junk: junkHeaders(),
        auth: fc.option(fc.constantFrom('Bearer x', 'Basic Zm9vOmJhcg==', `Bearer ${'k'.repeat(200)}`), { nil: undefined }),
      })
      .map(({ method, query, junk, auth }): FuzzRequest => ({
        method,
        path: query === undefined ? options.path : `${options.path}?${encodeURIComponent(query)}=${encodeURIComponent(query)}`,
        headers: { ...junk, ...(auth !== undefined && { authorization: auth }), ...(method !== 'GET' && { 'content-type': 'application/json' }) },
        ...(method !== 'GET' && { body: '{"x":1}' }),
        kind: method === 'GET' ? 'junk-query-and-headers' : `method ${method}`,
      })),
    judge: (answer, request) => (request.method === 'GET' ? options.ok(answer) : notTypedClientError(answer, options.codes)),
  };
}

/** The `ok` of a route answering 200 with a JSON object. */
export function jsonObject(answer: FuzzAnswer): string | undefined {
  if (answer.status !== 200) return answer.failure ?? `status ${answer.status}`;
  return typeof answer.body === 'object' && answer.body !== null && answer.contentType.startsWith('application/json') ? undefined : 'not a JSON object';
}

/** The `ok` of a route answering 200 with `type`. */
export function contentType(type: string): (answer: FuzzAnswer) => string | undefined {
  return (answer) => (answer.status !== 200 ? (answer.failure ?? `status ${answer.status}`) : answer.contentType.startsWith(type) ? undefined : `content type "${answer.contentType}"`);
}

/** Inputs for `/health`: each one asks the broker and the database, so a few suffice to show input is ignored. */
export const HEALTH_RUNS = Math.max(10, Math.ceil(FUZZ_RUNS / 100));

/**
 * The `ok` of `/health`: 200 and its report, or the documented 503 with the report saying
 * "unavailable" (its broker and database checks have a 2 s deadline each, which sixteen health
 * checks at once on a loaded two-core machine can miss); the spec checks it is 200 afterwards.
 */
export function healthReport(answer: FuzzAnswer): string | undefined {
  const status = (answer.body as { status?: unknown } | undefined)?.status;
  if (answer.status === 200 && status === 'ok') return undefined;
  if (answer.status === 503 && status === 'unavailable') return undefined;
  return answer.failure ?? `status ${answer.status}`;
}
