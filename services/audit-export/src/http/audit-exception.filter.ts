import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { type ErrorCategory, GatehouseError, type JsonSafe } from '@gatehouse/contracts';
import { type AuditCode, STATUS_BY_CODE } from '../errors.js';

const STATUS_BY_CATEGORY: Readonly<Record<ErrorCategory, number>> = {
  validation: 400,
  conflict: 409,
  unavailable: 503,
  security: 401,
  internal: 500,
};

/** Static texts for framework errors: Nest's own messages may quote the request. */
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

function clientErrorStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const status = (error as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 500 ? status : undefined;
}

/** Maps anything thrown to a status and a body that carries no request value. */
export function errorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof GatehouseError) {
    const status = STATUS_BY_CODE[error.code as AuditCode] ?? STATUS_BY_CATEGORY[error.category];
    const details = Object.keys(error.details).length > 0 ? { details: error.details } : {};
    return { status, body: { code: error.code, message: error.message, retryable: error.retryable, ...details } };
  }
  const status = error instanceof HttpException ? error.getStatus() : clientErrorStatus(error);
  if (status !== undefined) {
    const [code, message] = HTTP_TEXT[status] ?? [`HTTP.${status}`, 'the request failed'];
    return { status, body: { code, message, retryable: false } };
  }
  return { status: 500, body: { code: 'AUDIT.INTERNAL', message: 'audit-export failed', retryable: false } };
}

interface ResponseLike {
  headersSent?: boolean;
  status(code: number): ResponseLike;
  json(body: unknown): void;
}

/** Every error of every route leaves through here, as JSON with a stable code. */
@Catch()
export class AuditExceptionFilter implements ExceptionFilter {
  private readonly log = new Logger('audit-http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<ResponseLike>();
    const { status, body } = errorResponse(exception);
    if (status >= 500) this.log.error(`request failed: ${body.code}`);
    if (response.headersSent) return;
    response.status(status).json(body);
  }
}
