import { Controller, Get, Headers, Inject, Query } from '@nestjs/common';
import { DATA_SOURCE, SERVICE_CONFIG, type ServiceConfig } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { type ApprovalOptions } from '../approval-config.js';
import { authenticateReviewer } from '../auth/reviewer-auth.js';
import { parseRequest } from '../http/parse-request.js';
import { APPROVAL_OPTIONS } from '../tokens.js';
import { type ApprovalPage, listApprovals, ListQuery } from './list-approvals.js';

@Controller('v1/approvals')
export class ListApprovalsController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(APPROVAL_OPTIONS) private readonly options: ApprovalOptions,
  ) {}

  @Get()
  list(@Headers('authorization') authorization: string | undefined, @Query() query: unknown): Promise<ApprovalPage> {
    const reviewer = authenticateReviewer(authorization, this.options);
    return listApprovals(this.dataSource.manager, this.config.database.schema, reviewer, parseRequest(ListQuery, query));
  }
}
