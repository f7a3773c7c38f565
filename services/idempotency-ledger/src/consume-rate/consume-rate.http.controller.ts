import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { parseRequest } from '../http/parse-request.js';
import { LEDGER_ENGINE } from '../tokens.js';
import { consumeRate, type ConsumeRateAnswer, ConsumeRateRequest } from './consume-rate.js';

@Controller('v1/rate/consumptions')
export class ConsumeRateController {
  constructor(@Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort) {}

  /** 200 { allowed, remaining, resetAt }: a refusal is an answer, not an error. */
  @Post()
  @HttpCode(200)
  consume(@Body() body: unknown): Promise<ConsumeRateAnswer> {
    return consumeRate(this.ledger, parseRequest(ConsumeRateRequest, body));
  }
}
