import http from 'node:http';
import fc from 'fast-check';
import { CANARY } from './http-inputs.js';
import { derivedSeed, failureReport, inPool, samples } from './fuzz-run.js';

/** One request as the fuzz sends it. `kind` names the malformation for reports; it never holds request values. */
export interface FuzzRequest {
  readonly method: string;
  /** Path and query, already encoded. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly kind: string;
}

/** What came back; status 0 when nothing did within the deadline (a hang) or the connection broke. */
export interface FuzzAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
  readonly body: unknown;
  readonly failure?: string;
}

/** Requests in flight at once: enough to keep a 2-core service busy, few enough not to measure the client. */
export const HTTP_CONCURRENCY = 16;
const REQUEST_DEADLINE_MS = 10_000;

// node:http with a keep-alive pool rather than fetch: several times the requests per second on
// two cores, which is what lets thousands of inputs per endpoint fit the suite's time budget.
const agent = new http.Agent({ keepAlive: true, maxSockets: HTTP_CONCURRENCY });

function send(baseUrl: string, request: FuzzRequest): Promise<FuzzAnswer> {
  return new Promise((resolve) => {
    const fail = (failure: string) => resolve({ status: 0, contentType: '', text: '', body: undefined, failure });
    let req: http.ClientRequest;
    try {
      const headers: Record<string, string | number> = { ...request.headers };
      if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body);
      req = http.request(`${baseUrl}${request.path}`, { method: request.method, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', () => fail('response broken off'));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text, body });
        });
      });
    } catch {
      // The client itself refused the request (a header it will not send): a bug of the generator, reported as such.
      fail('the HTTP client refused to send this request');
      return;
    }
    req.setTimeout(REQUEST_DEADLINE_MS, () => req.destroy(new Error('timeout')));
    req.on('error', (error) => fail(error.message === 'timeout' ? 'no answer within 10 s' : 'connection failed'));
    req.end(request.body);
  });
}

/** Why `answer` is not a typed client error (4xx, JSON `{ code, message, retryable: false, details? }`, nothing echoed), or undefined. */
export function notTypedClientError(answer: FuzzAnswer, codes: RegExp): string | undefined {
  if (answer.failure) return answer.failure;
  if (answer.status < 400 || answer.status > 499) return `status ${answer.status}`;
  if (!answer.contentType.startsWith('application/json')) return `status ${answer.status} with content type "${answer.contentType}"`;
  const body = answer.body as Record<string, unknown> | undefined;
  if (typeof body !== 'object' || body === null) return `status ${answer.status} without a JSON object`;
  if (typeof body['code'] !== 'string' || !codes.test(body['code'])) return `status ${answer.status} with code ${JSON.stringify(body['code'])}`;
  if (typeof body['message'] !== 'string' || body['retryable'] !== false) return `status ${answer.status} ${body['code']} without message/retryable`;
  const extra = Object.keys(body).filter((k) => !['code', 'message', 'retryable', 'details'].includes(k));
  if (extra.length > 0) return `status ${answer.status} ${body['code']} with unexpected fields ${extra.join(',')}`;
  if (answer.text.includes(CANARY)) return `status ${answer.status} ${body['code']} echoes a request value`;
  return undefined;
}

/** A route's fuzz: the requests to draw from and how to judge each answer (undefined: as expected). */
export interface RouteFuzz {
  readonly name: string;
  /** Inputs to send when not the spec's default (routes that take no input get fewer). */
  readonly runs?: number;
  readonly requests: fc.Arbitrary<FuzzRequest>;
  readonly judge: (answer: FuzzAnswer, request: FuzzRequest) => string | undefined;
}

export interface RouteFuzzResult {
  readonly sent: number;
  readonly failures: string[];
  /** Answers per status, for the test log. */
  readonly statuses: Record<number, number>;
  readonly kinds: Record<string, number>;
}

/**
 * Node's HTTP parser refuses a request whose line and headers pass 16 KiB (431, no body) before
 * the service sees it. Junk paths, queries and credentials can add up to that; such a request is
 * judged by that rule instead (fetch adds a few headers of its own, hence the band in between).
 */
const HEAD_LIMIT = 16 * 1024;
const HEAD_SURELY_BELOW = HEAD_LIMIT - 600;

function headBytes(request: FuzzRequest): number {
  return Buffer.byteLength(`${request.method} ${request.path} HTTP/1.1`) + Object.entries(request.headers).reduce((n, [k, v]) => n + Buffer.byteLength(`${k}: ${v}`) + 2, 0);
}

function judged(route: RouteFuzz, answer: FuzzAnswer, request: FuzzRequest): string | undefined {
  const head = headBytes(request);
  if (head > HEAD_SURELY_BELOW && answer.status === 431) return undefined;
  if (head > HEAD_LIMIT) return answer.failure ?? `status ${answer.status} for a ${head}-byte head (expected 431)`;
  return route.judge(answer, request);
}

/** Sends `count` inputs of `route` (drawn from the seed) with HTTP_CONCURRENCY in flight and judges every answer. */
export async function fuzzRoute(baseUrl: string, route: RouteFuzz, seed: number, count: number): Promise<RouteFuzzResult> {
  const requests = samples(route.requests, derivedSeed(seed, route.name), route.runs ?? count);
  const answers = await inPool(requests, HTTP_CONCURRENCY, (request) => send(baseUrl, request));
  const failures: string[] = [];
  const statuses: Record<number, number> = {};
  const kinds: Record<string, number> = {};
  answers.forEach((answer, i) => {
    const request = requests[i] as FuzzRequest;
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    kinds[request.kind] = (kinds[request.kind] ?? 0) + 1;
    const problem = judged(route, answer, request);
    if (problem) failures.push(`#${i} ${request.method} ${request.kind}: ${problem}`);
  });
  return { sent: requests.length, failures, statuses, kinds };
}

/** The failures of a route fuzz as one comparable value; on failure Jest prints the seed and the first offenders. */
export function verdictOf(result: RouteFuzzResult, seed: number, route: string): { failures: string } {
  return { failures: result.failures.length === 0 ? 'none' : failureReport(seed, route, result.failures, result.sent) };
}
