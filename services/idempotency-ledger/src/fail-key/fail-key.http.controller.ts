import { Body, Controller, Headers, HttpCode, Inject, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { agentRequest } from '../http/agent-request.js';
import { type LedgerOptions } from '../ledger-config.js';
import { LEDGER_ENGINE, LEDGER_OPTIONS } from '../tokens.js';
import { failKey, type FailKeyAnswer, FailKeyRequest } from './fail-key.js';

@Controller('v1/idempotency/failures')
export class FailKeyController {
  constructor(
    @Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort,
    @Inject(LEDGER_OPTIONS) private readonly options: LedgerOptions,
  ) {}

  /** Agents: 200 failed | 409 LEDGER.LEASE_LOST (or the fold's other rejection); 401, 403 another tenant. */
  @Post()
  @HttpCode(200)
  async fail(@Headers('authorization') authorization: string | undefined, @Body() body: unknown): Promise<FailKeyAnswer> {
    const { caller, request } = agentRequest(this.options.agents, authorization, FailKeyRequest, body);
    return answer(await failKey(this.ledger, caller, request));
  }
}
