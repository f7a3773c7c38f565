import { lookup as systemLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { type JsonSafe } from '@gatehouse/contracts';
import { Agent } from 'undici';
import { ConnectorPolicyError } from '../errors.js';
import { type AddressClass, classifyAddress } from './address-policy.js';
import { egressDomainAllowed, normalizeHost, validateEgressPatterns } from './hosts.js';

/** Stable codes of an egress refusal. */
export type EgressDenialCode =
  | 'CONNECTOR.EGRESS_HOST_NOT_DECLARED'
  | 'CONNECTOR.EGRESS_PRIVATE_ADDRESS'
  | 'CONNECTOR.EGRESS_TOO_MANY_REDIRECTS'
  | 'CONNECTOR.EGRESS_BODY_NOT_REPLAYABLE'
  | 'CONNECTOR.EGRESS_INVALID_URL'
  | 'CONNECTOR.EGRESS_GUARDRAIL_DENIED';

// Static on purpose: a URL's path, query and headers are tool input and may carry secrets.
const MESSAGES: Record<EgressDenialCode, string> = {
  'CONNECTOR.EGRESS_HOST_NOT_DECLARED': 'egress refused: the host is not in the declared egress allowlist',
  'CONNECTOR.EGRESS_PRIVATE_ADDRESS': 'egress refused: the host resolves to an address that is not public',
  'CONNECTOR.EGRESS_TOO_MANY_REDIRECTS': 'egress refused: too many redirects',
  'CONNECTOR.EGRESS_BODY_NOT_REPLAYABLE': 'egress refused: a one-shot request body cannot be replayed on a redirect',
  'CONNECTOR.EGRESS_INVALID_URL': 'egress refused: the target must be an absolute http(s) URL without credentials',
  'CONNECTOR.EGRESS_GUARDRAIL_DENIED': 'egress refused by a guardrail',
};

/** A request or redirect hop refused by the egress guard. Details name the host, never the path, query or headers. */
export class EgressDeniedError extends ConnectorPolicyError {
  declare readonly code: EgressDenialCode;

  constructor(code: EgressDenialCode, connectorId: string, details: Record<string, JsonSafe>) {
    super(code, MESSAGES[code], { connectorId, policy: 'network-egress', category: 'egress', details });
    this.name = 'EgressDeniedError';
  }
}

/** One resolved address, as `dns.lookup(host, { all: true })` reports it. */
export interface EgressResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a hostname to every address it may connect to. */
export type EgressLookup = (hostname: string) => Promise<readonly EgressResolvedAddress[]>;

/** What the guard hands each hop to: `typeof fetch` fits. */
export type EgressTransport = (input: string, init: RequestInit) => Promise<Response>;

/** One request on the way to the final response: `status` is absent when the hop was refused. */
export interface EgressHop {
  readonly host: string;
  readonly status?: number;
}

/** `RequestInit` as the guard accepts it: only the redirect modes it can enforce, no caller-chosen dispatcher. */
export type EgressRequestInit = Omit<RequestInit, 'redirect' | 'dispatcher'> & { readonly redirect?: 'follow' | 'manual' | 'error' };

/** A fetch that checks the target and every redirect hop against the egress policy. */
export type EgressGuardedFetch = (input: string | URL, init?: EgressRequestInit) => Promise<Response>;

/** Configuration of {@link egressFetch}. */
export interface EgressFetchOptions {
  /** Host patterns (exact or leading `*.`) every hop must match. */
  readonly allowedHosts: readonly string[];
  /**
   * Transport for each hop; it always receives `redirect: 'manual'`. Default: the global fetch with an
   * undici dispatcher whose connections use only the addresses validated for the hop. An injected
   * transport (including `globalThis.fetch` passed explicitly) gets the DNS pre-check only: it
   * resolves names again itself, so a rebinding DNS server can still swap the address under it.
   * Likewise if `globalThis.fetch` has been replaced by something that ignores `dispatcher`.
   */
  readonly fetch?: EgressTransport;
  /** Redirects followed before refusing; integer 0..50, default 20. */
  readonly maxRedirects?: number;
  /** Host patterns that may resolve to loopback, private, link-local or carrier-grade NAT addresses. */
  readonly allowPrivateAddresses?: readonly string[];
  /** Host patterns that may reach cloud metadata endpoints; `allowPrivateAddresses` never does. */
  readonly allowMetadataAddresses?: readonly string[];
  /** DNS resolution used for the address check (default: `dns.promises.lookup` with `all: true`). */
  readonly lookup?: EgressLookup;
  /** Observes each hop; an observer that throws fails the request. */
  readonly onHop?: (hop: EgressHop) => void;
  /** Connector named in refusals; default `egress`. */
  readonly connectorId?: string;
}

const OPTION_FIELDS = new Set(['allowedHosts', 'fetch', 'maxRedirects', 'allowPrivateAddresses', 'allowMetadataAddresses', 'lookup', 'onHop', 'connectorId']);
const REDIRECT_MODES = new Set(['follow', 'manual', 'error']);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
const NORMALIZED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH']);
const DEFAULT_MAX_REDIRECTS = 20;
// Pins are refreshed before every request; the cap only bounds memory under wildcard allowlists.
const MAX_PINNED_HOSTS = 512;

/** The resolved address rules one guarded fetch applies (internal; exported for the connect-lookup tests). */
export interface AddressPolicy {
  readonly connectorId: string;
  readonly allowedHosts: readonly string[];
  readonly allowPrivate: readonly string[];
  readonly allowMetadata: readonly string[];
  readonly lookup: EgressLookup;
}

interface HopRequest {
  method: string;
  headers: Headers;
  body: NonNullable<RequestInit['body']> | null;
  readonly replayable: boolean;
}

/**
 * Builds the guarded fetch behind `runtime.fetch`: absolute http(s) URLs only, every hop's host
 * checked against `allowedHosts` and its addresses against the address policy, redirects followed
 * here (never by the transport) with fetch-standard method rewriting and credential stripping.
 */
/** One redirect hop about to be followed, as a redirect check sees it (never headers or query). */
export interface RedirectHopView {
  readonly method: string;
  readonly host: string;
  readonly path: string;
  /** 1 for the first redirect. */
  readonly hop: number;
}

/** Decides whether a redirect hop may be followed; anything but `true` (a throw included) refuses it. */
export type RedirectCheck = (hop: RedirectHopView) => Promise<boolean>;

// Per request: the init object a caller handed in, so nothing reaches the transport.
const redirectChecks = new WeakMap<object, RedirectCheck>();

/**
 * A copy of `init` whose redirects a guarded fetch checks with `check` before following each one
 * (after the declared-host and address checks). The first hop is the caller's to check: the
 * egress guardrails' hook does that, then asks this for every hop a redirect leads to.
 */
export function withRedirectCheck(init: EgressRequestInit | undefined, check: RedirectCheck): EgressRequestInit {
  const copy: EgressRequestInit = { ...(init ?? {}) };
  redirectChecks.set(copy, check);
  return copy;
}

export function egressFetch(options: EgressFetchOptions): EgressGuardedFetch {
  const { policy, transport, maxRedirects, onHop } = resolveOptions(options);
  const pins = new PinnedAddresses(MAX_PINNED_HOSTS);
  // With the default transport the socket connects through this lookup, so it can only reach
  // addresses that were validated for this hop; a second DNS answer never gets a say.
  const dispatcher = transport === undefined ? new Agent({ connect: { lookup: createConnectLookup(policy, pins) } }) : undefined;

  return async function guardedFetch(input: string | URL, init?: EgressRequestInit): Promise<Response> {
    let url = parseTarget(input, policy.connectorId);
    const mode = redirectMode(init);
    const request = hopRequest(init);
    // Node's fetch ignores a caller's Host, but an injected transport may send it, and a Host
    // other than the URL's reaches whatever a shared front end routes that name to.
    if (request.headers.has('host')) {
      throw new EgressDeniedError('CONNECTOR.EGRESS_HOST_NOT_DECLARED', policy.connectorId, { host: normalizeHost(url.hostname), hop: 0, reason: 'host-header-override' });
    }
    const passThrough = passThroughInit(init);
    let redirects = 0;

    for (;;) {
      init?.signal?.throwIfAborted();
      const host = normalizeHost(url.hostname);
      let addresses: readonly EgressResolvedAddress[];
      try {
        addresses = await admit(policy, url.hostname, redirects);
      } catch (error) {
        if (error instanceof EgressDeniedError) observeRefusal(onHop, host);
        throw error;
      }
      if (isIP(host) === 0) pins.set(host, addresses);
      if (redirects > 0) await checkRedirect(init, { method: request.method, host, path: url.pathname, hop: redirects }, policy.connectorId, onHop);

      const hopInit: RequestInit = { ...passThrough, method: request.method, headers: new Headers(request.headers), redirect: 'manual' };
      if (request.body !== null) hopInit.body = request.body;
      // undici's own Agent type and the one in Node's fetch typings differ only nominally.
      if (dispatcher !== undefined) Object.assign(hopInit, { dispatcher });
      let response: Response;
      try {
        response = await send(transport, url, hopInit);
      } catch (error) {
        if (error instanceof EgressDeniedError) observeRefusal(onHop, host);
        throw error;
      }
      try {
        onHop?.({ host, status: response.status });
      } catch (error) {
        await discard(response);
        throw error;
      }

      if (!REDIRECT_STATUSES.has(response.status) || mode === 'manual') return finish(response, redirects);
      if (mode === 'error') {
        await discard(response);
        // What the fetch standard's network error looks like on every runtime.
        throw new TypeError('fetch failed');
      }
      const location = response.headers.get('location');
      if (location === null) return finish(response, redirects);
      // An unread body holds the connection; nothing in it is needed to follow the redirect.
      await discard(response);

      const next = parseLocation(location, url, policy.connectorId, host, redirects);
      const nextHost = normalizeHost(next.hostname);
      redirects += 1;
      try {
        if (redirects > maxRedirects) throw new EgressDeniedError('CONNECTOR.EGRESS_TOO_MANY_REDIRECTS', policy.connectorId, { host: nextHost, hop: redirects, maxRedirects });
        rewriteForRedirect(request, response.status, policy.connectorId, nextHost, redirects);
      } catch (error) {
        observeRefusal(onHop, nextHost);
        throw error;
      }
      // Credentials stay with the origin they were meant for, also if a later hop comes back.
      if (next.origin !== url.origin) for (const name of CREDENTIAL_HEADERS) request.headers.delete(name);
      url = next;
    }
  };
}

// Asks the request's redirect check, if it has one, before a redirect hop is sent.
async function checkRedirect(init: EgressRequestInit | undefined, hop: RedirectHopView, connectorId: string, onHop: ((hop: EgressHop) => void) | undefined): Promise<void> {
  const check = init === undefined ? undefined : redirectChecks.get(init);
  if (check === undefined) return;
  let allowed = false;
  try {
    allowed = (await check(hop)) === true;
  } catch {
    allowed = false;
  }
  if (allowed) return;
  observeRefusal(onHop, hop.host);
  throw new EgressDeniedError('CONNECTOR.EGRESS_GUARDRAIL_DENIED', connectorId, { host: hop.host, hop: hop.hop });
}

/**
 * The connect-time lookup of the pinned dispatcher: hands the socket the addresses validated for
 * the hop (re-checking them), or resolves and validates afresh when no pin is held.
 */
export function createConnectLookup(policy: AddressPolicy, pins: PinnedAddresses): LookupFunction {
  return (hostname, options, callback) => {
    const host = normalizeHost(hostname);
    const pinned = pins.get(host);
    const addresses = pinned === undefined ? admit(policy, hostname, undefined) : Promise.resolve(pinned).then((list) => revalidate(policy, host, list));
    addresses.then(
      (list) => {
        const wanted = options.family === 4 || options.family === 6 ? list.filter((a) => a.family === options.family) : list;
        const first = wanted[0];
        if (first === undefined) {
          callback(Object.assign(new Error(`no usable address for ${host}`), { code: 'ENOTFOUND', hostname }), '');
          return;
        }
        if (options.all === true) callback(null, wanted.map((a) => ({ address: a.address, family: a.family })));
        else callback(null, first.address, first.family);
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error('egress lookup failed'), ''),
    );
  };
}

/** Validated addresses per normalized host, oldest evicted first. */
export class PinnedAddresses {
  readonly #entries = new Map<string, readonly EgressResolvedAddress[]>();

  constructor(private readonly capacity: number) {}

  set(host: string, addresses: readonly EgressResolvedAddress[]): void {
    this.#entries.delete(host);
    this.#entries.set(host, addresses);
    if (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
  }

  get(host: string): readonly EgressResolvedAddress[] | undefined {
    return this.#entries.get(host);
  }
}

function resolveOptions(options: EgressFetchOptions): {
  policy: AddressPolicy;
  transport: EgressTransport | undefined;
  maxRedirects: number;
  onHop: ((hop: EgressHop) => void) | undefined;
} {
  const where = 'egressFetch';
  if (options === null || typeof options !== 'object') throw new TypeError(`${where}: options must be an object`);
  const unknown = Object.keys(options).filter((key) => !OPTION_FIELDS.has(key));
  if (unknown.length > 0) throw new TypeError(`${where}: unknown option ${unknown.map((k) => `"${k}"`).join(', ')}`);
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  if (!Number.isInteger(maxRedirects) || maxRedirects < 0 || maxRedirects > 50) throw new TypeError(`${where}: maxRedirects must be an integer from 0 to 50`);
  for (const key of ['fetch', 'lookup', 'onHop'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'function') throw new TypeError(`${where}: ${key} must be a function`);
  }
  const connectorId = options.connectorId ?? 'egress';
  if (typeof connectorId !== 'string' || connectorId.length === 0) throw new TypeError(`${where}: connectorId must be a non-empty string`);
  return {
    policy: {
      connectorId,
      allowedHosts: validateEgressPatterns(options.allowedHosts, `${where}: allowedHosts`),
      allowPrivate: validateEgressPatterns(options.allowPrivateAddresses ?? [], `${where}: allowPrivateAddresses`),
      allowMetadata: validateEgressPatterns(options.allowMetadataAddresses ?? [], `${where}: allowMetadataAddresses`),
      lookup: options.lookup ?? defaultLookup,
    },
    transport: options.fetch,
    maxRedirects,
    onHop: options.onHop,
  };
}

async function defaultLookup(hostname: string): Promise<readonly EgressResolvedAddress[]> {
  const found = await systemLookup(hostname, { all: true });
  return found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
}

/**
 * Checks one hop: the host against the allowlist, then every address it resolves to (or the
 * literal itself). Returns the validated addresses. `hop` is undefined at connect time.
 */
async function admit(policy: AddressPolicy, hostname: string, hop: number | undefined): Promise<readonly EgressResolvedAddress[]> {
  const host = normalizeHost(hostname);
  const where: Record<string, JsonSafe> = hop === undefined ? { host, phase: 'connect' } : { host, hop };
  if (!egressDomainAllowed(host, policy.allowedHosts)) throw new EgressDeniedError('CONNECTOR.EGRESS_HOST_NOT_DECLARED', policy.connectorId, where);
  const literal = isIP(host);
  if (literal !== 0) {
    checkAddress(policy, host, host, where);
    return [{ address: host, family: literal === 6 ? 6 : 4 }];
  }
  let resolved: readonly EgressResolvedAddress[];
  try {
    // The raw hostname keeps a trailing dot (fully qualified, no search domains) as the request will.
    resolved = await policy.lookup(hostname);
  } catch (error) {
    throw new TypeError('fetch failed', { cause: error });
  }
  return revalidate(policy, host, resolved, where);
}

function revalidate(policy: AddressPolicy, host: string, resolved: readonly EgressResolvedAddress[], where: Record<string, JsonSafe> = { host, phase: 'connect' }): readonly EgressResolvedAddress[] {
  if (!Array.isArray(resolved) || resolved.length === 0) throw new TypeError('fetch failed', { cause: new Error(`no address found for ${host}`) });
  return resolved.map((entry: unknown) => {
    const address = typeof entry === 'object' && entry !== null && 'address' in entry && typeof entry.address === 'string' ? entry.address : '';
    const version = isIP(address);
    if (version === 0) throw new TypeError('egressFetch: lookup returned something that is not an IP address');
    checkAddress(policy, host, address, where);
    // Trust the address, not the reported family: a wrong family would misroute the socket.
    return { address, family: version === 6 ? 6 : 4 } as const;
  });
}

function checkAddress(policy: AddressPolicy, host: string, address: string, where: Record<string, JsonSafe>): void {
  const addressClass = classifyAddress(address);
  if (!addressAllowed(host, addressClass, policy)) {
    throw new EgressDeniedError('CONNECTOR.EGRESS_PRIVATE_ADDRESS', policy.connectorId, { ...where, address, addressClass });
  }
}

function addressAllowed(host: string, addressClass: AddressClass, policy: AddressPolicy): boolean {
  switch (addressClass) {
    case 'public':
      return true;
    case 'metadata':
      return egressDomainAllowed(host, policy.allowMetadata);
    case 'loopback':
    case 'private':
    case 'link-local':
    case 'carrier-grade-nat':
      return egressDomainAllowed(host, policy.allowPrivate);
    case 'unspecified':
    case 'multicast':
    case 'broadcast':
    case 'reserved':
      return false;
    default: {
      const unreachable: never = addressClass;
      return unreachable;
    }
  }
}

function parseTarget(input: unknown, connectorId: string): URL {
  let url: URL;
  if (typeof input === 'string') {
    try {
      url = new URL(input);
    } catch {
      throw new EgressDeniedError('CONNECTOR.EGRESS_INVALID_URL', connectorId, { reason: 'not-an-absolute-url' });
    }
  } else if (input instanceof URL) {
    url = new URL(input.href);
  } else {
    // A Request carries its own method, headers, body and redirect mode past the checks here.
    const reason = typeof Request !== 'undefined' && input instanceof Request ? 'request-object' : 'not-a-url';
    throw new EgressDeniedError('CONNECTOR.EGRESS_INVALID_URL', connectorId, { reason });
  }
  checkUrlShape(url, connectorId, {});
  return url;
}

function parseLocation(location: string, current: URL, connectorId: string, host: string, hop: number): URL {
  let next: URL;
  try {
    next = new URL(location, current);
  } catch {
    throw new EgressDeniedError('CONNECTOR.EGRESS_INVALID_URL', connectorId, { reason: 'invalid-location', host, hop });
  }
  checkUrlShape(next, connectorId, { hop: hop + 1, redirectedFrom: host });
  return next;
}

function checkUrlShape(url: URL, connectorId: string, extra: Record<string, JsonSafe>): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EgressDeniedError('CONNECTOR.EGRESS_INVALID_URL', connectorId, { ...extra, reason: 'scheme-not-http', scheme: url.protocol.slice(0, 20) });
  }
  if (url.username !== '' || url.password !== '') {
    throw new EgressDeniedError('CONNECTOR.EGRESS_INVALID_URL', connectorId, { ...extra, reason: 'credentials-in-url', host: normalizeHost(url.hostname) });
  }
}

