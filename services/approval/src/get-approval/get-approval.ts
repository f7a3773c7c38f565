import { schemaIdent } from '@gatehouse/service-runtime';
import { type EntityManager } from 'typeorm';
import { type Reviewer } from '../auth/reviewer-auth.js';
import { ApprovalError } from '../errors.js';
import { APPROVAL_ID, type ApprovalRow, type ApprovalView, assertMayReview, VIEW_COLUMNS, viewOf } from '../http/approval-view.js';

/** One approval with its full history (every event about it, applied or rejected), from the projection. */
export async function getApproval(manager: EntityManager, schema: string, reviewer: Reviewer, approvalId: string): Promise<ApprovalView> {
  if (!APPROVAL_ID.test(approvalId)) throw new ApprovalError('APPROVAL.NOT_FOUND');
  const rows: ApprovalRow[] = await manager.query(`SELECT ${VIEW_COLUMNS}, history FROM ${schemaIdent(schema)}.approvals WHERE approval_id = $1`, [approvalId]);
  const row = rows[0];
  if (!row) throw new ApprovalError('APPROVAL.NOT_FOUND');
  assertMayReview(reviewer, { tenant: row.tenant, connectorId: row.connector_id });
  return viewOf(row);
}
