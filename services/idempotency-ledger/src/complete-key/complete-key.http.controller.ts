import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { parseRequest } from '../http/parse-request.js';
import { LEDGER_ENGINE } from '../tokens.js';
import { completeKey, CompleteKeyRequest } from './complete-key.js';

@Controller('v1/idempotency/completions')
export class CompleteKeyController {
  constructor(@Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort) {}

  /** 200 completed | 409 LEDGER.LEASE_LOST (or the fold's other rejection). */
  @Post()
  @HttpCode(200)
  async complete(@Body() body: unknown): Promise<{ status: 'completed' }> {
    return answer(await completeKey(this.ledger, parseRequest(CompleteKeyRequest, body)));
  }
}
