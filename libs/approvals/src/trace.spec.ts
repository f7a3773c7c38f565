import { describe, expect, it } from '@jest/globals';
import { ApprovalDecidedV1, ApprovalRequestedV2, createEvent, signClaim, signEvent } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { applyApprovalEvent } from './fold.js';
import { createApprovalsState } from './state.js';
import { testRequest } from './testing/index.js';

const REQUEST_TRACE = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
const DECISION_TRACE = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01' };

/** A signed request whose envelope carries the agent's trace context. */
function tracedRequest() {
  const { event, approvalId } = testRequest({ unsigned: true });
  const { id: _id, time: _time, signature: _signature, type: _type, version: _version, payload, ...meta } = event;
  return { approvalId, event: signClaim(createEvent(ApprovalRequestedV2, { ...meta, trace: REQUEST_TRACE }, payload), TEST_AGENT_KEY) };
}

describe("an approval's trace context", () => {
  it("is its request's, kept through the decision (which is traced in it), and changes no verdict", () => {
    const state = createApprovalsState(TEST_KEYRING);
    const { approvalId, event } = tracedRequest();
    expect(applyApprovalEvent(state, event, Date.now())).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(approvalId)?.trace).toEqual(REQUEST_TRACE);
    const decision = signEvent(
      createEvent(ApprovalDecidedV1, { source: 'service:approval', tenant: 'acme', subject: approvalId, trace: DECISION_TRACE }, { approvalId, verdict: 'approve', reviewer: { id: 'user:rita', role: 'approver', kind: 'human' } }),
      TEST_KEYS.approval,
    );
    expect(applyApprovalEvent(state, decision, Date.now())).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(approvalId)).toMatchObject({ status: 'approved', trace: REQUEST_TRACE });
  });

  it('is absent for a request that carried none', () => {
    const state = createApprovalsState(TEST_KEYRING);
    const { approvalId, event } = testRequest();
    applyApprovalEvent(state, event, Date.now());
    expect(state.approvals.get(approvalId)).not.toHaveProperty('trace');
  });
});
