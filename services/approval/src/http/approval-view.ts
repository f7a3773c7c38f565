import { type Actor, type JsonValue } from '@gatehouse/contracts';
import { type StoredHistoryEntry } from '@gatehouse/approval-projection';
import { admits } from '../approval-config.js';
import { type Reviewer } from '../auth/reviewer-auth.js';
import { ApprovalError } from '../errors.js';

/** An approval as the REST API shows it to a reviewer. */
export interface ApprovalView {
  readonly approvalId: string;
  readonly status: 'pending' | 'approved' | 'approved-with-edits' | 'denied' | 'expired' | 'cancelled';
  readonly tenant: string;
  readonly connectorId: string;
  readonly executionId: string;
  readonly requester: Actor;
  readonly reason: string;
  /** The arguments as the requester recorded them (already redacted where policy says so). */
  readonly arguments: JsonValue;
  readonly redactedPaths: readonly string[];
  readonly inputSchema?: Record<string, JsonValue>;
  readonly toolDescription?: string;
  readonly dryRunPreview?: JsonValue;
  readonly requestedAt: string;
  readonly deadline: string;
  readonly settledAt?: string;
  readonly settledBy?: Actor;
  readonly comment?: string;
  readonly editedArguments?: JsonValue;
  readonly expiryCause?: string;
  /** Under a quorum: `required` approvals of the listed reviewers settle it. */
  readonly quorum?: { readonly required: number; readonly reviewers: readonly string[] };
  /** Approvals counted towards the quorum so far. */
  readonly votes: readonly { readonly reviewer: Actor; readonly at: string; readonly comment?: string }[];
  readonly history?: readonly StoredHistoryEntry[];
}

/** The projection columns a view is made of. */
export const VIEW_COLUMNS = `approval_id, status, tenant, connector_id, execution_id, requester, reason, arguments, redacted_paths,
  input_schema, tool_description, dry_run_preview, requested_at, deadline, settled_at, settled_by, comment, edited_arguments,
  expiry_cause, quorum, votes`;

export interface ApprovalRow {
  approval_id: string;
  status: ApprovalView['status'];
  tenant: string;
  connector_id: string;
  execution_id: string;
  requester: Actor;
  reason: string;
  arguments: JsonValue;
  redacted_paths: string[];
  input_schema: Record<string, JsonValue> | null;
  tool_description: string | null;
  dry_run_preview: JsonValue | null;
  requested_at: Date;
  deadline: Date;
  settled_at: Date | null;
  settled_by: Actor | null;
  comment: string | null;
  edited_arguments: JsonValue | null;
  expiry_cause: string | null;
  quorum: { required: number; reviewers: string[] } | null;
  votes: { reviewer: Actor; at: string; comment?: string }[];
  history?: StoredHistoryEntry[];
}

/** Maps a projection row to its view (pg reads a JSON-null preview as no preview). */
export function viewOf(row: ApprovalRow): ApprovalView {
  return {
    approvalId: row.approval_id,
    status: row.status,
    tenant: row.tenant,
    connectorId: row.connector_id,
    executionId: row.execution_id,
    requester: row.requester,
    reason: row.reason,
    arguments: row.arguments,
    redactedPaths: row.redacted_paths,
    ...(row.input_schema !== null && { inputSchema: row.input_schema }),
    ...(row.tool_description !== null && { toolDescription: row.tool_description }),
    ...(row.dry_run_preview !== null && { dryRunPreview: row.dry_run_preview }),
    requestedAt: row.requested_at.toISOString(),
    deadline: row.deadline.toISOString(),
    ...(row.settled_at !== null && { settledAt: row.settled_at.toISOString() }),
    ...(row.settled_by !== null && { settledBy: row.settled_by }),
    ...(row.comment !== null && { comment: row.comment }),
    ...(row.edited_arguments !== null && { editedArguments: row.edited_arguments }),
    ...(row.expiry_cause !== null && { expiryCause: row.expiry_cause }),
    ...(row.quorum !== null && { quorum: row.quorum }),
    votes: row.votes,
    ...(row.history !== undefined && { history: row.history }),
  };
}

/** Refuses (403) a reviewer who may not see or decide approvals of this tenant and connector. */
export function assertMayReview(reviewer: Reviewer, scope: { tenant: string; connectorId: string }): void {
  if (!admits(reviewer.tenants, scope.tenant) || !admits(reviewer.connectors, scope.connectorId)) throw new ApprovalError('APPROVAL.FORBIDDEN');
}

/** An approval id as the API accepts it. */
export const APPROVAL_ID = /^appr_[0-9a-f]{64}$/;
