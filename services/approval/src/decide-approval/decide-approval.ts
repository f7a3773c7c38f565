import { type Actor, ApprovalDecidedV2, createEvent, type JsonValue, JsonValueSchema, sealContent, sealingKeyFor } from '@gatehouse/contracts';
import { type Approval, isOwnRequest, type Verdict } from '@gatehouse/approvals';
import { activeTraceContext } from '@gatehouse/kafka';
import { continueTrace } from '@gatehouse/service-runtime';
import { z } from 'zod';
import { type Reviewer } from '../auth/reviewer-auth.js';
import { APPROVAL_SOURCE, type ApprovalEngine } from '../engine/approval-engine.js';
import { ApprovalError } from '../errors.js';
import { APPROVAL_ID, assertMayReview } from '../http/approval-view.js';
import { validateEdits } from './edit-validation.js';

/** Instrumentation scope of the approval service's spans (`approval.decide`). */
export const APPROVAL_TELEMETRY_SCOPE = '@gatehouse/approval-service';

/** The body of `POST /v1/approvals/{approvalId}/decision`. */
export const DecisionBody = z.discriminatedUnion('verdict', [
  z.strictObject({ verdict: z.literal('approve'), comment: z.string().max(2000).optional() }),
  z.strictObject({ verdict: z.literal('deny'), comment: z.string().max(2000).optional() }),
  z.strictObject({ verdict: z.literal('approve-with-edits'), editedArguments: JsonValueSchema, comment: z.string().max(2000).optional() }),
]);
export type DecisionBody = z.infer<typeof DecisionBody>;

/** What a decision answers with: the settled approval, or (under a quorum) the vote counted. */
export type DecisionOutcome =
  | {
      readonly approvalId: string;
      readonly status: 'approved' | 'approved-with-edits' | 'denied';
      readonly reviewer: Actor;
      readonly decidedAt: string;
      readonly editedArguments?: JsonValue;
    }
  | { readonly approvalId: string; readonly status: 'pending'; readonly votes: number; readonly required: number };

const quorumEditsRefused = () =>
  new ApprovalError('APPROVAL.EDITS_INVALID', { problems: [{ path: '/', keyword: 'quorum', message: 'an approval that needs a quorum cannot be edited' }] });

function refusalFor(status: Approval['status']): ApprovalError | undefined {
  switch (status) {
    case 'pending':
      return undefined;
    case 'expired':
      return new ApprovalError('APPROVAL.EXPIRED');
    case 'cancelled':
      return new ApprovalError('APPROVAL.CANCELLED');
    default:
      return new ApprovalError('APPROVAL.ALREADY_DECIDED', { status });
  }
}

function refusalForVerdict(verdict: Exclude<Verdict, { kind: 'accepted' }>, current: Approval | undefined): ApprovalError {
  if (verdict.kind === 'duplicate') return new ApprovalError('APPROVAL.INTERNAL');
  switch (verdict.reason) {
    case 'already-decided':
      return new ApprovalError('APPROVAL.ALREADY_DECIDED', current ? { status: current.status } : {});
    case 'expired':
    case 'past-deadline':
      return new ApprovalError('APPROVAL.EXPIRED');
    case 'cancelled':
      return new ApprovalError('APPROVAL.CANCELLED');
    case 'self-approval':
      return new ApprovalError('APPROVAL.SELF_APPROVAL');
    case 'unknown-approval':
      return new ApprovalError('APPROVAL.NOT_FOUND');
    case 'not-a-quorum-reviewer':
      return new ApprovalError('APPROVAL.FORBIDDEN', { quorum: true });
    case 'already-voted':
      return new ApprovalError('APPROVAL.ALREADY_VOTED');
    case 'edits-need-single-reviewer':
      return quorumEditsRefused();
    default:
      return new ApprovalError('APPROVAL.INVALID_REQUEST');
  }
}

/**
 * Decides one approval: checks what can be checked before writing (authorisation, self-approval,
 * edits against the tool's schema, an approval already settled), appends the decision, waits
 * until the fold has applied it, and answers with the fold's verdict on that very event: the log
 * order decides between reviewers racing, not this process.
 */
