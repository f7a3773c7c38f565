import { Body, Controller, Headers, HttpCode, Inject, Param, Post, Res } from '@nestjs/common';
import { type ApprovalOptions } from '../approval-config.js';
import { authenticateReviewer } from '../auth/reviewer-auth.js';
import { type ApprovalEngine } from '../engine/approval-engine.js';
import { parseRequest } from '../http/parse-request.js';
import { APPROVAL_ENGINE, APPROVAL_OPTIONS } from '../tokens.js';
import { decideApproval, DecisionBody, type DecisionOutcome } from './decide-approval.js';

@Controller('v1/approvals')
export class DecideApprovalController {
  constructor(
    @Inject(APPROVAL_ENGINE) private readonly engine: ApprovalEngine,
    @Inject(APPROVAL_OPTIONS) private readonly options: ApprovalOptions,
  ) {}

  /** 200 decided; 202 a vote counted towards a quorum; 409 another decision or a cancellation came first; 410 expired; 422 edits fail the schema. */
  @Post(':approvalId/decision')
  @HttpCode(200)
  async decide(
    @Headers('authorization') authorization: string | undefined,
    @Param('approvalId') approvalId: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) response: { status(code: number): unknown },
  ): Promise<DecisionOutcome> {
    const reviewer = authenticateReviewer(authorization, this.options);
    const outcome = await decideApproval(this.engine, reviewer, approvalId, parseRequest(DecisionBody, body));
    if (outcome.status === 'pending') response.status(202);
    return outcome;
  }
}
