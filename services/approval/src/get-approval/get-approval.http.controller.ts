import { Controller, Get, Headers, Inject, Param } from '@nestjs/common';
import { DATA_SOURCE, SERVICE_CONFIG, type ServiceConfig } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { type ApprovalOptions } from '../approval-config.js';
import { authenticateReviewer } from '../auth/reviewer-auth.js';
import { type ApprovalView } from '../http/approval-view.js';
import { APPROVAL_OPTIONS } from '../tokens.js';
import { getApproval } from './get-approval.js';

@Controller('v1/approvals')
export class GetApprovalController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(APPROVAL_OPTIONS) private readonly options: ApprovalOptions,
  ) {}

  @Get(':approvalId')
  get(@Headers('authorization') authorization: string | undefined, @Param('approvalId') approvalId: string): Promise<ApprovalView> {
    const reviewer = authenticateReviewer(authorization, this.options);
    return getApproval(this.dataSource.manager, this.config.database.schema, reviewer, approvalId);
  }
}