export async function decideApproval(engine: ApprovalEngine, reviewer: Reviewer, approvalId: string, body: DecisionBody): Promise<DecisionOutcome> {
  if (!APPROVAL_ID.test(approvalId)) throw new ApprovalError('APPROVAL.NOT_FOUND');
  const current = engine.approval(approvalId);
  if (!current) throw new ApprovalError('APPROVAL.NOT_FOUND');
  const { scope } = current.request;
  // Before any span joins the agent's trace: a caller who may not review it leaves none there.
  assertMayReview(reviewer, { tenant: scope.tenant, connectorId: scope.connectorId });
  // The decision continues the request's trace (the agent's approval wait), linked to this HTTP
  // request's span, so the agent's trace runs through the service and back. Ids and enums only.
  const attributes = { 'gatehouse.approval_id': approvalId, 'gatehouse.tenant': scope.tenant, 'gen_ai.tool.name': scope.connectorId, 'gatehouse.verdict': body.verdict };
  return continueTrace(APPROVAL_TELEMETRY_SCOPE, 'approval.decide', current.trace, attributes, () => decide(engine, reviewer, current, body));
}

async function decide(engine: ApprovalEngine, reviewer: Reviewer, current: Approval, body: DecisionBody): Promise<DecisionOutcome> {
  const approvalId = current.approvalId;
  const { scope, inputSchema } = current.request;
  if (isOwnRequest(current.request, reviewer.id)) throw new ApprovalError('APPROVAL.SELF_APPROVAL');
  const quorum = current.request.quorum;
  if (quorum && !quorum.reviewers.includes(reviewer.id)) throw new ApprovalError('APPROVAL.FORBIDDEN', { quorum: true });
  if (quorum && body.verdict === 'approve-with-edits') throw quorumEditsRefused();
  if (quorum && current.votes.some((v) => v.reviewer.id === reviewer.id)) throw new ApprovalError('APPROVAL.ALREADY_VOTED');
  if (body.verdict === 'approve-with-edits') validateEdits(inputSchema, body.editedArguments);
  const settled = refusalFor(current.status);
  if (settled) throw settled;

  const actor: Actor = { id: reviewer.id, role: reviewer.role, kind: 'human' };
  // What the reviewer said of the call is sealed with the tenant's content key, like the request it answers.
  const content = { ...(body.comment !== undefined && { comment: body.comment }), ...(body.verdict === 'approve-with-edits' && { editedArguments: body.editedArguments }) };
  const contentKey = sealingKeyFor(engine.contentKeys, scope.tenant);
  // The span this decision is taken in (with the SDK off: the request's own trace, carried on).
  const trace = activeTraceContext() ?? current.trace;
  const event = createEvent(
    ApprovalDecidedV2,
    {
      source: APPROVAL_SOURCE,
      tenant: scope.tenant,
      subject: approvalId,
      causationId: current.requestEventId,
      ...(current.correlationId !== undefined && { correlationId: current.correlationId }),
      ...(trace !== undefined && { trace }),
    },
    {
      approvalId,
      verdict: body.verdict,
      reviewer: actor,
      // A grant is for a while: the agent must use it before this (judged by the log time of its use).
      ...(body.verdict !== 'deny' && { useBy: new Date(Date.now() + engine.grantTtlMs).toISOString() }),
      ...(contentKey ? { sealed: sealContent(content, contentKey, { type: 'ApprovalDecided', approvalId, tenant: scope.tenant }) } : content),
    },
  );
  const verdict = await engine.decide(event);
  const after = engine.approval(approvalId);
  if (verdict.kind !== 'accepted') throw refusalForVerdict(verdict, after);
  // The vote counted; the quorum is not complete. (Later events may have settled it since: the answer is about this vote.)
  if (quorum && after && (after.status === 'pending' || after.votes.length < quorum.required) && body.verdict === 'approve') {
    return { approvalId, status: 'pending', votes: after.votes.length, required: quorum.required };
  }
  if (!after || after.status === 'pending' || after.status === 'expired' || after.status === 'cancelled') throw new ApprovalError('APPROVAL.INTERNAL');
  return {
    approvalId,
    status: after.status,
    reviewer: after.reviewer,
    decidedAt: new Date(after.decidedAt).toISOString(),
    ...(after.status === 'approved-with-edits' && { editedArguments: after.editedArguments }),
  };
}
