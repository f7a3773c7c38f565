import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { createConnectLookup, EgressDeniedError, type EgressFetchOptions, egressFetch, type EgressResolvedAddress, PinnedAddresses, type RedirectHopView, withRedirectCheck } from './egress-fetch.js';

// Real node:http servers on distinct loopback addresses stand in for distinct hosts.
interface Recorded {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}
type Route = (req: IncomingMessage, res: ServerResponse) => void;

interface TestServer {
  readonly ip: string;
  readonly port: number;
  readonly origin: string;
  readonly requests: Recorded[];
  readonly routes: Map<string, Route>;
  readonly server: Server;
}

async function startServer(ip: string): Promise<TestServer> {
  const requests: Recorded[] = [];
  const routes = new Map<string, Route>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      requests.push({ method: req.method ?? '', path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const route = routes.get(path.split('?')[0] ?? path);
      if (route) route(req, res);
      else res.end(`ok from ${ip}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, ip, resolve));
  const { port } = server.address() as AddressInfo;
  return { ip, port, origin: `http://${ip}:${port}`, requests, routes, server };
}

function redirect(status: number, location: string): Route {
  return (_req, res) => {
    res.writeHead(status, { location, 'content-type': 'text/plain' });
    res.end('moved');
  };
}

let a: TestServer;
let b: TestServer;
let c: TestServer;
const servers = (): TestServer[] => [a, b, c];

beforeAll(async () => {
  [a, b, c] = await Promise.all([startServer('127.0.0.1'), startServer('127.0.0.2'), startServer('127.0.0.3')]);
});

afterAll(async () => {
  await Promise.all(
    servers().map(
      (s) =>
        new Promise<void>((resolve) => {
          // Keep-alive sockets from the guard's pooled dispatcher would hold close() open.
          s.server.closeAllConnections();
          s.server.close(() => resolve());
        }),
    ),
  );
});

beforeEach(() => {
  for (const s of servers()) {
    s.requests.length = 0;
    s.routes.clear();
  }
});

const LOOPBACKS = ['127.0.0.1', '127.0.0.2', '127.0.0.3'];

/** A guarded fetch over the loopback servers; loopback has to be allowed explicitly. */
function guarded(overrides: Partial<EgressFetchOptions> = {}) {
  return egressFetch({ allowedHosts: LOOPBACKS, allowPrivateAddresses: LOOPBACKS, connectorId: 'test.conn', ...overrides });
}

/** A lookup for `*.gatehouse.test` names, which no real resolver knows. */
function names(table: Record<string, readonly string[]>, calls: string[] = []) {
  return async (hostname: string): Promise<EgressResolvedAddress[]> => {
    calls.push(hostname);
    const found = table[hostname];
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

// Markers placed in paths, queries, headers and bodies: no refusal may repeat them.
const SECRET = 'SECRET';

async function expectDenied(promise: Promise<unknown>, code: string): Promise<EgressDeniedError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EgressDeniedError);
  const denied = error as EgressDeniedError;
  expect(denied.code).toBe(code);
  expect(denied.connectorId).toBe('test.conn');
  expect(denied.connectorCategory).toBe('egress');
  for (const text of [denied.message, JSON.stringify(denied.toJSON()), denied.stack ?? '']) expect(text).not.toContain(SECRET);
  return denied;
}

const totalRequests = (): number => servers().reduce((n, s) => n + s.requests.length, 0);

describe('egressFetch: the request target', () => {
  it('fetches an absolute URL string and a URL object', async () => {
    const fetchGuarded = guarded();
    expect(await (await fetchGuarded(`${a.origin}/x`)).text()).toBe('ok from 127.0.0.1');
    expect(await (await fetchGuarded(new URL(`${b.origin}/y`))).text()).toBe('ok from 127.0.0.2');
  });

  it.each<[string, () => unknown]>([
    ['a Request object', () => new Request(`${a.origin}/${SECRET}`)],
    ['a relative URL', () => `/${SECRET}?q=${SECRET}`],
    ['a protocol-relative URL', () => `//127.0.0.1/${SECRET}`],
    ['an ftp URL', () => `ftp://127.0.0.1/${SECRET}`],
    ['a file URL', () => new URL(`file:///etc/${SECRET}`)],
    ['credentials in the URL', () => `http://user:${SECRET}@127.0.0.1:${a.port}/`],
    ['a URL-like object', () => ({ href: `${a.origin}/${SECRET}` })],
  ])('refuses %s before any request', async (_what, input) => {
    const denied = await expectDenied(guarded()(input() as string), 'CONNECTOR.EGRESS_INVALID_URL');
    expect(typeof denied.details['reason']).toBe('string');
    expect(totalRequests()).toBe(0);
  });

  it('refuses a redirect mode it cannot enforce and a caller-supplied dispatcher', async () => {
    await expect(guarded()(`${a.origin}/`, { redirect: 'follow-all' as 'follow' })).rejects.toThrow(TypeError);
    await expect(guarded()(`${a.origin}/`, { dispatcher: {} } as never)).rejects.toThrow('init.dispatcher is not accepted');
    expect(totalRequests()).toBe(0);
  });

  it('refuses a caller-set Host header, which would address a host the checks never saw', async () => {
    const denied = await expectDenied(guarded()(`${a.origin}/`, { headers: { Host: `admin-${SECRET}.internal` } }), 'CONNECTOR.EGRESS_HOST_NOT_DECLARED');
    expect(denied.details).toMatchObject({ host: '127.0.0.1', reason: 'host-header-override' });
    expect(totalRequests()).toBe(0);
  });

  it('refuses an invalid header without repeating its value', async () => {
    const error = await guarded()(`${a.origin}/`, { headers: { 'x-token': `bad\u0000${SECRET}` } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).not.toContain(SECRET);
    expect(totalRequests()).toBe(0);
  });

  it('refuses invalid options at construction', () => {
    expect(() => egressFetch({ allowedHosts: ['api.example.com:443'] })).toThrow(TypeError);
    expect(() => egressFetch({ allowedHosts: [], maxRedirects: 51 })).toThrow('maxRedirects');
    expect(() => egressFetch({ allowedHosts: [], maxRedirects: 1.5 })).toThrow('maxRedirects');
    expect(() => egressFetch({ allowedHosts: [], allowPrivateAddresses: ['*'] })).toThrow(TypeError);
    expect(() => egressFetch({ allowedHosts: [], retries: 3 } as never)).toThrow('unknown option "retries"');
  });
});

describe('egressFetch: declared hosts', () => {
  it('refuses an undeclared initial host before any request is sent', async () => {
    const denied = await expectDenied(guarded({ allowedHosts: ['127.0.0.2'] })(`${a.origin}/${SECRET}?token=${SECRET}`), 'CONNECTOR.EGRESS_HOST_NOT_DECLARED');
    expect(denied.details).toMatchObject({ host: '127.0.0.1', hop: 0, connectorId: 'test.conn', policy: 'network-egress' });
    expect(totalRequests()).toBe(0);
  });

  it('refuses a redirect to an undeclared host before that host receives anything', async () => {
    a.routes.set('/go', redirect(302, `${b.origin}/${SECRET}?token=${SECRET}`));
    const hops: unknown[] = [];
    const denied = await expectDenied(
      guarded({ allowedHosts: ['127.0.0.1'], onHop: (hop) => hops.push(hop) })(`${a.origin}/go`),
      'CONNECTOR.EGRESS_HOST_NOT_DECLARED',
    );
    expect(denied.details).toMatchObject({ host: '127.0.0.2', hop: 1 });
    expect(a.requests).toHaveLength(1);
    expect(b.requests).toHaveLength(0);
    expect(hops).toEqual([{ host: '127.0.0.1', status: 302 }, { host: '127.0.0.2' }]);
  });

  it('checks every hop of a three-hop chain', async () => {
    a.routes.set('/1', redirect(301, `${b.origin}/2`));
    b.routes.set('/2', redirect(302, `${c.origin}/3`));
    c.routes.set('/3', redirect(307, `${a.origin}/final`));
    const hops: unknown[] = [];
    const response = await guarded({ onHop: (hop) => hops.push(hop) })(`${a.origin}/1`);
    expect(await response.text()).toBe('ok from 127.0.0.1');
    expect(response.redirected).toBe(true);
    expect(hops).toEqual([
      { host: '127.0.0.1', status: 301 },
      { host: '127.0.0.2', status: 302 },
      { host: '127.0.0.3', status: 307 },
      { host: '127.0.0.1', status: 200 },
    ]);

    for (const s of servers()) s.requests.length = 0;
    const denied = await expectDenied(guarded({ allowedHosts: ['127.0.0.1', '127.0.0.2'] })(`${a.origin}/1`), 'CONNECTOR.EGRESS_HOST_NOT_DECLARED');
    expect(denied.details).toMatchObject({ host: '127.0.0.3', hop: 2 });
    expect([a.requests.length, b.requests.length, c.requests.length]).toEqual([1, 1, 0]);
  });

  it('resolves a relative Location against the current URL', async () => {
    a.routes.set('/dir/start', redirect(302, '../final?x=1'));
    const response = await guarded()(`${a.origin}/dir/start`);
    expect(response.status).toBe(200);
    expect(a.requests.map((r) => r.path)).toEqual(['/dir/start', '/final?x=1']);
  });

  it('returns a redirect status without a Location as is', async () => {
    a.routes.set('/nowhere', (_req, res) => {
      res.writeHead(302);
      res.end('no location');
    });
    const response = await guarded()(`${a.origin}/nowhere`);
    expect(response.status).toBe(302);
    expect(await response.text()).toBe('no location');
  });

  it('cancels the body of an intermediate redirect response', async () => {
    let closed = false;
    a.routes.set('/endless', (_req, res) => {
      res.writeHead(302, { location: '/done' });
      res.write('x'.repeat(64 * 1024)); // and never ends
      res.on('close', () => {
        closed = true;
      });
    });
    const response = await guarded()(`${a.origin}/endless`);
    expect(await response.text()).toBe('ok from 127.0.0.1');
    const deadline = Date.now() + 5_000;
    while (!closed && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(closed).toBe(true);
  });
});

describe('egressFetch: a redirect check', () => {
  it('is asked before each redirect hop (never the first), after the host checks, and a refusal stops the chain before that hop is sent', async () => {
    a.routes.set('/1', redirect(301, `${b.origin}/2?token=${SECRET}`));
    b.routes.set('/2', redirect(307, `${c.origin}/3`));
    const asked: RedirectHopView[] = [];
    const hops: unknown[] = [];
    const denied = await expectDenied(
      guarded({ onHop: (hop) => hops.push(hop) })(`${a.origin}/1`, withRedirectCheck(undefined, async (hop) => (asked.push(hop), hop.host !== '127.0.0.3'))),
      'CONNECTOR.EGRESS_GUARDRAIL_DENIED',
    );
    expect(asked).toEqual([
      { method: 'GET', host: '127.0.0.2', path: '/2', hop: 1 },
      { method: 'GET', host: '127.0.0.3', path: '/3', hop: 2 },
    ]);
    expect(denied.details).toMatchObject({ host: '127.0.0.3', hop: 2 });
    expect([a.requests.length, b.requests.length, c.requests.length]).toEqual([1, 1, 0]);
    expect(hops).toEqual([{ host: '127.0.0.1', status: 301 }, { host: '127.0.0.2', status: 307 }, { host: '127.0.0.3' }]);
    expect(JSON.stringify(asked)).not.toContain(SECRET);
  });

  it('refuses when the check throws, and is not consulted for another request with the same options', async () => {
    a.routes.set('/1', redirect(302, `${b.origin}/2`));
    await expectDenied(guarded()(`${a.origin}/1`, withRedirectCheck({ method: 'GET' }, () => Promise.reject(new Error('down')))), 'CONNECTOR.EGRESS_GUARDRAIL_DENIED');
    expect(b.requests).toHaveLength(0);
    const response = await guarded()(`${a.origin}/1`, { method: 'GET' });
    expect(await response.text()).toBe('ok from 127.0.0.2');
  });
});

describe('egressFetch: credentials on redirects', () => {
  const credentials = { Authorization: `Bearer ${SECRET}-a`, Cookie: `sid=${SECRET}-c`, 'Proxy-Authorization': `Basic ${SECRET}-p`, 'X-Trace': 'trace-1' };

  it.each<[string, () => RequestInit['headers']]>([
    ['a Headers object', () => new Headers(credentials)],
    ['an array of pairs', () => Object.entries(credentials)],
    ['a record', () => ({ ...credentials })],
  ])('strips authorization, cookie and proxy-authorization on a cross-origin hop given %s', async (_form, headers) => {
    a.routes.set('/cross', redirect(302, `${b.origin}/landing`));
    await guarded()(`${a.origin}/cross`, { headers: headers() });
    const [first] = a.requests;
    const [landed] = b.requests;
    expect(first?.headers).toMatchObject({ authorization: credentials.Authorization, cookie: credentials.Cookie, 'proxy-authorization': credentials['Proxy-Authorization'] });
    expect(landed?.headers['authorization']).toBeUndefined();
    expect(landed?.headers['cookie']).toBeUndefined();
    expect(landed?.headers['proxy-authorization']).toBeUndefined();
    expect(landed?.headers['x-trace']).toBe('trace-1');
  });

  it('keeps them on a same-origin hop', async () => {
    a.routes.set('/same', redirect(301, '/landing'));
    await guarded()(`${a.origin}/same`, { headers: credentials });
    const landed = a.requests[1];
    expect(landed?.path).toBe('/landing');
    expect(landed?.headers).toMatchObject({ authorization: credentials.Authorization, cookie: credentials.Cookie, 'proxy-authorization': credentials['Proxy-Authorization'] });
  });

  it('does not restore them when the chain comes back to the first origin', async () => {
    a.routes.set('/out', redirect(302, `${b.origin}/back`));
    b.routes.set('/back', redirect(302, `${a.origin}/home`));
    await guarded()(`${a.origin}/out`, { headers: credentials });
    expect(a.requests[1]?.path).toBe('/home');
    expect(a.requests[1]?.headers['authorization']).toBeUndefined();
  });

  it('treats another port on the same address as another origin', async () => {
    const bOnA = await startServer('127.0.0.1');
    try {
      a.routes.set('/port', redirect(302, `${bOnA.origin}/`));
      await guarded()(`${a.origin}/port`, { headers: credentials });
      expect(bOnA.requests[0]?.headers['authorization']).toBeUndefined();
    } finally {
      bOnA.server.closeAllConnections();
      await new Promise<void>((resolve) => bOnA.server.close(() => resolve()));
    }
  });
});

describe('egressFetch: method rewriting', () => {
  const post = { method: 'POST', body: `payload-${SECRET}`, headers: { 'content-type': 'text/plain', 'content-language': 'en' } };

  it.each([301, 302])('turns a POST into a body-less GET on %i', async (status) => {
    a.routes.set('/post', redirect(status, '/after'));
    await guarded()(`${a.origin}/post`, post);
    const after = a.requests[1];
    expect(after).toMatchObject({ method: 'GET', path: '/after', body: '' });
    expect(after?.headers['content-type']).toBeUndefined();
    expect(after?.headers['content-language']).toBeUndefined();
    expect(after?.headers['content-length']).toBeUndefined();
  });

  it('keeps a PUT and its body on a 302, as the fetch standard does', async () => {
    a.routes.set('/put', redirect(302, '/after'));
    await guarded()(`${a.origin}/put`, { ...post, method: 'put' });
    expect(a.requests[1]).toMatchObject({ method: 'PUT', body: post.body });
  });

  it('turns any method but HEAD into a body-less GET on 303', async () => {
    a.routes.set('/see-other', redirect(303, '/after'));
    await guarded()(`${a.origin}/see-other`, { ...post, method: 'PUT' });
    expect(a.requests[1]).toMatchObject({ method: 'GET', body: '' });
    expect(a.requests[1]?.headers['content-type']).toBeUndefined();

    a.requests.length = 0;
    await guarded()(`${a.origin}/see-other`, { method: 'HEAD' });
    expect(a.requests.map((r) => r.method)).toEqual(['HEAD', 'HEAD']);
  });

  it.each([307, 308])('replays the method and a string body on %i', async (status) => {
    a.routes.set('/keep', redirect(status, `${b.origin}/after`));
    await guarded()(`${a.origin}/keep`, post);
    expect(b.requests[0]).toMatchObject({ method: 'POST', body: post.body });
    expect(b.requests[0]?.headers['content-type']).toBe('text/plain');
  });

  it('replays a URLSearchParams body on 307', async () => {
    a.routes.set('/form', redirect(307, '/after'));
    await guarded()(`${a.origin}/form`, { method: 'POST', body: new URLSearchParams({ q: 'x' }) });
    expect(a.requests[1]).toMatchObject({ method: 'POST', body: 'q=x' });
  });

  it.each<[string, () => EgressBody]>([
    ['a ReadableStream', () => streamBody()],
    ['an async iterable', () => iterableBody()],
  ])('refuses to replay %s on a 307 before the target receives anything', async (_what, body) => {
    a.routes.set('/stream', redirect(307, `${b.origin}/${SECRET}`));
    const denied = await expectDenied(guarded()(`${a.origin}/stream`, { method: 'POST', body: body(), duplex: 'half' }), 'CONNECTOR.EGRESS_BODY_NOT_REPLAYABLE');
    expect(denied.details).toMatchObject({ host: '127.0.0.2', hop: 1, status: 307 });
    expect(a.requests[0]?.body).toBe(`chunk-${SECRET}`);
    expect(b.requests).toHaveLength(0);
  });

  it('drops (rather than replays) a one-shot body when a 302 turns the POST into a GET', async () => {
    a.routes.set('/stream-post', redirect(302, '/after'));
    await guarded()(`${a.origin}/stream-post`, { method: 'POST', body: streamBody(), duplex: 'half' });
    expect(a.requests[1]).toMatchObject({ method: 'GET', body: '' });
  });
});

type EgressBody = NonNullable<RequestInit['body']>;

function streamBody(): EgressBody {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(`chunk-${SECRET}`));
      controller.close();
    },
  });
}

function iterableBody(): EgressBody {
  async function* chunks() {
    yield new TextEncoder().encode(`chunk-${SECRET}`);
  }
  return chunks() as unknown as EgressBody;
}

describe('egressFetch: redirect modes and the hop limit', () => {
  it('refuses after maxRedirects hops of a server that redirects to itself forever', async () => {
    a.routes.set('/loop', redirect(302, '/loop'));
    const denied = await expectDenied(guarded({ maxRedirects: 3 })(`${a.origin}/loop`), 'CONNECTOR.EGRESS_TOO_MANY_REDIRECTS');
    expect(denied.details).toMatchObject({ host: '127.0.0.1', hop: 4, maxRedirects: 3 });
    expect(a.requests).toHaveLength(4);
  });

  it('follows 20 redirects by default and refuses the 21st', async () => {
    a.routes.set('/loop', redirect(302, '/loop'));
    await expectDenied(guarded()(`${a.origin}/loop`), 'CONNECTOR.EGRESS_TOO_MANY_REDIRECTS');
    expect(a.requests).toHaveLength(21);
  });

  it('refuses the first redirect when maxRedirects is 0', async () => {
    a.routes.set('/once', redirect(302, '/after'));
    await expectDenied(guarded({ maxRedirects: 0 })(`${a.origin}/once`), 'CONNECTOR.EGRESS_TOO_MANY_REDIRECTS');
    expect(a.requests).toHaveLength(1);
  });

  it("rejects a redirect with TypeError('fetch failed') in 'error' mode", async () => {
    a.routes.set('/moved', redirect(301, `${b.origin}/`));
    const error = await guarded()(`${a.origin}/moved`, { redirect: 'error' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('fetch failed');
    expect(b.requests).toHaveLength(0);
    expect(await (await guarded()(`${a.origin}/plain`, { redirect: 'error' })).text()).toBe('ok from 127.0.0.1');
  });

  it("returns the 3xx itself in 'manual' mode, checking only the first hop", async () => {
    a.routes.set('/moved', redirect(302, `http://undeclared.example/${SECRET}`));
    const response = await guarded()(`${a.origin}/moved`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(`http://undeclared.example/${SECRET}`);
    await expectDenied(guarded()(`http://undeclared.example/`, { redirect: 'manual' }), 'CONNECTOR.EGRESS_HOST_NOT_DECLARED');
  });

  it("always hands the transport redirect: 'manual'", async () => {
    a.routes.set('/1', redirect(302, `${b.origin}/2`));
    const modes: unknown[] = [];
    const transport = (input: string, init: RequestInit) => {
      modes.push(init.redirect);
      return fetch(input, init);
    };
    await guarded({ fetch: transport })(`${a.origin}/1`, { redirect: 'follow' });
    await guarded({ fetch: transport })(`${a.origin}/1`, { redirect: 'manual' });
    await guarded({ fetch: transport })(`${a.origin}/1`, { redirect: 'error' }).catch(() => undefined);
    expect(modes).toEqual(['manual', 'manual', 'manual', 'manual']);
  });
});

describe('egressFetch: address policy', () => {
  it('refuses a loopback literal unless allowPrivateAddresses lists the host', async () => {
    const denied = await expectDenied(guarded({ allowPrivateAddresses: [] })(`${a.origin}/${SECRET}`), 'CONNECTOR.EGRESS_PRIVATE_ADDRESS');
    expect(denied.details).toMatchObject({ host: '127.0.0.1', addressClass: 'loopback' });
    await expectDenied(guarded({ allowPrivateAddresses: ['127.0.0.2'] })(`${a.origin}/`), 'CONNECTOR.EGRESS_PRIVATE_ADDRESS');
    expect(totalRequests()).toBe(0);
    expect((await guarded({ allowPrivateAddresses: ['127.0.0.1'] })(`${a.origin}/`)).status).toBe(200);
  });

  it('refuses a name that resolves to loopback unless allowPrivateAddresses lists it', async () => {
    const lookup = names({ 'api.gatehouse.test': ['127.0.0.1'] });
    const url = `http://api.gatehouse.test:${a.port}/x`;
    const denied = await expectDenied(guarded({ allowedHosts: ['*.gatehouse.test'], allowPrivateAddresses: [], lookup })(url), 'CONNECTOR.EGRESS_PRIVATE_ADDRESS');
    expect(denied.details).toMatchObject({ host: 'api.gatehouse.test', address: '127.0.0.1', addressClass: 'loopback' });
    expect(totalRequests()).toBe(0);

    const response = await guarded({ allowedHosts: ['*.gatehouse.test'], allowPrivateAddresses: ['*.gatehouse.test'], lookup })(url);
    expect(await response.text()).toBe('ok from 127.0.0.1');
    expect(a.requests[0]?.headers.host).toBe(`api.gatehouse.test:${a.port}`);
  });

  it('refuses a name that resolves to 169.254.169.254 even when allowPrivateAddresses matches it', async () => {
    const lookup = names({ 'meta.gatehouse.test': ['169.254.169.254'] });
    const denied = await expectDenied(
      guarded({ allowedHosts: ['*.gatehouse.test'], allowPrivateAddresses: ['*.gatehouse.test'], lookup })(`http://meta.gatehouse.test/latest/${SECRET}`),
      'CONNECTOR.EGRESS_PRIVATE_ADDRESS',
    );
    expect(denied.details).toMatchObject({ host: 'meta.gatehouse.test', address: '169.254.169.254', addressClass: 'metadata' });
  });

  it('refuses metadata literals and IPv4-mapped metadata even when allowPrivateAddresses matches', async () => {
    const fetchGuarded = guarded({ allowedHosts: ['169.254.169.254', '::ffff:a9fe:a9fe'], allowPrivateAddresses: ['169.254.169.254', '::ffff:a9fe:a9fe'] });
    await expectDenied(fetchGuarded(`http://169.254.169.254/latest/meta-data/${SECRET}`), 'CONNECTOR.EGRESS_PRIVATE_ADDRESS');
    await expectDenied(fetchGuarded(`http://[::ffff:169.254.169.254]/latest/${SECRET}`), 'CONNECTOR.EGRESS_PRIVATE_ADDRESS');
  });

  it('lets a host listed in allowMetadataAddresses through the pre-check (injected transport)', async () => {
    const lookup = names({ 'meta.gatehouse.test': ['169.254.169.254'] });
    const seen: string[] = [];
    // Stands in for a metadata endpoint: the transport sends every request to server a.
    const transport = (input: string, init: RequestInit) => {
      seen.push(new URL(input).host);
      return fetch(`${a.origin}/`, init);
    };
    const options = { allowedHosts: ['meta.gatehouse.test'], lookup, fetch: transport };
    await expectDenied(guarded(options)('http://meta.gatehouse.test/'), 'CONNECTOR.EGRESS_PRIVATE_ADDRESS');
    expect((await guarded({ ...options, allowMetadataAddresses: ['meta.gatehouse.test'] })('http://meta.gatehouse.test/')).status).toBe(200);
    expect(seen).toEqual(['meta.gatehouse.test']);
  });

  it('refuses when any one of the resolved addresses is not public', async () => {
    const lookup = names({ 'mixed.gatehouse.test': ['8.8.8.8', '10.0.0.1'] });
    const denied = await expectDenied(guarded({ allowedHosts: ['*.gatehouse.test'], lookup })('http://mixed.gatehouse.test/'), 'CONNECTOR.EGRESS_PRIVATE_ADDRESS');
    expect(denied.details).toMatchObject({ address: '10.0.0.1', addressClass: 'private' });
  });

  it('checks the addresses of every redirect hop', async () => {
    const lookup = names({ 'api.gatehouse.test': ['127.0.0.1'], 'internal.gatehouse.test': ['10.0.0.7'] });
    a.routes.set('/hop', redirect(302, `http://internal.gatehouse.test/${SECRET}`));
    const denied = await expectDenied(
      guarded({ allowedHosts: ['*.gatehouse.test'], allowPrivateAddresses: ['api.gatehouse.test'], lookup })(`http://api.gatehouse.test:${a.port}/hop`),
      'CONNECTOR.EGRESS_PRIVATE_ADDRESS',
    );
    expect(denied.details).toMatchObject({ host: 'internal.gatehouse.test', hop: 1, addressClass: 'private' });
  });

  it("fails a name that does not resolve with TypeError('fetch failed')", async () => {
    const error = await guarded({ allowedHosts: ['*.gatehouse.test'], lookup: names({}) })('http://nowhere.gatehouse.test/').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('fetch failed');
  });
});

describe('egressFetch: DNS pinning', () => {
  it('connects to the addresses it validated, not to a second DNS answer', async () => {
    // A rebinding resolver: harmless on the check, the metadata endpoint on any later query.
    let answers = 0;
    const lookup = async (): Promise<EgressResolvedAddress[]> => (answers++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '169.254.169.254', family: 4 }]);
    const fetchGuarded = guarded({ allowedHosts: ['rebind.gatehouse.test'], allowPrivateAddresses: ['rebind.gatehouse.test'], lookup });
    const response = await fetchGuarded(`http://rebind.gatehouse.test:${a.port}/`);
    expect(await response.text()).toBe('ok from 127.0.0.1');
    expect(answers).toBe(1);
    // The next request's check sees the rebound answer and refuses it.
    await expectDenied(fetchGuarded(`http://rebind.gatehouse.test:${a.port}/`), 'CONNECTOR.EGRESS_PRIVATE_ADDRESS');
    expect(a.requests).toHaveLength(1);
  });

  describe('the connect-time lookup', () => {
    const policy = (lookup: (hostname: string) => Promise<EgressResolvedAddress[]>) => ({
      connectorId: 'test.conn',
      allowedHosts: ['*.gatehouse.test'],
      allowPrivate: ['*.gatehouse.test'],
      allowMetadata: [],
      lookup,
    });
    const call = (connect: ReturnType<typeof createConnectLookup>, hostname: string, options: { all?: boolean; family?: number }) =>
      new Promise<{ error: unknown; address: unknown; family: unknown }>((resolve) => {
        connect(hostname, options, (error, address, family) => resolve({ error, address, family }));
      });

    it('hands out the pinned addresses without resolving again', async () => {
      const calls: string[] = [];
      const pins = new PinnedAddresses(8);
      pins.set('api.gatehouse.test', [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ]);
      const connect = createConnectLookup(policy(names({}, calls)), pins);
      expect(await call(connect, 'api.gatehouse.test', { all: true })).toEqual({
        error: null,
        address: [
          { address: '127.0.0.1', family: 4 },
          { address: '::1', family: 6 },
        ],
        family: undefined,
      });
      expect(await call(connect, 'api.gatehouse.test', { family: 6 })).toEqual({ error: null, address: '::1', family: 6 });
      expect(calls).toEqual([]);
    });

    it('re-validates a pin and refuses one that is no longer allowed', async () => {
      const pins = new PinnedAddresses(8);
      pins.set('api.gatehouse.test', [{ address: '169.254.169.254', family: 4 }]);
      const { error } = await call(createConnectLookup(policy(names({})), pins), 'api.gatehouse.test', { all: true });
      expect(error).toBeInstanceOf(EgressDeniedError);
      expect((error as EgressDeniedError).details).toMatchObject({ addressClass: 'metadata', phase: 'connect' });
    });

    it('resolves and validates afresh when it holds no pin', async () => {
      const connect = createConnectLookup(policy(names({ 'meta.gatehouse.test': ['169.254.169.254'], 'ok.gatehouse.test': ['10.0.0.1'] })), new PinnedAddresses(8));
      const refused = await call(connect, 'meta.gatehouse.test', {});
      expect(refused.error).toBeInstanceOf(EgressDeniedError);
      expect(await call(connect, 'ok.gatehouse.test', {})).toEqual({ error: null, address: '10.0.0.1', family: 4 });
      const undeclared = await call(connect, 'other.example', {});
      expect((undeclared.error as EgressDeniedError).code).toBe('CONNECTOR.EGRESS_HOST_NOT_DECLARED');
    });

    it('evicts the oldest pin beyond its capacity', () => {
      const pins = new PinnedAddresses(2);
      pins.set('a.gatehouse.test', [{ address: '10.0.0.1', family: 4 }]);
      pins.set('b.gatehouse.test', [{ address: '10.0.0.2', family: 4 }]);
      pins.set('c.gatehouse.test', [{ address: '10.0.0.3', family: 4 }]);
      expect(pins.get('a.gatehouse.test')).toBeUndefined();
      expect(pins.get('c.gatehouse.test')).toEqual([{ address: '10.0.0.3', family: 4 }]);
    });
  });
});
