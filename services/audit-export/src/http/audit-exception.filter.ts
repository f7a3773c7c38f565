import { Catch } from '@nestjs/common';
import { errorResponse as sharedErrorResponse, GatehouseExceptionFilter } from '@gatehouse/service-runtime';
import { STATUS_BY_CODE } from '../errors.js';

export type { ErrorBody } from '@gatehouse/service-runtime';

const MAPPING = { statusByCode: STATUS_BY_CODE, internal: { code: 'AUDIT.INTERNAL', message: 'audit-export failed' } } as const;

/** Maps anything thrown to a status and a body that carries no request value. */
export function errorResponse(error: unknown): ReturnType<typeof sharedErrorResponse> {
  return sharedErrorResponse(error, MAPPING);
}

/** Every error of every route leaves through here, as JSON with a stable code. */
@Catch()
export class AuditExceptionFilter extends GatehouseExceptionFilter {
  constructor() {
    super(MAPPING, 'audit-http');
  }
}
