import { Body, Controller, Headers, HttpCode, Inject, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { agentRequest } from '../http/agent-request.js';
import { type LedgerOptions } from '../ledger-config.js';
import { LEDGER_ENGINE, LEDGER_OPTIONS } from '../tokens.js';
import { reconcileKey, type ReconcileKeyAnswer, ReconcileKeyRequest } from './reconcile-key.js';

@Controller('v1/idempotency/reconciliations')
export class ReconcileKeyController {
  constructor(
    @Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort,
    @Inject(LEDGER_OPTIONS) private readonly options: LedgerOptions,
  ) {}

  /** Agents: 200 completed | reserved | 409 LEDGER.LEASE_LOST, LEDGER.NOT_AMBIGUOUS, ...; 401, 403 another tenant. */
  @Post()
  @HttpCode(200)
  async reconcile(@Headers('authorization') authorization: string | undefined, @Body() body: unknown): Promise<ReconcileKeyAnswer> {
    const { caller, request } = agentRequest(this.options.agents, authorization, ReconcileKeyRequest, body);
    return answer(await reconcileKey(this.ledger, caller, request));
  }
}
