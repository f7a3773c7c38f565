import { Validator } from '@seriousme/openapi-schema-validator';
import { type z } from 'zod';
import { ErrorBodySchema } from '../openapi/error-responses.js';
import { type OpenApiDocument, type OpenApiOperation, type OpenApiResponse } from '../openapi/document.js';
import { readAnswer } from './http.js';

/** How to call a service's documented operations. */
export interface ProbeOptions {
  /** A value for each path parameter, by name. */
  readonly pathValues: Readonly<Record<string, string>>;
  /** Headers carrying a credential each security scheme admits, by scheme name. */
  readonly credentials: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

/** An answer the document does not describe. */
export interface UndocumentedAnswer {
  readonly operation: string;
  readonly probe: 'anonymous' | 'empty body' | 'unreadable body';
  readonly status: number;
  readonly code?: string;
  readonly problem: string;
}

type Probe = UndocumentedAnswer['probe'];

/** The codes an error response of the document admits (its `Error` body with `code` narrowed), if it lists them. */
function documentedCodes(response: OpenApiResponse): readonly string[] | undefined {
  type Narrowed = { allOf?: { properties?: { code?: { enum?: string[] } } }[] };
  const schema = response.content?.['application/json']?.schema as Narrowed | undefined;
  return schema?.allOf?.[1]?.properties?.code?.enum;
}

/** What is wrong with `status` and `body` as an answer of `operation`, if anything. */
function judge(
  operation: OpenApiOperation,
  secured: boolean,
  probe: Probe,
  status: number,
  body: unknown,
): { problem: string; code?: string } | undefined {
  const error = status >= 400 ? ErrorBodySchema.safeParse(body) : undefined;
  const code = error?.success ? error.data.code : undefined;
  const found = { ...(code !== undefined && { code }) };
  if (secured && probe === 'anonymous' && status !== 401) {
    return { problem: 'a secured operation did not refuse an anonymous caller with 401', ...found };
  }
  const response = operation.responses[String(status)];
  if (!response) return { problem: 'status not documented', ...found };
  if (error && !error.success) return { problem: 'error body is not the shared Error' };
  const codes = error ? documentedCodes(response) : undefined;
  if (code !== undefined && codes !== undefined && !codes.includes(code)) {
    return { problem: 'code not documented for this status', ...found };
  }
  return undefined;
}

/**
 * Calls every operation of `document` as an attacker and a careless client would: without a
 * credential, then with one and an empty JSON object as the body, and, where it takes a body,
 * with one and a body that is not JSON. Returns every answer the document does not describe: a
 * status it does not list, a code it does not list for that status, an error body that is not
 * the shared `Error`, or a secured operation that did not refuse the anonymous call with 401.
 * Operations that stream (`text/event-stream`) are called anonymously only.
 */
export async function undocumentedAnswers(
  baseUrl: string,
  document: OpenApiDocument,
  options: ProbeOptions,
): Promise<UndocumentedAnswer[]> {
  const unknown = Object.keys(options).filter((key) => key !== 'pathValues' && key !== 'credentials');
  if (unknown.length > 0) throw new TypeError(`undocumentedAnswers: unknown option ${unknown.map((key) => `"${key}"`).join(', ')}`);
  const found: UndocumentedAnswer[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    const url = `${baseUrl}${path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(options.pathValues[name] ?? name))}`;
    for (const [method, operation] of Object.entries(item) as [string, OpenApiOperation][]) {
      const security = operation.security ?? document.security;
      const scheme = Object.keys(security[0] ?? {})[0];
      const credential = scheme === undefined ? {} : (options.credentials[scheme] ?? {});
      const streams = Object.values(operation.responses).some((r) => r.content?.['text/event-stream'] !== undefined);
      const probes: [Probe, Record<string, string>, string | undefined][] = [['anonymous', {}, operation.requestBody ? '{}' : undefined]];
      if (!streams) probes.push(['empty body', credential, operation.requestBody ? '{}' : undefined]);
      if (!streams && operation.requestBody) probes.push(['unreadable body', credential, '{"unterminated']);
      for (const [probe, headers, body] of probes) {
        const request: RequestInit = {
          method: method.toUpperCase(),
          headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
          ...(body !== undefined && { body }),
        };
        const answer = await readAnswer(await fetch(url, request));
        const wrong = judge(operation, scheme !== undefined, probe, answer.status, answer.body);
        if (wrong) found.push({ operation: `${method.toUpperCase()} ${path}`, probe, status: answer.status, ...wrong });
      }
    }
  }
  return found;
}

/** Whether `document` lists `status` among the responses of `operation` (`METHOD /path`, as `documentedRoutes` writes it). */
export function documentsStatus(document: OpenApiDocument, operation: string, status: number): boolean {
  const [method = '', path = ''] = operation.split(' ');
  const item = document.paths[path] as Record<string, OpenApiOperation | undefined> | undefined;
  return item?.[method.toLowerCase()]?.responses[String(status)] !== undefined;
}

/**
 * The body of `answer` to `operation`, parsed by `schema` (the schema its documented response was
 * generated from). Throws when the status is not a success the document lists for the operation,
 * or the body does not fit the schema.
 */
export function documentedBody<S extends z.ZodType>(
  document: OpenApiDocument,
  operation: string,
  answer: { readonly status: number; readonly text: string; readonly body: unknown },
  schema: S,
): z.infer<S> {
  if (answer.status < 200 || answer.status > 299 || !documentsStatus(document, operation, answer.status)) {
    throw new Error(`${operation} answered ${answer.status}, which is not a success the document lists: ${answer.text.slice(0, 300)}`);
  }
  return schema.parse(answer.body);
}

/**
 * What the OpenAPI schema validator (`@seriousme/openapi-schema-validator`, the one every service's
 * document is checked with) finds wrong with `document` as an OpenAPI 3.1 document: [] when it is one.
 */
export async function openApi31Problems(document: unknown): Promise<string[]> {
  if (document === null || typeof document !== 'object' || Array.isArray(document)) return ['not a JSON object'];
  const validator = new Validator();
  const result = await validator.validate(document as Record<string, unknown>);
  const errors = result.errors ?? [];
  const problems = typeof errors === 'string' ? [errors] : errors.map((error) => `${error.instancePath || '/'} ${error.message ?? error.keyword}`);
  if (!result.valid && problems.length === 0) problems.push('invalid');
  if (result.valid && validator.version !== '3.1') problems.push(`OpenAPI ${validator.version}, not 3.1`);
  return problems;
}
