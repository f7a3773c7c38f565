import { Controller, Get, Inject, Query } from '@nestjs/common';
import { DATA_SOURCE, type ServiceConfig, SERVICE_CONFIG } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { parseRequest } from '../http/parse-request.js';
import { type DecisionPage, DecisionQuerySchema, queryDecisions } from './query-decisions.js';

@Controller('v1/decisions')
export class QueryDecisionsController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
  ) {}

  /** 200 a page of decisions, newest first | 400 AUDIT.INVALID_REQUEST naming the parameters. */
  @Get()
  async list(@Query() raw: Record<string, unknown>): Promise<DecisionPage> {
    return queryDecisions(this.dataSource.manager, this.config.database.schema, parseRequest(DecisionQuerySchema, raw));
  }
}
