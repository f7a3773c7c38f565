import { GatehouseError, JsonValueSchema } from '@gatehouse/contracts';
import { HttpException } from '@nestjs/common';
import { z } from 'zod';
import { type ErrorBody, type ErrorMapping, errorResponse } from '../http-errors.js';
import { logChangedError } from '../projection/projection-log.js';
import { type JsonSchema } from './json-schema.js';

/** The body of every error every service answers (`ErrorBody`), as a schema: the document's `Error` component. */
export const ErrorBodySchema = z
  .strictObject({
    code: z.string().describe('Stable code, e.g. `POLICY.FORBIDDEN`: what a client branches on.'),
    message: z.string().describe('A static text chosen by the code; never a value of the request.'),
    retryable: z.boolean().describe('Whether the same request may succeed later.'),
    details: z
      .record(z.string(), JsonValueSchema)
      .optional()
      .describe('JSON-safe details (invalid field names, a reason); never a value of the request.'),
  })
  .describe('The error body of every route.') satisfies z.ZodType<ErrorBody>;

/** One error a route may answer: the status and the stable code and static message it carries. */
export interface ErrorCase {
  readonly status: number;
  readonly code: string;
  readonly message: string;
}

/**
 * The error case of an answer of `errorResponse` (the one place where a service's errors become
 * statuses): documents name a thrown error and get the status its exception filter gives it.
 */
export function errorCase(answer: { readonly status: number; readonly body: ErrorBody }): ErrorCase {
  return { status: answer.status, code: answer.body.code, message: answer.body.message };
}

// Codes the runtime answers whatever the service's own codes map to.
const RUNTIME_MAPPING: ErrorMapping = { statusByCode: {}, internal: { code: 'INTERNAL', message: 'internal' } };
const runtime = (error: unknown): ErrorCase => errorCase(errorResponse(error, RUNTIME_MAPPING));

/** Errors every service answers from its runtime rather than from a route's own code. */
export const RUNTIME_ERRORS = {
  /** Every route but `/health`, while a projection is not bound to the log its rows came from (`ProjectionLogGuard`). */
  logUnbound: [
    runtime(logChangedError('projection', 'cluster-changed')),
    runtime(
      new GatehouseError('PROJECTION.LOG_UNVERIFIED', 'the projection has not been checked against the log yet', {
        category: 'unavailable',
        retryable: true,
      }),
    ),
  ],
  /**
   * Every route with a JSON body: what the body parser refuses before the route runs (unreadable
   * JSON, over 100 kB, a charset not UTF-8).
   */
  body: [runtime(new HttpException('', 400)), runtime(new HttpException('', 413)), runtime(new HttpException('', 415))],
  /** A scaled-out replica that cannot reach the replica owning the key's partition (`OwnerForwarder`). */
  partitionMoving: runtime(
    new GatehouseError('FOLD.PARTITION_MOVING', 'the replica that owns the partition of this key cannot be reached now; retry', {
      category: 'unavailable',
      retryable: true,
    }),
  ),
} as const;

const errorRef = { $ref: '#/components/schemas/Error' };

/** An error response: its codes with their messages, and the `Error` body narrowed to those codes. */
export interface OpenApiErrorResponse {
  readonly description: string;
  readonly content: Record<string, { readonly schema: JsonSchema }>;
}

/**
 * The error responses of an operation: one per status, listing each code with its message, and
 * a body that is the `Error` component with `code` narrowed to those codes. A code listed twice
 * with two messages (a generic refusal and a route's own case of it) is documented once, with both.
 */
export function errorResponses(cases: readonly ErrorCase[]): Record<string, OpenApiErrorResponse> {
  const byStatus = new Map<number, Map<string, string>>();
  for (const { status, code, message } of cases) {
    const codes = byStatus.get(status) ?? new Map<string, string>();
    const known = codes.get(code);
    codes.set(code, known === undefined || known === message ? message : `${known}; or ${message}`);
    byStatus.set(status, codes);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, codes]) => [
        String(status),
        {
          description: [...codes.entries()].map(([code, message]) => `\`${code}\`: ${message}`).join('. '),
          content: { 'application/json': { schema: { allOf: [errorRef, { properties: { code: { enum: [...codes.keys()] } } }] } } },
        },
      ]),
  );
}
