import { Controller, Get, Inject } from '@nestjs/common';
import { type ApprovalEngine, type ApprovalStatusReport } from './engine/approval-engine.js';
import { REVIEWER_NOTIFIER, type ReviewerNotifier, type WebhookCounts } from './notify-reviewers/reviewer-notifier.js';
import { APPROVAL_ENGINE } from './tokens.js';

/** `GET /v1/approvals-status`: the fold's phase, offsets and counts (no approval content). */
@Controller('v1/approvals-status')
export class ApprovalStatusController {
  constructor(
    @Inject(APPROVAL_ENGINE) private readonly engine: ApprovalEngine,
    @Inject(REVIEWER_NOTIFIER) private readonly notifier: ReviewerNotifier,
  ) {}

  @Get()
  status(): ApprovalStatusReport & { readonly webhooks: WebhookCounts } {
    return { ...this.engine.status(), webhooks: this.notifier.counts() };
  }
}
