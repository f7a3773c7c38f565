import { type ArgumentsHost, Catch, Inject, Optional } from '@nestjs/common';
import { errorResponse as sharedErrorResponse, GatehouseExceptionFilter, OWNER_FORWARDER, type OwnerForwarder } from '@gatehouse/service-runtime';
import { type LedgerCode, LedgerError } from '../errors.js';
import { LEDGER_REFUSALS } from '../tokens.js';
import { type LedgerRefusals } from './refusals.js';

export type { ErrorBody } from '@gatehouse/service-runtime';

/** The HTTP status of each ledger code: the one place where outcomes become statuses. */
export const STATUS_BY_CODE: Readonly<Record<LedgerCode, number>> = {
  'LEDGER.INVALID_REQUEST': 400,
  'LEDGER.UNAUTHORIZED': 401,
  'LEDGER.UNAUTHENTICATED': 401,
  'LEDGER.FORBIDDEN': 403,
  'LEDGER.PENDING_LIMIT': 429,
  'LEDGER.BUDGET_LIMIT': 429,
  'LEDGER.KEY_NOT_FOUND': 404,
  'LEDGER.KEY_HELD': 409,
  'LEDGER.KEY_COMPLETED': 409,
  'LEDGER.KEY_AMBIGUOUS': 409,
  'LEDGER.NOT_STALE': 409,
  'LEDGER.LEASE_LOST': 409,
  'LEDGER.NOT_AMBIGUOUS': 409,
  'LEDGER.UNKNOWN_KEY': 409,
  'LEDGER.NOT_EXPIRED': 409,
  'LEDGER.UNAVAILABLE': 503,
  'LEDGER.INTERNAL': 500,
};

/** Maps anything thrown to a status, headers and a body that carries no request value. */
export function errorResponse(error: unknown): ReturnType<typeof sharedErrorResponse> {
  return sharedErrorResponse(error, MAPPING);
}

const MAPPING = { statusByCode: STATUS_BY_CODE, internal: { code: 'LEDGER.INTERNAL', message: 'the ledger failed' } } as const;

/** Every error of every route leaves through here, as JSON with a stable code; refusals of a caller are counted. */
@Catch()
export class LedgerExceptionFilter extends GatehouseExceptionFilter {
  constructor(
    @Inject(LEDGER_REFUSALS) private readonly refusals: LedgerRefusals,
    @Optional() @Inject(OWNER_FORWARDER) forwarder?: OwnerForwarder,
  ) {
    // LEDGER.UNAVAILABLE is expected under load: the caller fails closed and retries.
    super(MAPPING, 'ledger-http', new Set(['LEDGER.UNAVAILABLE']), forwarder);
  }

  override catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof LedgerError) this.refusals.count(exception.code);
    super.catch(exception, host);
  }
}
