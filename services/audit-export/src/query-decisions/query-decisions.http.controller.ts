import { Controller, Get, Headers, Inject, Query } from '@nestjs/common';
import { DATA_SOURCE, type ServiceConfig, SERVICE_CONFIG } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { answer } from '../errors.js';
import { type ExportOptions } from '../export-config.js';
import { parseRequest } from '../http/parse-request.js';
import { authenticate, logRead, tenantScope } from '../http/reader-auth.js';
import { EXPORT_OPTIONS } from '../tokens.js';
import { type DecisionPage, DecisionQuerySchema, queryDecisions } from './query-decisions.js';

@Controller('v1/decisions')
export class QueryDecisionsController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(EXPORT_OPTIONS) private readonly options: ExportOptions,
  ) {}

  /**
   * 200 a page of the reader's tenants' decisions, newest first | 400 AUDIT.INVALID_REQUEST naming
   * the parameters | 401 without a reader's API key | 403 AUDIT.FORBIDDEN for a `tenant` the reader may not read.
   */
  @Get()
  async list(@Headers('authorization') authorization: string | undefined, @Query() raw: Record<string, unknown>): Promise<DecisionPage> {
    const reader = authenticate(authorization, this.options.readers ?? []);
    const page = answer(await queryDecisions(this.dataSource.manager, this.config.database.schema, parseRequest(DecisionQuerySchema, raw), tenantScope(reader)));
    logRead(reader, 'decisions', page.items.length);
    return page;
  }
}