function redirectMode(init: EgressRequestInit | undefined): 'follow' | 'manual' | 'error' {
  if (init === undefined) return 'follow';
  if (init === null || typeof init !== 'object') throw new TypeError('egressFetch: init must be an object');
  if ('dispatcher' in init && (init as { dispatcher?: unknown }).dispatcher !== undefined) {
    throw new TypeError('egressFetch: init.dispatcher is not accepted; the guard owns the connection');
  }
  const mode: unknown = init.redirect ?? 'follow';
  if (typeof mode !== 'string' || !REDIRECT_MODES.has(mode)) throw new TypeError("egressFetch: init.redirect must be 'follow', 'manual' or 'error'");
  return mode as 'follow' | 'manual' | 'error';
}

function hopRequest(init: EgressRequestInit | undefined): HopRequest {
  const raw = init?.method ?? 'GET';
  if (typeof raw !== 'string') throw new TypeError('egressFetch: init.method must be a string');
  const upper = raw.toUpperCase();
  let headers: Headers;
  try {
    headers = new Headers(init?.headers);
  } catch {
    // The platform's message may quote the offending value, and header values are secrets.
    throw new TypeError('egressFetch: init.headers is not a valid header list');
  }
  const body = init?.body ?? null;
  return { method: NORMALIZED_METHODS.has(upper) ? upper : raw, headers, body, replayable: isReplayable(body) };
}

