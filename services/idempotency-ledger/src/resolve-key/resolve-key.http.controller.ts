import { Body, Controller, Headers, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { type LedgerPort } from '../engine/ledger-port.js';
import { answer } from '../errors.js';
import { KeyParams } from '../get-key/get-key.js';
import { parseRequest } from '../http/parse-request.js';
import { type LedgerOptions } from '../ledger-config.js';
import { LEDGER_ENGINE, LEDGER_OPTIONS } from '../tokens.js';
import { authenticateOperator } from './operator-auth.js';
import { resolveKey, type ResolveKeyAnswer, ResolveKeyRequest } from './resolve-key.js';

@Controller('v1/idempotency/keys')
export class ResolveKeyController {
  constructor(
    @Inject(LEDGER_ENGINE) private readonly ledger: LedgerPort,
    @Inject(LEDGER_OPTIONS) private readonly options: LedgerOptions,
  ) {}

  /** Operator only: 200 resolved | 401 | 409 LEDGER.NOT_AMBIGUOUS. Authentication comes before anything else. */
  @Post(':key/resolution')
  @HttpCode(200)
  async resolve(@Param('key') key: string, @Headers('authorization') authorization: string | undefined, @Body() body: unknown): Promise<ResolveKeyAnswer> {
    const operator = authenticateOperator(authorization, this.options.operators);
    const params = parseRequest(KeyParams, { key });
    return answer(await resolveKey(this.ledger, params.key, parseRequest(ResolveKeyRequest, body), operator));
  }
}
