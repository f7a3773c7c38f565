import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { parseRequest } from '../http/parse-request.js';
import { LEDGER_ENGINE } from '../tokens.js';
import { failKey, type FailKeyAnswer, FailKeyRequest } from './fail-key.js';

@Controller('v1/idempotency/failures')
export class FailKeyController {
  constructor(@Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort) {}

  /** 200 failed | 409 LEDGER.LEASE_LOST (or the fold's other rejection). */
  @Post()
  @HttpCode(200)
  async fail(@Body() body: unknown): Promise<FailKeyAnswer> {
    return answer(await failKey(this.ledger, parseRequest(FailKeyRequest, body)));
  }
}
