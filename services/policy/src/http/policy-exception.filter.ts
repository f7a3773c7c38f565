import { Catch } from '@nestjs/common';
import { errorResponse as sharedErrorResponse, GatehouseExceptionFilter } from '@gatehouse/service-runtime';
import { STATUS_BY_CODE } from '../errors.js';

const MAPPING = {
  statusByCode: { ...STATUS_BY_CODE, 'GATEKEEPER.BUNDLE_INVALID': 422, 'GATEKEEPER.BUNDLE_UNPARSEABLE': 422, 'GATEKEEPER.EXPRESSION_SYNTAX': 422, 'GATEKEEPER.EXPRESSION_LIMIT': 422, 'GATEKEEPER.EXPRESSION_FORBIDDEN_PATH': 422, 'GATEKEEPER.BUNDLE_TOO_LARGE': 413 },
  internal: { code: 'POLICY.INTERNAL', message: 'the policy service failed' },
} as const;

/** Maps anything thrown to a status, headers and a body that carries no request value (what the filter answers). */
export function errorResponse(error: unknown): ReturnType<typeof sharedErrorResponse> {
  return sharedErrorResponse(error, MAPPING);
}

/** Every error of every route leaves through here, as JSON with a stable code. */
@Catch()
export class PolicyExceptionFilter extends GatehouseExceptionFilter {
  constructor() {
    super(MAPPING, 'policy-http', new Set(['POLICY.UNAVAILABLE']));
  }
}
