import { Body, Controller, Headers, HttpCode, Inject, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { agentRequest } from '../http/agent-request.js';
import { type LedgerOptions } from '../ledger-config.js';
import { LEDGER_ENGINE, LEDGER_OPTIONS } from '../tokens.js';
import { consumeRate, type ConsumeRateAnswer, ConsumeRateRequest } from './consume-rate.js';

@Controller('v1/rate/consumptions')
export class ConsumeRateController {
  constructor(
    @Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort,
    @Inject(LEDGER_OPTIONS) private readonly options: LedgerOptions,
  ) {}

  /** Agents: 200 { allowed, remaining, resetAt } (a refusal is an answer); 401, 403 another tenant, 429 LEDGER.BUDGET_LIMIT. */
  @Post()
  @HttpCode(200)
  async consume(@Headers('authorization') authorization: string | undefined, @Body() body: unknown): Promise<ConsumeRateAnswer> {
    const { caller, request } = agentRequest(this.options.agents, authorization, ConsumeRateRequest, body);
    return answer(await consumeRate(this.ledger, caller, request, this.options.maxBudgets));
  }
}
