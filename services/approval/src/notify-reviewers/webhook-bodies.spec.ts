import { describe, expect, it } from '@jest/globals';
import { type ApprovalEvent, applyApprovalEvent, createApprovalsState } from '@gatehouse/approvals';
import { testCancel, testRequest, type TestRequestOptions } from '@gatehouse/approvals/testing';
import { ApprovalDecidedV2, ApprovalExpiredV1, createEvent, type JsonValue, signEvent } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { type CommittedChange } from '../engine/approval-engine.js';
import { notificationOf, type ReviewerNotification, WITHHELD } from './reviewer-notification.js';
import { inboxLink, slackBody, webhookBody } from './webhook-bodies.js';

const INBOX = 'https://approvals.example.com';
// Content an agent or a reviewer wrote: none of it may leave in a webhook.
const CANARY = 'CANARY-7f3a';
const rita = { id: 'user:rita', role: 'approver', kind: 'human' as const };
const sam = { id: 'user:sam', role: 'approver', kind: 'human' as const };

/** A fold of its own per test, and what applying each event to it tells the notifier. */
function world() {
  const state = createApprovalsState(TEST_KEYRING);
  let offset = 0;
  const apply = (event: ApprovalEvent, logTime = Date.now()): CommittedChange => {
    const verdict = applyApprovalEvent(state, event, logTime);
    const approval = state.approvals.get(event.payload.approvalId);
    if (!approval) throw new Error('the test applied an event about no approval');
    const record = { topic: 'gatehouse.approvals.v1', partition: 0, offset: String(offset++), logTime: new Date(logTime), key: approval.approvalId, event };
    return { record, verdict, approval };
  };
  const request = (options: TestRequestOptions = {}) => {
    const made = testRequest({ arguments: { orderId: CANARY, amount: 42 }, reason: `because ${CANARY}`, toolDescription: `tool ${CANARY}`, dryRunPreview: { note: CANARY }, ...options });
    return { ...made, change: apply(made.event) };
  };
  return { apply, request };
}

function decision(approvalId: string, requestEventId: string, verdict: 'approve' | 'approve-with-edits' | 'deny', options: { reviewer?: typeof rita; comment?: string; editedArguments?: JsonValue } = {}) {
  const payload = { approvalId, verdict, reviewer: options.reviewer ?? rita, ...(options.comment !== undefined && { comment: options.comment }), ...(options.editedArguments !== undefined && { editedArguments: options.editedArguments }) };
  return signEvent(createEvent(ApprovalDecidedV2, { source: 'service:approval', tenant: 'acme', subject: approvalId, causationId: requestEventId }, payload), TEST_KEYS.approval);
}

const expiry = (approvalId: string, requestEventId: string) =>
  signEvent(createEvent(ApprovalExpiredV1, { source: 'service:approval', tenant: 'acme', subject: approvalId, causationId: requestEventId }, { approvalId, deadline: new Date().toISOString() }), TEST_KEYS.approval);

const bodies = (n: ReviewerNotification) => [webhookBody(n, 'json', INBOX), webhookBody(n, 'slack', INBOX)];

