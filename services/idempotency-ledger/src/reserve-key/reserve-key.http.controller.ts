import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { type Clock, type LedgerPort } from '../engine/ledger-port.js';
import { parseRequest } from '../http/parse-request.js';
import { LEDGER_CLOCK, LEDGER_ENGINE } from '../tokens.js';
import { reserveKey, type ReserveKeyAnswer, ReserveKeyRequest } from './reserve-key.js';

@Controller('v1/idempotency/reservations')
export class ReserveKeyController {
  constructor(
    @Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort,
    @Inject(LEDGER_CLOCK) private readonly clock: Clock,
  ) {}

  /** 200 reserved | completed | pending | ambiguous. */
  @Post()
  @HttpCode(200)
  reserve(@Body() body: unknown): Promise<ReserveKeyAnswer> {
    return reserveKey(this.ledger, parseRequest(ReserveKeyRequest, body), this.clock);
  }
}
