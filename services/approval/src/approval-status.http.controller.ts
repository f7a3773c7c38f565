import { Controller, Get, Inject } from '@nestjs/common';
import { type ApprovalEngine, type ApprovalStatusReport } from './engine/approval-engine.js';
import { APPROVAL_ENGINE } from './tokens.js';

/** `GET /v1/approvals-status`: the fold's phase, offsets and counts (no approval content). */
@Controller('v1/approvals-status')
export class ApprovalStatusController {
  constructor(@Inject(APPROVAL_ENGINE) private readonly engine: ApprovalEngine) {}

  @Get()
  status(): ApprovalStatusReport {
    return this.engine.status();
  }
}