describe('what a change notifies', () => {
  it('a request: approval.requested with ids, status, deadline, log time and the inbox link, and no content', () => {
    const { request } = world();
    const made = request();
    const n = notificationOf(made.change) as ReviewerNotification;
    expect(JSON.parse(webhookBody(n, 'json', INBOX))).toEqual({
      version: 1,
      type: 'approval.requested',
      eventId: made.event.id,
      approvalId: made.approvalId,
      tenant: 'acme',
      connectorId: 'payments.refund',
      status: 'pending',
      deadline: made.event.payload.deadline,
      decidedBy: null,
      time: made.change.record.logTime.toISOString(),
      link: `${INBOX}/inbox#approval=${made.approvalId}`,
    });
    for (const body of bodies(n)) expect(body).not.toContain(CANARY);
  });

  it('an edit-and-approve: approval.decided naming the reviewer, without the edits, the comment or the request content', () => {
    const { apply, request } = world();
    const made = request();
    const change = apply(decision(made.approvalId, made.event.id, 'approve-with-edits', { comment: `ok ${CANARY}`, editedArguments: { orderId: CANARY, amount: 1 } }));
    const n = notificationOf(change) as ReviewerNotification;
    expect(n).toMatchObject({ kind: 'decided', status: 'approved-with-edits', decidedBy: 'user:rita', eventId: change.record.event.id });
    for (const body of bodies(n)) {
      expect(body).not.toContain(CANARY);
      expect(body).not.toMatch(/arguments|comment|reason|preview/i);
    }
  });

  it('a denial is decided; under a quorum a vote below it is nothing yet, and the vote that completes it is decided', () => {
    const { apply, request } = world();
    const denied = request();
    expect(notificationOf(apply(decision(denied.approvalId, denied.event.id, 'deny')))).toMatchObject({ kind: 'decided', status: 'denied' });
    const quorum = request({ quorum: { required: 2, reviewers: ['user:rita', 'user:sam'] } });
    expect(notificationOf(apply(decision(quorum.approvalId, quorum.event.id, 'approve')))).toBeUndefined();
    expect(notificationOf(apply(decision(quorum.approvalId, quorum.event.id, 'approve', { reviewer: sam })))).toMatchObject({ kind: 'decided', status: 'approved', decidedBy: 'user:sam' });
  });

  it('an expiry, and a decision logged past the deadline, are approval.expired', () => {
    const { apply, request } = world();
    const swept = request({ deadlineMs: 1_000 });
    expect(notificationOf(apply(expiry(swept.approvalId, swept.event.id), Date.now() + 5_000))).toMatchObject({ kind: 'expired', status: 'expired' });
    const late = request({ deadlineMs: 1_000 });
    expect(notificationOf(apply(decision(late.approvalId, late.event.id, 'approve'), Date.now() + 5_000))).toMatchObject({ kind: 'expired', status: 'expired' });
  });

  it('a retried request, a second decision, a cancellation and an early expiry notify nothing', () => {
    const { apply, request } = world();
    const made = request();
    expect(notificationOf(apply(made.event))).toBeUndefined();
    expect(notificationOf(apply(expiry(made.approvalId, made.event.id)))).toBeUndefined();
    apply(decision(made.approvalId, made.event.id, 'deny'));
    expect(notificationOf(apply(decision(made.approvalId, made.event.id, 'approve', { reviewer: sam })))).toBeUndefined();
    const cancelled = request();
    expect(notificationOf(apply(testCancel(cancelled.approvalId)))).toBeUndefined();
  });

  it('a decision the approval service did not sign (an agent forging its own grant) notifies nothing', () => {
    const { apply, request } = world();
    const made = request();
    const signed = decision(made.approvalId, made.event.id, 'approve');
    const { signature: _dropped, ...forged } = signed;
    const change = apply(forged as ApprovalEvent);
    expect(change.verdict).toMatchObject({ kind: 'rejected', reason: 'untrusted-signature' });
    expect(notificationOf(change)).toBeUndefined();
  });

  it('withholds a connector id that carries text or markup instead of a name', () => {
    const { request } = world();
    const made = request({ connectorId: `<https://evil.example|${CANARY} click>` });
    const n = notificationOf(made.change) as ReviewerNotification;
    expect(n.connectorId).toBe(WITHHELD);
    for (const body of bodies(n)) expect(body).not.toMatch(/evil|CANARY/);
  });
});

describe('the Slack body', () => {
  const notification: ReviewerNotification = {
    kind: 'requested',
    eventId: 'e-1',
    approvalId: `appr_${'b'.repeat(64)}`,
    tenant: 'acme',
    connectorId: '<!channel> & co',
    status: 'pending',
    deadline: '2026-01-15T12:00:00.000Z',
    time: '2026-01-15T11:00:00.000Z',
  };

  it('has a text fallback and blocks with a button to the approval in the inbox', () => {
    const body = slackBody(notification, INBOX);
    expect(body.text).toContain('Approval requested');
    expect(body.blocks).toContainEqual({
      type: 'actions',
      elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in the inbox' }, url: inboxLink(INBOX, notification.approvalId) }],
    });
  });

  it("escapes Slack's control characters, so a name cannot mention a channel or make a link", () => {
    const text = JSON.stringify(slackBody(notification, INBOX));
    expect(text).toContain('&lt;!channel&gt; &amp; co');
    expect(text).not.toContain('<!channel>');
  });
});
