import { Catch, Inject, Optional } from '@nestjs/common';
import { GatehouseExceptionFilter, OWNER_FORWARDER, type OwnerForwarder } from '@gatehouse/service-runtime';
import { STATUS_BY_CODE } from '../errors.js';

const MAPPING = { statusByCode: STATUS_BY_CODE, internal: { code: 'APPROVAL.INTERNAL', message: 'the approval service failed' } } as const;

/** Every error of every route leaves through here, as JSON with a stable code. */
@Catch()
export class ApprovalExceptionFilter extends GatehouseExceptionFilter {
  constructor(@Optional() @Inject(OWNER_FORWARDER) forwarder?: OwnerForwarder) {
    // APPROVAL.UNAVAILABLE is expected when the broker is slow: the reviewer retries.
    super(MAPPING, 'approval-http', new Set(['APPROVAL.UNAVAILABLE']), forwarder);
  }
}
