import { Controller, Get, Headers, Inject, Param, Query } from '@nestjs/common';
import { DATA_SOURCE, type ServiceConfig, SERVICE_CONFIG } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { answer } from '../errors.js';
import { agentRequest } from '../http/agent-request.js';
import { parseRequest } from '../http/parse-request.js';
import { type LedgerOptions } from '../ledger-config.js';
import { LEDGER_OPTIONS } from '../tokens.js';
import { KeyParams, KeyQuery, type KeyView, readKey } from './get-key.js';

@Controller('v1/idempotency/keys')
export class GetKeyController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(LEDGER_OPTIONS) private readonly options: LedgerOptions,
  ) {}

  /** Agents: 200 the caller's key of its tenant as the projection has it | 404 LEDGER.KEY_NOT_FOUND; 401, 403 another tenant. */
  @Get(':key')
  async get(@Headers('authorization') authorization: string | undefined, @Param('key') key: string, @Query() query: unknown): Promise<KeyView> {
    const { caller } = agentRequest(this.options.agents, authorization, KeyQuery, query);
    const params = parseRequest(KeyParams, { key });
    return answer(await readKey(this.dataSource.manager, this.config.database.schema, caller, params.key));
  }
}
