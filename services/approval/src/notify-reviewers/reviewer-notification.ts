import { type Approval, type ApprovalEvent, type Verdict } from '@gatehouse/approvals';
import { type CommittedChange } from '../engine/approval-engine.js';

/** What reviewers are told about: a new request, a decision that settled one, an expiry. */
export type NotificationKind = 'requested' | 'decided' | 'expired';

/**
 * One notification, as every body is built from it: identifiers, statuses and times only. The
 * request's arguments, its reason, a reviewer's comment or edits never enter it: a webhook leaves
 * the trust boundary.
 */
export interface ReviewerNotification {
  readonly kind: NotificationKind;
  /** The id of the log event that caused it: with the approval id, what a delivery is unique by. */
  readonly eventId: string;
  readonly approvalId: string;
  readonly tenant: string;
  readonly connectorId: string;
  readonly status: Approval['status'];
  /** ISO time. */
  readonly deadline: string;
  /** The reviewer whose decision settled it (decided only). */
  readonly decidedBy?: string;
  /** The event's log append time, ISO. */
  readonly time: string;
}

/** Stands in for an identifier that is not a plain name (agents write connector ids: text must not ride along). */
export const WITHHELD = '(withheld)';
/** A plain identifier: what tenant ids must be in the webhook configuration, and what bodies carry as is. */
export const PLAIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/;

/** `name` when it is a plain identifier (no spaces or markup, at most 128 characters), else `WITHHELD`. */
export const plainName = (name: string): string => (PLAIN_NAME.test(name) ? name : WITHHELD);

const DECIDED: ReadonlySet<Approval['status']> = new Set(['approved', 'approved-with-edits', 'denied']);

/** Which notification an applied event makes, judged by its verdict and the approval it left. */
function kindOf(type: ApprovalEvent['type'], verdict: Verdict, approval: Approval): NotificationKind | undefined {
  switch (type) {
    case 'ApprovalRequested':
      // A retried request (`duplicate`) is about the approval already announced.
      return verdict.kind === 'accepted' && approval.status === 'pending' ? 'requested' : undefined;
    case 'ApprovalDecided':
      // A decision logged past the deadline expires the approval instead (the fold's `past-deadline`).
      if (verdict.kind === 'rejected') return verdict.reason === 'past-deadline' && approval.status === 'expired' ? 'expired' : undefined;
      // Accepted but still pending: a vote counted under a quorum, not yet a decision.
      return DECIDED.has(approval.status) ? 'decided' : undefined;
    case 'ApprovalExpired':
      return verdict.kind === 'accepted' && approval.status === 'expired' ? 'expired' : undefined;
    case 'ApprovalCancelled':
    case 'ApprovalUsed':
      return undefined;
    default: {
      const exhaustive: never = type;
      return exhaustive;
    }
  }
}

/** The notification a committed live change makes, or undefined when it is none of reviewers' business. */
export function notificationOf(change: CommittedChange): ReviewerNotification | undefined {
  const { record, verdict, approval } = change;
  const kind = kindOf(record.event.type, verdict, approval);
  if (!kind) return undefined;
  const decidedBy = kind === 'decided' && 'reviewer' in approval ? plainName(approval.reviewer.id) : undefined;
  return {
    kind,
    eventId: plainName(record.event.id),
    approvalId: approval.approvalId,
    tenant: plainName(approval.request.scope.tenant),
    connectorId: plainName(approval.request.scope.connectorId),
    status: approval.status,
    deadline: new Date(approval.deadline).toISOString(),
    ...(decidedBy !== undefined && { decidedBy }),
    time: record.logTime.toISOString(),
  };
}
