import { Body, Controller, Headers, HttpCode, Inject, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { agentRequest } from '../http/agent-request.js';
import { type LedgerOptions } from '../ledger-config.js';
import { LEDGER_ENGINE, LEDGER_OPTIONS } from '../tokens.js';
import { completeKey, CompleteKeyRequest } from './complete-key.js';

@Controller('v1/idempotency/completions')
export class CompleteKeyController {
  constructor(
    @Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort,
    @Inject(LEDGER_OPTIONS) private readonly options: LedgerOptions,
  ) {}

  /** Agents: 200 completed | 409 LEDGER.LEASE_LOST (or the fold's other rejection); 401, 403 another tenant. */
  @Post()
  @HttpCode(200)
  async complete(@Headers('authorization') authorization: string | undefined, @Body() body: unknown): Promise<{ status: 'completed' }> {
    const { caller, request } = agentRequest(this.options.agents, authorization, CompleteKeyRequest, body);
    return answer(await completeKey(this.ledger, caller, request));
  }
}
