import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { type ErrorCategory, GatehouseError, type JsonSafe } from '@gatehouse/contracts';
import { type LedgerCode } from '../errors.js';

/** The HTTP status of each ledger code: the one place where outcomes become statuses. */
export const STATUS_BY_CODE: Readonly<Record<LedgerCode, number>> = {
  'LEDGER.INVALID_REQUEST': 400,
  'LEDGER.UNAUTHORIZED': 401,
  'LEDGER.KEY_NOT_FOUND': 404,
  'LEDGER.KEY_HELD': 409,
  'LEDGER.KEY_COMPLETED': 409,
  'LEDGER.KEY_AMBIGUOUS': 409,
  'LEDGER.NOT_STALE': 409,
  'LEDGER.LEASE_LOST': 409,
  'LEDGER.NOT_AMBIGUOUS': 409,
  'LEDGER.UNKNOWN_KEY': 409,
  'LEDGER.UNAVAILABLE': 503,
  'LEDGER.INTERNAL': 500,
};

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

export interface ErrorBody {
  readonly code: string;
  readonly message: string;
  readonly retryable: boolean;
  readonly details?: Record<string, JsonSafe>;
}

/** The 4xx status of an `http-errors` error (what express's body parser throws), if it is one. */
function clientErrorStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const status = (error as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 500 ? status : undefined;
}

/** Maps anything thrown to a status, headers and a body that carries no request value. */
export function errorResponse(error: unknown): { status: number; headers: Record<string, string>; body: ErrorBody } {
  if (error instanceof GatehouseError) {
    const status = STATUS_BY_CODE[error.code as LedgerCode] ?? STATUS_BY_CATEGORY[error.category];
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
  return { status: 500, headers: {}, body: { code: 'LEDGER.INTERNAL', message: 'the ledger failed', retryable: false } };
}

interface ResponseLike {
  headersSent?: boolean;
  status(code: number): ResponseLike;
  setHeader(name: string, value: string): void;
  json(body: unknown): void;
}

/** Every error of every route leaves through here, as JSON with a stable code. */
@Catch()
export class LedgerExceptionFilter implements ExceptionFilter {
  private readonly log = new Logger('ledger-http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<ResponseLike>();
    const { status, headers, body } = errorResponse(exception);
    if (status >= 500 && body.code !== 'LEDGER.UNAVAILABLE') this.log.error(`request failed: ${body.code}`);
    if (response.headersSent) return;
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    response.status(status).json(body);
  }
}
