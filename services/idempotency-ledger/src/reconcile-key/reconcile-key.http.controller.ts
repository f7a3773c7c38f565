import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { parseRequest } from '../http/parse-request.js';
import { LEDGER_ENGINE } from '../tokens.js';
import { reconcileKey, type ReconcileKeyAnswer, ReconcileKeyRequest } from './reconcile-key.js';

@Controller('v1/idempotency/reconciliations')
export class ReconcileKeyController {
  constructor(@Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort) {}

  /** 200 completed | reserved | 409 LEDGER.LEASE_LOST, LEDGER.NOT_AMBIGUOUS, ... */
  @Post()
  @HttpCode(200)
  async reconcile(@Body() body: unknown): Promise<ReconcileKeyAnswer> {
    return answer(await reconcileKey(this.ledger, parseRequest(ReconcileKeyRequest, body)));
  }
}
