import { type ArgumentsHost, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { type ErrorCategory, GatehouseError, type JsonSafe } from '@gatehouse/contracts';
import { type ForwardedRequest, type ForwardedResponse, type OwnerForwarder } from './owner-forwarding.js';

/** The JSON body of every error a service answers. */
export interface ErrorBody {
  readonly code: string;
  readonly message: string;
  readonly retryable: boolean;
  readonly details?: Record<string, JsonSafe>;
}

export interface ErrorMapping {
  /** Status of each of the service's own codes; other GatehouseErrors map by category. */
  readonly statusByCode: Readonly<Record<string, number>>;
  /** Code and static message for anything that is not a known error (a 500). */
  readonly internal: { readonly code: string; readonly message: string };
}

const STATUS_BY_CATEGORY: Readonly<Record<ErrorCategory, number>> = {
  validation: 400,
  conflict: 409,
  unavailable: 503,
  security: 401,
  internal: 500,
};

/** Static texts for framework errors: Nest's own messages may quote the request (a JSON parse error does). */
const HTTP_TEXT: Readonly<Record<number, [string, string]>> = {
  400: ['HTTP.BAD_REQUEST', 'the request is malformed (send a JSON body)'],
  404: ['HTTP.NOT_FOUND', 'no such resource'],
  405: ['HTTP.METHOD_NOT_ALLOWED', 'method not allowed'],
  413: ['HTTP.PAYLOAD_TOO_LARGE', 'the request body is too large'],
  415: ['HTTP.UNSUPPORTED_MEDIA_TYPE', 'send application/json'],
};

/** The 4xx status of an `http-errors` error (what express's body parser throws), if it is one. */
function clientErrorStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const status = (error as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 500 ? status : undefined;
}

/**
 * Maps anything thrown to a status, headers and a body that carries no request value: the one
 * place where outcomes become HTTP statuses.
 */
export function errorResponse(error: unknown, mapping: ErrorMapping): { status: number; headers: Record<string, string>; body: ErrorBody } {
  if (error instanceof GatehouseError) {
    const status = mapping.statusByCode[error.code] ?? STATUS_BY_CATEGORY[error.category];
    const headers: Record<string, string> = {};
    if (status === 401) headers['www-authenticate'] = 'Bearer';
    if (status === 503) headers['retry-after'] = '1';
    const details = Object.keys(error.details).length > 0 ? { details: error.details } : {};
    return { status, headers, body: { code: error.code, message: error.message, retryable: error.retryable, ...details } };
  }
  // Nest's own exceptions, and the body parser's http-errors (a body too large, unreadable JSON).
  const status = error instanceof HttpException ? error.getStatus() : clientErrorStatus(error);
  if (status !== undefined) {
    const [code, message] = HTTP_TEXT[status] ?? [`HTTP.${status}`, 'the request failed'];
    return { status, headers: {}, body: { code, message, retryable: false } };
  }
  return { status: 500, headers: {}, body: { code: mapping.internal.code, message: mapping.internal.message, retryable: false } };
}

interface ResponseLike extends ForwardedResponse {
  status(code: number): ResponseLike;
  json(body: unknown): void;
}

/** The engine's refusal of a key on a partition another replica owns: the partition, when `error` is one. */
function notOwnedPartition(error: unknown): number | undefined {
  if (!(error instanceof GatehouseError) || error.code !== 'FOLD.NOT_OWNER') return undefined;
  const partition = error.details['partition'];
  return typeof partition === 'number' ? partition : undefined;
}

/**
 * Base of each service's exception filter: every error of every route leaves as JSON with a
 * stable code. Subclasses add `@Catch()` and their mapping. With a `forwarder` (a scaled-out
 * replica), a request for a key of a partition another replica owns is answered by that owner.
 */
export abstract class GatehouseExceptionFilter implements ExceptionFilter {
  private readonly log: Logger;

  protected constructor(
    private readonly mapping: ErrorMapping,
    context: string,
    /** Codes that are expected under load (a 503 the caller retries) and not logged as errors. */
    private readonly quiet: ReadonlySet<string> = new Set(),
    private readonly forwarder?: OwnerForwarder,
  ) {
    this.log = new Logger(context);
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<ResponseLike>();
    const partition = notOwnedPartition(exception);
    if (partition !== undefined && this.forwarder) {
      this.forwarder.forward(host.switchToHttp().getRequest<ForwardedRequest>(), response, partition).catch((error: unknown) => this.answer(error, response));
      return;
    }
    this.answer(exception, response);
  }

  private answer(exception: unknown, response: ResponseLike): void {
    const { status, headers, body } = errorResponse(exception, this.mapping);
    if (status >= 500 && !this.quiet.has(body.code) && body.code !== 'FOLD.PARTITION_MOVING') this.log.error(`request failed: ${body.code}`);
    if (response.headersSent) return;
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    response.status(status).json(body);
  }
}