function passThroughInit(init: EgressRequestInit | undefined): RequestInit {
  if (init === undefined) return {};
  const { method: _method, headers: _headers, body: _body, redirect: _redirect, ...rest } = init as RequestInit;
  return rest;
}

// Bodies the platform re-extracts on every fetch call; anything else is consumed by the first hop.
function isReplayable(body: unknown): boolean {
  return (
    body === null ||
    typeof body === 'string' ||
    body instanceof URLSearchParams ||
    body instanceof Blob ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof FormData
  );
}

// Fetch-standard rewriting. Unlike the standard, a one-shot body on a 301/302 POST or a 303 is
// not an error: it is dropped, not replayed, so nothing is lost that could have been sent.
function rewriteForRedirect(request: HopRequest, status: number, connectorId: string, host: string, hop: number): void {
  const toGet = ((status === 301 || status === 302) && request.method === 'POST') || (status === 303 && request.method !== 'GET' && request.method !== 'HEAD');
  if (toGet) {
    request.method = 'GET';
    request.body = null;
    for (const name of BODY_HEADERS) request.headers.delete(name);
  }
  if (request.body !== null && !request.replayable) {
    throw new EgressDeniedError('CONNECTOR.EGRESS_BODY_NOT_REPLAYABLE', connectorId, { host, hop, status });
  }
}

