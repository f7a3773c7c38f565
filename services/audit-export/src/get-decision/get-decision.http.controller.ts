import { Controller, Get, Inject, Param } from '@nestjs/common';
import { DATA_SOURCE, type ServiceConfig, SERVICE_CONFIG } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { answer } from '../errors.js';
import { parseRequest } from '../http/parse-request.js';
import { type DecisionView } from '../query-decisions/decision-view.js';
import { DecisionIdParams, readDecision } from './get-decision.js';

@Controller('v1/decisions')
export class GetDecisionController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
  ) {}

  /** 200 the decision | 400 bad id | 404 AUDIT.DECISION_NOT_FOUND. */
  @Get(':id')
  async get(@Param('id') id: string): Promise<DecisionView> {
    const params = parseRequest(DecisionIdParams, { id });
    return answer(await readDecision(this.dataSource.manager, this.config.database.schema, params.id));
  }
}
