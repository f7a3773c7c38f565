import { Controller, Get, Headers, Inject, Res } from '@nestjs/common';
import { admits, type ApprovalOptions } from '../approval-config.js';
import { authenticateReviewer } from '../auth/reviewer-auth.js';
import { type ApprovalChange, type ApprovalEngine } from '../engine/approval-engine.js';
import { APPROVAL_ENGINE, APPROVAL_OPTIONS } from '../tokens.js';

interface StreamResponse {
  status(code: number): StreamResponse;
  setHeader(name: string, value: string): void;
  flushHeaders(): void;
  write(chunk: string): boolean;
  end(): void;
  on(event: 'close', listener: () => void): void;
}

const HEARTBEAT_MS = 15_000;

/**
 * `GET /v1/approval-events`: server-sent events, one `approval` event per change the live fold
 * applies (a new request, a decision, an expiry, a cancellation) that the reviewer may see. It
 * carries ids and statuses only; the reviewer fetches the approval itself over REST.
 */
@Controller('v1/approval-events')
export class ApprovalEventsController {
  constructor(
    @Inject(APPROVAL_ENGINE) private readonly engine: ApprovalEngine,
    @Inject(APPROVAL_OPTIONS) private readonly options: ApprovalOptions,
  ) {}

  @Get()
  stream(@Headers('authorization') authorization: string | undefined, @Res() response: StreamResponse): void {
    const reviewer = authenticateReviewer(authorization, this.options);
    response.status(200);
    response.setHeader('content-type', 'text/event-stream; charset=utf-8');
    response.setHeader('cache-control', 'no-store');
    response.setHeader('x-accel-buffering', 'no');
    response.flushHeaders();
    const pending = this.engine.status().pending;
    response.write(`event: ready\ndata: ${JSON.stringify({ reviewer: reviewer.id, pending })}\n\n`);
    const unsubscribe = this.engine.subscribe((change: ApprovalChange) => {
      if (!admits(reviewer.tenants, change.tenant) || !admits(reviewer.connectors, change.connectorId)) return;
      response.write(`event: approval\nid: ${change.approvalId}:${change.type}\ndata: ${JSON.stringify(change)}\n\n`);
    });
    const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    response.on('close', () => {
      clearInterval(heartbeat);
      unsubscribe();
    });
  }
}
