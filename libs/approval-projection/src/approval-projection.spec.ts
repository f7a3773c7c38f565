import { describe, expect, it } from '@jest/globals';
import { ApprovalDecidedV1, createEvent, signEvent } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { testRequest } from '@gatehouse/approvals/testing';
import { approvalProjection } from './approval-projection.js';

const APPROVAL_PROJECTION = approvalProjection(TEST_KEYRING);

const table = APPROVAL_PROJECTION.tables[0];
if (!table) throw new Error('the approval projection has a table');
// testRequest sets its deadline a minute from now: the log times must come before it.
const T0 = Date.now();
const alice = { id: 'user:alice', role: 'approver', kind: 'human' as const };
const touch = { partition: 2, offset: 41n };

function applied() {
  const state = APPROVAL_PROJECTION.fold.create();
  const made = testRequest({ dryRunPreview: null, toolDescription: 'Refunds an order' });
  APPROVAL_PROJECTION.fold.apply(state, made.event, T0);
  return { state, made };
}

describe('the approval projection row', () => {
  it('is the pending request as the fold holds it, with history and where it was last touched', () => {
    const { state, made } = applied();
    expect(table.touched({ event: made.event } as never)).toEqual([made.approvalId]);
    expect(table.row(state, made.approvalId, touch)).toMatchObject({
      approval_id: made.approvalId,
      status: 'pending',
      tenant: 'acme',
      connector_id: 'payments.refund',
      requester_id: 'agent:billing',
      // Boxed: a JSON null preview stays distinct from "no preview" on its way into SQL.
      arguments: { v: made.event.payload.arguments },
      dry_run_preview: { v: null },
      tool_description: 'Refunds an order',
      requested_at: T0,
      settled_at: null,
      votes: [],
      quorum: null,
      history: [{ type: 'ApprovalRequested', at: new Date(T0).toISOString(), verdict: { kind: 'accepted' } }],
      partition: 2,
      last_offset: '41',
    });
  });

  it('shows a decision with edits, its reviewer and comment, and a rejected later decision in the history', () => {
    const { state, made } = applied();
    const meta = { source: 'service:approval', tenant: 'acme', subject: made.approvalId };
    APPROVAL_PROJECTION.fold.apply(state, signEvent(createEvent(ApprovalDecidedV1, meta, { approvalId: made.approvalId, verdict: 'approve-with-edits', reviewer: alice, editedArguments: { amount: 1 }, comment: 'less' }), TEST_KEYS.approval), T0 + 5);
    APPROVAL_PROJECTION.fold.apply(state, signEvent(createEvent(ApprovalDecidedV1, meta, { approvalId: made.approvalId, verdict: 'deny', reviewer: { ...alice, id: 'user:bob' } }), TEST_KEYS.approval), T0 + 6);
    const row = table.row(state, made.approvalId, touch);
    expect(row).toMatchObject({ status: 'approved-with-edits', settled_at: T0 + 5, settled_by: alice, comment: 'less', edited_arguments: { v: { amount: 1 } } });
    expect((row as { history: { verdict: unknown }[] }).history.map((h) => h.verdict)).toEqual([{ kind: 'accepted' }, { kind: 'accepted' }, { kind: 'rejected', reason: 'already-decided' }]);
  });

  it('has no row for an id the fold never saw requested', () => {
    const { state } = applied();
    expect(table.row(state, `appr_${'0'.repeat(64)}`, touch)).toBeUndefined();
  });
});
