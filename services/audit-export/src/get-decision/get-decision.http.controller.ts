import { Controller, Get, Headers, Inject, Param } from '@nestjs/common';
import { DATA_SOURCE, type ServiceConfig, SERVICE_CONFIG } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { answer } from '../errors.js';
import { type ExportOptions } from '../export-config.js';
import { parseRequest } from '../http/parse-request.js';
import { authenticate, logRead, tenantScope } from '../http/reader-auth.js';
import { type DecisionView } from '../query-decisions/decision-view.js';
import { EXPORT_OPTIONS } from '../tokens.js';
import { DecisionIdParams, readDecision } from './get-decision.js';

@Controller('v1/decisions')
export class GetDecisionController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(EXPORT_OPTIONS) private readonly options: ExportOptions,
  ) {}

  /**
   * 200 the decision | 400 bad id | 401 without a reader's API key | 404 AUDIT.DECISION_NOT_FOUND,
   * also for another tenant's decision (its existence is not disclosed).
   */
  @Get(':id')
  async get(@Headers('authorization') authorization: string | undefined, @Param('id') id: string): Promise<DecisionView> {
    const reader = authenticate(authorization, this.options.readers ?? []);
    const params = parseRequest(DecisionIdParams, { id });
    const decision = answer(await readDecision(this.dataSource.manager, this.config.database.schema, params.id, tenantScope(reader)));
    logRead(reader, 'decision', 1);
    return decision;
  }
}
