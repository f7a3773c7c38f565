import { GatehouseError, type JsonSafe } from '@gatehouse/contracts';

/** The stable codes the service answers with; the HTTP edge maps each to a status. */
export type AuditCode = 'AUDIT.INVALID_REQUEST' | 'AUDIT.UNAUTHENTICATED' | 'AUDIT.FORBIDDEN' | 'AUDIT.DECISION_NOT_FOUND' | 'AUDIT.EXPORT_NOT_FOUND' | 'AUDIT.EXPORT_SCALED_OUT' | 'AUDIT.UNAVAILABLE' | 'AUDIT.INTERNAL';

/** A use case's expected outcome: a value, or a coded refusal. */
export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly code: AuditCode };

export const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
export const refused = <T>(code: AuditCode): Outcome<T> => ({ ok: false, code });

const MESSAGES: Record<AuditCode, string> = {
  'AUDIT.INVALID_REQUEST': 'the request is invalid',
  'AUDIT.UNAUTHENTICATED': 'an API key with this right is required (Authorization: Bearer <key>)',
  'AUDIT.FORBIDDEN': 'this reader may not read that tenant',
  'AUDIT.DECISION_NOT_FOUND': 'no decision with this id',
  'AUDIT.EXPORT_NOT_FOUND': 'no export with this name',
  'AUDIT.EXPORT_SCALED_OUT': 'the export runs on several replicas: stop all but one to move its positions',
  'AUDIT.UNAVAILABLE': 'a dependency is unavailable',
  'AUDIT.INTERNAL': 'audit-export failed',
};

export const STATUS_BY_CODE: Readonly<Record<AuditCode, number>> = {
  'AUDIT.INVALID_REQUEST': 400,
  'AUDIT.UNAUTHENTICATED': 401,
  'AUDIT.FORBIDDEN': 403,
  'AUDIT.DECISION_NOT_FOUND': 404,
  'AUDIT.EXPORT_NOT_FOUND': 404,
  'AUDIT.EXPORT_SCALED_OUT': 409,
  'AUDIT.UNAVAILABLE': 503,
  'AUDIT.INTERNAL': 500,
};

/** The service's thrown error: a stable code and a static message, never a request value. */
export class AuditError extends GatehouseError {
  constructor(code: AuditCode, details: Record<string, JsonSafe> = {}, message: string = MESSAGES[code]) {
    super(code, message, {
      category: code === 'AUDIT.INVALID_REQUEST' || code.endsWith('NOT_FOUND') ? 'validation' : code === 'AUDIT.UNAUTHENTICATED' || code === 'AUDIT.FORBIDDEN' ? 'security' : code === 'AUDIT.UNAVAILABLE' ? 'unavailable' : code === 'AUDIT.EXPORT_SCALED_OUT' ? 'conflict' : 'internal',
      retryable: code === 'AUDIT.UNAVAILABLE',
      details,
    });
    this.name = 'AuditError';
  }
}

/** Unwraps an outcome at the edge. */
export function answer<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw new AuditError(outcome.code);
}
