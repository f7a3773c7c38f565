import { createServer } from 'node:net';
import { type INestApplication } from '@nestjs/common';

/** An HTTP answer as tests read it: status, headers, the parsed JSON body (if any) and the raw text. */
export interface HttpAnswer<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
  readonly text: string;
}

export async function readAnswer<T>(response: Response): Promise<HttpAnswer<T>> {
  const text = await response.text();
  let body: unknown = undefined;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body: body as T, text };
}

/** A JSON client of one base URL, speaking real HTTP. */
export interface HttpClient {
  readonly baseUrl: string;
  post<T = Record<string, unknown>>(path: string, body: unknown, headers?: Record<string, string>): Promise<HttpAnswer<T>>;
  get<T = Record<string, unknown>>(path: string, headers?: Record<string, string>): Promise<HttpAnswer<T>>;
}

export function httpClient(baseUrl: string): HttpClient {
  return {
    baseUrl,
    post: async (path, body, headers = {}) =>
      readAnswer(await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) })),
    get: async (path, headers = {}) => readAnswer(await fetch(`${baseUrl}${path}`, { headers })),
  };
}

/** Listens on a random loopback port and returns the app's base URL. */
export async function listenOnLoopback(app: INestApplication, port = 0): Promise<string> {
  await app.listen(port, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}

/** A TCP port that was free on 127.0.0.1 a moment ago (for a service started as a process). */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The `p`th percentile of ascending `sorted` samples (nearest rank); NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}