async function send(transport: EgressTransport | undefined, url: URL, init: RequestInit): Promise<Response> {
  let response: Response;
  try {
    response = await (transport ?? globalThis.fetch)(url.href, init);
  } catch (error) {
    // The pinned lookup refuses at connect time; surface its refusal rather than a bare "fetch failed".
    if (error instanceof TypeError && error.cause instanceof EgressDeniedError) throw error.cause;
    throw error;
  }
  // Structural, so that a Response from another realm or undici copy (a custom transport) passes.
  if (response === null || typeof response !== 'object' || typeof response.status !== 'number' || typeof response.headers?.get !== 'function') {
    throw new TypeError('egressFetch: the transport did not return a Response');
  }
  return response;
}

function finish(response: Response, redirects: number): Response {
  if (redirects > 0 && response.redirected !== true) {
    try {
      // The transport saw a single request; the caller asked for one that was redirected.
      Object.defineProperty(response, 'redirected', { value: true, configurable: true });
    } catch {
      // A frozen response from a custom transport keeps its own value.
    }
  }
  return response;
}

// The request is refused either way; an observer failing here must not replace the refusal.
function observeRefusal(onHop: ((hop: EgressHop) => void) | undefined, host: string): void {
  try {
    onHop?.({ host });
  } catch {
    // Deliberately ignored: see above.
  }
}

async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // Already consumed or errored: either way the connection is released.
  }
}
