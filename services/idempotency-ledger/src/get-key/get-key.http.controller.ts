import { Controller, Get, Inject, Param } from '@nestjs/common';
import { DATA_SOURCE, type ServiceConfig, SERVICE_CONFIG } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { answer } from '../errors.js';
import { parseRequest } from '../http/parse-request.js';
import { KeyParams, type KeyView, readKey } from './get-key.js';

@Controller('v1/idempotency/keys')
export class GetKeyController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
  ) {}

  /** 200 the key as the projection has it | 404 LEDGER.KEY_NOT_FOUND. */
  @Get(':key')
  async get(@Param('key') key: string): Promise<KeyView> {
    const params = parseRequest(KeyParams, { key });
    return answer(await readKey(this.dataSource.manager, this.config.database.schema, params.key));
  }
}
