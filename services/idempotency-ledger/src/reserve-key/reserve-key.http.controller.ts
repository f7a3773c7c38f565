import { Body, Controller, Headers, HttpCode, Inject, Post } from '@nestjs/common';
import { type Clock, type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { agentRequest } from '../http/agent-request.js';
import { type LedgerOptions } from '../ledger-config.js';
import { LEDGER_CLOCK, LEDGER_ENGINE, LEDGER_OPTIONS } from '../tokens.js';
import { reserveKey, type ReserveKeyAnswer, ReserveKeyRequest } from './reserve-key.js';

@Controller('v1/idempotency/reservations')
export class ReserveKeyController {
  constructor(
    @Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort,
    @Inject(LEDGER_CLOCK) private readonly clock: Clock,
    @Inject(LEDGER_OPTIONS) private readonly options: LedgerOptions,
  ) {}

  /** Agents: 200 reserved | completed | pending | ambiguous; 401, 403 another tenant, 429 LEDGER.PENDING_LIMIT. */
  @Post()
  @HttpCode(200)
  async reserve(@Headers('authorization') authorization: string | undefined, @Body() body: unknown): Promise<ReserveKeyAnswer> {
    const { caller, request } = agentRequest(this.options.agents, authorization, ReserveKeyRequest, body);
    return answer(await reserveKey(this.ledger, caller, request, { clock: this.clock, maxPendingKeys: this.options.maxPendingKeys }));
  }
}
