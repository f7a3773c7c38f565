import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { ApprovalCancelledV1, ApprovalDecidedV1, ApprovalDecidedV2, ApprovalExpiredV1, ApprovalRequestedV1, ApprovalRequestedV2, ApprovalUsedV1, createContentKeys, createEvent, newContentKeyEntry, sealContent, withContentKeys, type Scope, signClaim, signEvent } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS, testAgentKey, testKeyring, testSigningKey } from '@gatehouse/contracts/testing';
import { approvalIdForCall, approvalIdForScope } from './approval-id.js';
import { commitArguments } from './commitment.js';
import { applyApprovalEvent, DEFAULT_GRANT_TTL_MS, dueForExpiry, foldApprovals, grantFromApproval, type ApprovalEvent } from './fold.js';
import { createApprovalsState } from './state.js';

const hash = (s: string) => createHash('sha256').update(s).digest('hex');
const scope: Scope = { tenant: 'acme', connectorId: 'payments.refund', executionId: 'run-1', argumentsHash: hash('{"amount":5}') };
const TOOL_CALL = 'call-1';
const requester = { id: 'agent:billing', role: 'agent', kind: 'agent' as const };
/** The second-edition id of a call in `s` by the test agent. */
const idFor = (s: Scope) => approvalIdForCall(s, requester.id, TOOL_CALL);
const id = idFor(scope);
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const DEADLINE = T0 + 60_000;
const alice = { id: 'user:alice', role: 'approver', kind: 'human' as const };
const bob = { id: 'user:bob', role: 'approver', kind: 'human' as const };

const meta = (subject = id) => ({ source: 'service:approval', tenant: 'acme', subject });
/** The payload of a request by the test agent (second edition), before signing. */
const requestPayload = (s: Scope = scope, approvalId = idFor(s)) => ({
  approvalId,
  scope: s,
  arguments: { amount: 5 },
  redactedPaths: [],
  redactionDigests: {},
  toolCallId: TOOL_CALL,
  requester,
  reason: 'refunds need a person',
  deadline: new Date(DEADLINE).toISOString(),
});
/** A request signed as the test agent's claim. */
const claim = (payload: Record<string, unknown> & { approvalId: string }, key = TEST_AGENT_KEY, tenant = 'acme') =>
  signClaim(createEvent(ApprovalRequestedV2, { ...meta(payload.approvalId), tenant }, payload as ReturnType<typeof requestPayload>), key);
const requested = (s: Scope = scope, approvalId = idFor(s)) => claim(requestPayload(s, approvalId));
const signed = <E extends object>(event: E) => signEvent(event, TEST_KEYS.approval);
const decided = (verdict: 'approve' | 'deny', reviewer: { id: string; role: string } = alice, approvalId = id) =>
  signed(createEvent(ApprovalDecidedV1, meta(approvalId), { approvalId, verdict, reviewer, comment: `${verdict} by ${reviewer.id}` }));
const edited = (editedArguments: { amount: number }, reviewer = alice) =>
  signed(createEvent(ApprovalDecidedV1, meta(), { approvalId: id, verdict: 'approve-with-edits', reviewer, editedArguments }));
const expired = (approvalId = id) => signed(createEvent(ApprovalExpiredV1, meta(approvalId), { approvalId, deadline: new Date(DEADLINE).toISOString() }));

const cancelled = (by: { id: string; role: string; kind?: 'human' | 'service' | 'agent' | 'system' } = requester, key = TEST_AGENT_KEY) =>
  signClaim(createEvent(ApprovalCancelledV1, meta(), { approvalId: id, by, reason: 'run aborted' }), key);

function pendingState() {
  const state = createApprovalsState(TEST_KEYRING);
  expect(applyApprovalEvent(state, requested(), T0)).toEqual({ kind: 'accepted' });
  return state;
}

describe('approvalIdForScope', () => {
  it('gives the same id for the same scope, so a retried call finds its approval', () => {
    expect(approvalIdForScope({ ...scope })).toBe(approvalIdForScope(scope));
    expect(approvalIdForScope(scope)).toMatch(/^appr_[\da-f]{64}$/);
    expect(idFor({ ...scope })).toBe(id);
    expect(id).toMatch(/^appr_[\da-f]{64}$/);
  });

  it('gives different ids when any field differs', () => {
    const ids = new Set([
      id,
      approvalIdForScope({ ...scope, tenant: 'globex' }),
      approvalIdForScope({ ...scope, connectorId: 'payments.charge' }),
      approvalIdForScope({ ...scope, executionId: 'run-2' }),
      approvalIdForScope({ ...scope, argumentsHash: hash('{"amount":6}') }),
    ]);
    expect(ids.size).toBe(5);
  });

  it('does not collide when a separator moves across a field boundary', () => {
    const a = approvalIdForScope({ ...scope, tenant: 'a:b', connectorId: 'c' });
    const b = approvalIdForScope({ ...scope, tenant: 'a', connectorId: 'b:c' });
    const c = approvalIdForScope({ ...scope, tenant: 'a","b', connectorId: 'c' });
    const d = approvalIdForScope({ ...scope, tenant: 'a', connectorId: 'b","c' });
    expect(new Set([a, b, c, d]).size).toBe(4);
  });
});

describe('requests', () => {
  it('opens a pending approval at the log time of the request, with its deadline', () => {
    const state = pendingState();
    expect(state.approvals.get(id)).toMatchObject({ status: 'pending', approvalId: id, requestedAt: T0, deadline: DEADLINE, request: { scope, requester } });
  });

  it('records a second request for the same id as a duplicate without replacing the first', () => {
    const state = pendingState();
    const first = state.approvals.get(id);
    expect(applyApprovalEvent(state, requested(), T0 + 5)).toEqual({ kind: 'duplicate' });
    expect(state.approvals.get(id)).toBe(first);
    expect(state.history.get(id)?.map((h) => h.verdict.kind)).toEqual(['accepted', 'duplicate']);
  });

  it('rejects a request whose id is not derived from its scope', () => {
    const state = createApprovalsState(TEST_KEYRING);
    const squatter = requested({ ...scope, executionId: 'run-evil' }, id);
    expect(applyApprovalEvent(state, squatter, T0)).toEqual({ kind: 'rejected', reason: 'scope-mismatch' });
    expect(state.approvals.has(id)).toBe(false);
    expect(applyApprovalEvent(state, requested(), T0 + 1)).toEqual({ kind: 'accepted' });
  });
});

describe('decisions', () => {
  it('approves a pending approval and yields a grant for its scope', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, decided('approve'), T0 + 10)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'approved', reviewer: alice, decidedAt: T0 + 10, comment: 'approve by user:alice' });
    expect(grantFromApproval(state, id)).toEqual({ approvalId: id, scope, reviewer: alice, decidedAt: T0 + 10, useBy: T0 + 10 + DEFAULT_GRANT_TTL_MS });
  });

  it('grants the edited arguments of an approval with edits', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, edited({ amount: 3 }), T0 + 10)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'approved-with-edits', editedArguments: { amount: 3 } });
    expect(grantFromApproval(state, id)).toEqual({ approvalId: id, scope, reviewer: alice, decidedAt: T0 + 10, useBy: T0 + 10 + DEFAULT_GRANT_TTL_MS, editedArguments: { amount: 3 } });
  });

  it('denies, and a denied approval grants nothing', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, decided('deny'), T0 + 10)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)?.status).toBe('denied');
    expect(grantFromApproval(state, id)).toBeUndefined();
  });

  it('grants nothing while pending or for an unknown id', () => {
    const state = pendingState();
    expect(grantFromApproval(state, id)).toBeUndefined();
    expect(grantFromApproval(state, 'appr_unknown')).toBeUndefined();
  });

  it('lets the first of two conflicting decisions win and records the second as rejected', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, decided('approve', alice), T0 + 10)).toEqual({ kind: 'accepted' });
    expect(applyApprovalEvent(state, decided('deny', bob), T0 + 11)).toEqual({ kind: 'rejected', reason: 'already-decided' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'approved', reviewer: alice });
    expect(state.history.get(id)).toEqual([
      expect.objectContaining({ type: 'ApprovalRequested', logTime: T0, verdict: { kind: 'accepted' }, actor: requester }),
      expect.objectContaining({ type: 'ApprovalDecided', logTime: T0 + 10, verdict: { kind: 'accepted' }, actor: alice, decision: 'approve' }),
      expect.objectContaining({ type: 'ApprovalDecided', logTime: T0 + 11, verdict: { kind: 'rejected', reason: 'already-decided' }, actor: bob, decision: 'deny' }),
    ]);
  });

  it('settles a race by log order, whichever reviewer it was', () => {
    for (const [first, second] of [[alice, bob], [bob, alice]] as const) {
      const state = pendingState();
      applyApprovalEvent(state, decided('deny', first), T0 + 10);
      applyApprovalEvent(state, decided('approve', second), T0 + 10);
      expect(state.approvals.get(id)).toMatchObject({ status: 'denied', reviewer: first });
    }
  });

  it('rejects a decision for an unknown approval and records it in that id’s history', () => {
    const state = createApprovalsState(TEST_KEYRING);
    expect(applyApprovalEvent(state, decided('approve'), T0)).toEqual({ kind: 'rejected', reason: 'unknown-approval' });
    expect(state.approvals.has(id)).toBe(false);
    expect(state.history.get(id)).toHaveLength(1);
  });

  it('rejects a requester approving their own request and leaves it pending', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, decided('approve', { id: requester.id, role: 'approver' }), T0 + 10)).toEqual({ kind: 'rejected', reason: 'self-approval' });
    expect(state.approvals.get(id)?.status).toBe('pending');
    expect(applyApprovalEvent(state, decided('approve', alice), T0 + 11)).toEqual({ kind: 'accepted' });
  });

  it('accepts a decision logged exactly at the deadline', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, decided('approve'), DEADLINE)).toEqual({ kind: 'accepted' });
  });

  it('rejects a decision logged past the deadline and counts the approval as expired', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, decided('approve'), DEADLINE + 1)).toEqual({ kind: 'rejected', reason: 'past-deadline' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'expired', expiredAt: DEADLINE + 1, cause: 'late-decision' });
    expect(grantFromApproval(state, id)).toBeUndefined();
    expect(applyApprovalEvent(state, decided('approve', bob), DEADLINE + 2)).toEqual({ kind: 'rejected', reason: 'expired' });
    expect(applyApprovalEvent(state, expired(), DEADLINE + 3)).toEqual({ kind: 'rejected', reason: 'expired' });
  });

  it('judges the deadline by log time, not by the event’s own clock', () => {
    const state = pendingState();
    // The producer's clock says "long before the deadline"; the broker appended it after.
    const backdated = signed(createEvent(ApprovalDecidedV1, { ...meta(), time: new Date(T0).toISOString() }, { approvalId: id, verdict: 'approve', reviewer: alice }));
    expect(applyApprovalEvent(state, backdated, DEADLINE + 1)).toEqual({ kind: 'rejected', reason: 'past-deadline' });
  });
});

describe('expiry', () => {
  it('rejects an expiry logged at or before the deadline', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, expired(), DEADLINE - 1)).toEqual({ kind: 'rejected', reason: 'not-yet-due' });
    expect(applyApprovalEvent(state, expired(), DEADLINE)).toEqual({ kind: 'rejected', reason: 'not-yet-due' });
    expect(state.approvals.get(id)?.status).toBe('pending');
  });

  it('expires a pending approval past its deadline, after which decisions are rejected', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, expired(), DEADLINE + 1)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'expired', expiredAt: DEADLINE + 1, cause: 'expiry-event' });
    expect(applyApprovalEvent(state, decided('approve'), DEADLINE + 2)).toEqual({ kind: 'rejected', reason: 'expired' });
    expect(applyApprovalEvent(state, expired(), DEADLINE + 3)).toEqual({ kind: 'rejected', reason: 'expired' });
  });

  it('rejects an expiry after a decision: the decision came first', () => {
    const state = pendingState();
    applyApprovalEvent(state, decided('approve'), T0 + 10);
    expect(applyApprovalEvent(state, expired(), DEADLINE + 1)).toEqual({ kind: 'rejected', reason: 'already-decided' });
    expect(state.approvals.get(id)?.status).toBe('approved');
  });

  it('rejects an expiry for an unknown approval', () => {
    expect(applyApprovalEvent(createApprovalsState(TEST_KEYRING), expired(), DEADLINE + 1)).toEqual({ kind: 'rejected', reason: 'unknown-approval' });
  });

  it('lists pending approvals past their deadline at `now`, oldest deadline first', () => {
    const state = pendingState();
    const other: Scope = { ...scope, executionId: 'run-2' };
    const early = claim({ ...requestPayload(other), deadline: new Date(DEADLINE - 30_000).toISOString() });
    applyApprovalEvent(state, early, T0 + 1);
    const decidedScope: Scope = { ...scope, executionId: 'run-3' };
    applyApprovalEvent(state, requested(decidedScope), T0 + 2);
    applyApprovalEvent(state, decided('deny', alice, idFor(decidedScope)), T0 + 3);

    expect(dueForExpiry(state, DEADLINE - 30_000)).toEqual([]);
    expect(dueForExpiry(state, DEADLINE).map((a) => a.approvalId)).toEqual([idFor(other)]);
    expect(dueForExpiry(state, DEADLINE + 1).map((a) => a.approvalId)).toEqual([idFor(other), id]);
  });
});

describe('replay', () => {
  it('reaches an equal state from the same records, every time', () => {
    const other: Scope = { ...scope, executionId: 'run-2' };
    const records: { event: ApprovalEvent; logTime: number }[] = [
      { event: requested(), logTime: T0 },
      { event: requested(other), logTime: T0 + 1 },
      { event: requested(), logTime: T0 + 2 },
      { event: decided('approve', { id: requester.id, role: 'x' }), logTime: T0 + 3 },
      { event: edited({ amount: 2 }, bob), logTime: T0 + 4 },
      { event: decided('deny', alice), logTime: T0 + 5 },
      { event: decided('approve', alice, idFor(other)), logTime: DEADLINE + 1 },
      { event: expired(idFor(other)), logTime: DEADLINE + 2 },
      { event: expired('appr_nobody'), logTime: DEADLINE + 3 },
    ];
    const live = foldApprovals(records, TEST_KEYRING);
    const replayed = foldApprovals(records, TEST_KEYRING);
    expect(replayed).toEqual(live);
    expect(replayed.approvals.get(id)).toMatchObject({ status: 'approved-with-edits', reviewer: bob });
    expect(replayed.approvals.get(idFor(other))).toMatchObject({ status: 'expired', cause: 'late-decision' });
    expect([...replayed.history.values()].flat()).toHaveLength(records.length);
  });
});

describe('cancellation', () => {
  it('lets the requester withdraw a pending request, and nothing decides it afterwards', () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, cancelled(), T0 + 1)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'cancelled', cancelledBy: requester, cancelledAt: T0 + 1 });
    expect(applyApprovalEvent(state, decided('approve'), T0 + 2)).toEqual({ kind: 'rejected', reason: 'cancelled' });
    expect(applyApprovalEvent(state, expired(), DEADLINE + 1)).toEqual({ kind: 'rejected', reason: 'cancelled' });
    expect(grantFromApproval(state, id)).toBeUndefined();
    expect(state.history.get(id)?.map((h) => h.type)).toEqual(['ApprovalRequested', 'ApprovalCancelled', 'ApprovalDecided', 'ApprovalExpired']);
  });

  it("refuses a cancellation that names anyone but the requester's own agent", () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, cancelled(alice), T0 + 1)).toEqual({ kind: 'rejected', reason: 'not-requester' });
    expect(state.approvals.get(id)?.status).toBe('pending');
    // A name is not an author: "system" signed by the agent's key is still the agent, not the requester's own name.
    expect(applyApprovalEvent(state, cancelled({ id: 'system:expirer', role: 'system', kind: 'system' }), T0 + 2)).toEqual({ kind: 'rejected', reason: 'not-requester' });
    expect(applyApprovalEvent(state, cancelled(), T0 + 3)).toEqual({ kind: 'accepted' });
  });

  it('cannot undo a decision that came first', () => {
    const state = pendingState();
    applyApprovalEvent(state, decided('approve'), T0 + 1);
    expect(applyApprovalEvent(state, cancelled(), T0 + 2)).toEqual({ kind: 'rejected', reason: 'already-decided' });
    expect(grantFromApproval(state, id)).toMatchObject({ approvalId: id });
  });
});

describe('quorum', () => {
  const carol = { id: 'user:carol', role: 'approver', kind: 'human' as const };
  const quorumRequest = () => claim({ ...requestPayload(), reason: 'large refunds need two people', quorum: { required: 2, reviewers: [alice.id, bob.id, carol.id] } });
  const quorumState = () => {
    const state = createApprovalsState(TEST_KEYRING);
    expect(applyApprovalEvent(state, quorumRequest(), T0)).toEqual({ kind: 'accepted' });
    return state;
  };

  it('counts approvals from distinct listed reviewers and settles at the required number', () => {
    const state = quorumState();
    expect(applyApprovalEvent(state, decided('approve', alice), T0 + 1)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'pending', votes: [{ reviewer: alice, at: T0 + 1 }] });
    expect(grantFromApproval(state, id)).toBeUndefined();
    expect(applyApprovalEvent(state, decided('approve', alice), T0 + 2)).toEqual({ kind: 'rejected', reason: 'already-voted' });
    expect(applyApprovalEvent(state, decided('approve', bob), T0 + 3)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'approved', reviewer: bob, decidedAt: T0 + 3, votes: [{ reviewer: alice }, { reviewer: bob }] });
    expect(grantFromApproval(state, id)).toMatchObject({ approvalId: id, reviewer: bob });
    expect(applyApprovalEvent(state, decided('approve', carol), T0 + 4)).toEqual({ kind: 'rejected', reason: 'already-decided' });
  });

  it('lets any listed reviewer deny, ignores the unlisted, and refuses edits', () => {
    const state = quorumState();
    const mallory = { id: 'user:mallory', role: 'approver' };
    expect(applyApprovalEvent(state, decided('approve', mallory), T0 + 1)).toEqual({ kind: 'rejected', reason: 'not-a-quorum-reviewer' });
    expect(applyApprovalEvent(state, edited({ amount: 1 }, alice), T0 + 2)).toEqual({ kind: 'rejected', reason: 'edits-need-single-reviewer' });
    applyApprovalEvent(state, decided('approve', alice), T0 + 3);
    expect(applyApprovalEvent(state, decided('deny', carol), T0 + 4)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'denied', reviewer: carol, votes: [{ reviewer: alice }] });
  });

  it('refuses a quorum that asks for more approvals than it lists reviewers', () => {
    expect(() =>
      createEvent(ApprovalRequestedV2, meta(), { ...quorumRequest().payload, quorum: { required: 3, reviewers: [alice.id, alice.id, bob.id] } }),
    ).toThrow();
  });
});

describe('self-approval', () => {
  it('refuses the principal the requesting agent acts for, as it refuses the agent itself', () => {
    const state = createApprovalsState(TEST_KEYRING);
    const onBehalfOf = { id: 'user:mallory', role: 'support', kind: 'human' as const };
    applyApprovalEvent(state, claim({ ...requestPayload(), onBehalfOf }), T0);
    expect(applyApprovalEvent(state, decided('approve', onBehalfOf), T0 + 1)).toEqual({ kind: 'rejected', reason: 'self-approval' });
    expect(applyApprovalEvent(state, decided('approve', requester), T0 + 2)).toEqual({ kind: 'rejected', reason: 'self-approval' });
    expect(applyApprovalEvent(state, decided('approve', alice), T0 + 3)).toEqual({ kind: 'accepted' });
  });
});

describe('signed grants', () => {
  it('ignores an unsigned or forged decision, counts it, and keeps it in the history', () => {
    const state = pendingState();
    const forgedBy = testSigningKey('approval', 'agent-made-key');
    const unsigned = createEvent(ApprovalDecidedV1, meta(), { approvalId: id, verdict: 'approve', reviewer: alice });
    expect(applyApprovalEvent(state, unsigned, T0 + 1)).toEqual({ kind: 'rejected', reason: 'untrusted-signature', untrusted: 'unsigned' });
    expect(applyApprovalEvent(state, signEvent(unsigned, forgedBy), T0 + 2)).toEqual({ kind: 'rejected', reason: 'untrusted-signature', untrusted: 'unknown-key' });
    expect(applyApprovalEvent(state, signEvent(unsigned, TEST_KEYS.ledger), T0 + 3)).toEqual({ kind: 'rejected', reason: 'untrusted-signature', untrusted: 'wrong-signer' });
    expect(state.approvals.get(id)?.status).toBe('pending');
    expect(grantFromApproval(state, id)).toBeUndefined();
    expect(state.untrusted.count).toBe(3);
    expect(state.history.get(id)?.map((h) => h.verdict.kind)).toEqual(['accepted', 'rejected', 'rejected', 'rejected']);
    // The service's signed decision still counts afterwards.
    expect(applyApprovalEvent(state, decided('approve'), T0 + 4)).toEqual({ kind: 'accepted' });
  });

  it("needs no service signature on a request or a withdrawal: they are the agent's claims, signed by its own key", () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, cancelled(), T0 + 1)).toEqual({ kind: 'accepted' });
    expect(state.untrusted.count).toBe(0);
    expect(state.forbidden.count).toBe(0);
  });
});

describe('claims: the agent is the adversary', () => {
  const otherTenantAgent = testAgentKey('agent:intruder', ['globex']);
  const sameTenantAgent = testAgentKey('agent:other', ['acme']);
  const keyring = testKeyring(TEST_KEYS.approval, TEST_KEYS.ledger, TEST_AGENT_KEY, otherTenantAgent, sameTenantAgent);

  it('never counts a first-edition request (no author, no commitment), but keeps it in the history', () => {
    const state = createApprovalsState(keyring);
    const legacyId = approvalIdForScope(scope);
    const legacy = createEvent(ApprovalRequestedV1, meta(legacyId), { approvalId: legacyId, scope, arguments: { amount: 5 }, requester, reason: 'old', deadline: new Date(DEADLINE).toISOString() });
    expect(applyApprovalEvent(state, legacy, T0)).toEqual({ kind: 'rejected', reason: 'legacy-request' });
    expect(state.approvals.has(legacyId)).toBe(false);
    expect(state.history.get(legacyId)).toHaveLength(1);
    expect(state.forbidden.count).toBe(1);
  });

  it('ignores an unsigned request, one signed by an unknown key, and one signed by a service key', () => {
    const state = createApprovalsState(keyring);
    const unsigned = createEvent(ApprovalRequestedV2, meta(), requestPayload());
    expect(applyApprovalEvent(state, unsigned, T0)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'unsigned' });
    expect(applyApprovalEvent(state, signClaim(unsigned, testAgentKey(requester.id, ['acme'])), T0 + 1)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'unknown-key' });
    expect(applyApprovalEvent(state, signEvent(unsigned, TEST_KEYS.ledger), T0 + 2)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'wrong-signer' });
    expect(applyApprovalEvent(state, signEvent(unsigned, TEST_KEYS.approval), T0 + 3)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'wrong-signer' });
    expect(state.approvals.has(id)).toBe(false);
    expect(state.forbidden.count).toBe(4);
  });

  it("refuses a tenant-B agent's request in tenant A, and one whose scope names another tenant than its envelope", () => {
    const state = createApprovalsState(keyring);
    const intruder = { id: 'agent:intruder', role: 'agent', kind: 'agent' as const };
    const payload = { ...requestPayload(), requester: intruder, approvalId: approvalIdForCall(scope, intruder.id, TOOL_CALL) };
    expect(applyApprovalEvent(state, claim(payload, otherTenantAgent), T0)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'foreign-tenant' });
    const globexScope = { ...scope, tenant: 'globex' };
    const crossed = { ...payload, scope: globexScope, approvalId: approvalIdForCall(globexScope, intruder.id, TOOL_CALL) };
    // Signed for its own tenant on the envelope, but the scope (what the grant is for) names acme.
    expect(applyApprovalEvent(state, claim({ ...crossed, scope }, otherTenantAgent, 'globex'), T0 + 1)).toEqual({ kind: 'rejected', reason: 'tenant-mismatch' });
    expect(state.approvals.size).toBe(0);
  });

  it("refuses a request that names another agent as its requester (no squatting on another agent's call)", () => {
    const state = createApprovalsState(keyring);
    // agent:other signs a request for agent:billing's call id: the id binds the requester, the signature the author.
    expect(applyApprovalEvent(state, claim(requestPayload(), sameTenantAgent), T0)).toEqual({ kind: 'rejected', reason: 'requester-mismatch' });
    expect(state.approvals.has(id)).toBe(false);
    expect(applyApprovalEvent(state, requested(), T0 + 1)).toEqual({ kind: 'accepted' });
  });

  it('binds the id to the requester and the tool call: another call id is another approval', () => {
    const ids = new Set([id, approvalIdForCall(scope, requester.id, 'call-2'), approvalIdForCall(scope, 'agent:other', TOOL_CALL), approvalIdForScope(scope)]);
    expect(ids.size).toBe(4);
  });

  it('refuses a request whose shown arguments are not the ones its hash commits to', () => {
    const state = createApprovalsState(keyring);
    // The hash commits to amount 25; the reviewer would be shown amount 1.
    const committed = commitArguments({ amount: 25 }, [], TEST_AGENT_KEY, { tenant: 'acme', connectorId: scope.connectorId, executionId: scope.executionId, toolCallId: TOOL_CALL });
    const realScope = { ...scope, argumentsHash: committed.argumentsHash };
    const squat = claim({ ...requestPayload(realScope), arguments: { amount: 1 } });
    expect(applyApprovalEvent(state, squat, T0)).toEqual({ kind: 'rejected', reason: 'commitment-mismatch' });
    expect(applyApprovalEvent(state, claim({ ...requestPayload(realScope), arguments: committed.view }), T0 + 1)).toEqual({ kind: 'accepted' });
  });

  it('covers redacted values by salted digests: the view verifies, and a swapped digest does not', () => {
    const state = createApprovalsState(keyring);
    const args = { amount: 5, card: { number: '4242424242424242', cvv: '123' } };
    const salt = { tenant: 'acme', connectorId: scope.connectorId, executionId: 'run-r', toolCallId: TOOL_CALL };
    const committed = commitArguments(args, ['/card/cvv', '/card/number'], TEST_AGENT_KEY, salt);
    expect(committed.view).toEqual({ amount: 5, card: { number: '[REDACTED]', cvv: '[REDACTED]' } });
    // Deterministic for the same key and call (a restarted agent finds its approval), and hiding: no digest is the plain hash.
    expect(commitArguments(args, ['/card/cvv', '/card/number'], TEST_AGENT_KEY, salt)).toEqual(committed);
    expect(Object.values(committed.redactionDigests)).not.toContain(createHash('sha256').update('"123"').digest('hex'));
    const s: Scope = { ...scope, executionId: 'run-r', argumentsHash: committed.argumentsHash };
    const payload = { ...requestPayload(s), arguments: committed.view, redactedPaths: ['/card/cvv', '/card/number'], redactionDigests: { ...committed.redactionDigests } };
    const other = commitArguments({ ...args, card: { ...args.card, cvv: '999' } }, ['/card/cvv', '/card/number'], TEST_AGENT_KEY, salt);
    const swapped = { ...payload, redactionDigests: { ...payload.redactionDigests, '/card/cvv': other.redactionDigests['/card/cvv'] as string } };
    expect(applyApprovalEvent(state, claim(swapped), T0)).toEqual({ kind: 'rejected', reason: 'commitment-mismatch' });
    const unmarked = { ...payload, arguments: { amount: 5, card: { number: '[REDACTED]', cvv: '124' } } };
    expect(applyApprovalEvent(state, claim(unmarked), T0 + 1)).toEqual({ kind: 'rejected', reason: 'commitment-mismatch' });
    expect(applyApprovalEvent(state, claim(payload), T0 + 2)).toEqual({ kind: 'accepted' });
  });

  it('refuses a request past the size bounds', () => {
    const state = createApprovalsState(keyring);
    const big = { note: 'x'.repeat(20_000) };
    const committed = commitArguments(big, [], TEST_AGENT_KEY, { tenant: 'acme', connectorId: scope.connectorId, executionId: scope.executionId, toolCallId: TOOL_CALL });
    const s = { ...scope, argumentsHash: committed.argumentsHash };
    expect(applyApprovalEvent(state, claim({ ...requestPayload(s), arguments: big }), T0)).toEqual({ kind: 'rejected', reason: 'too-large' });
    expect(applyApprovalEvent(state, claim({ ...requestPayload(), dryRunPreview: { rows: 'y'.repeat(17_000) } }), T0 + 1)).toEqual({ kind: 'rejected', reason: 'too-large' });
    expect(state.approvals.size).toBe(0);
  });

  it("lets only the requester's own key, or the approval service, withdraw a request", () => {
    const state = createApprovalsState(keyring);
    expect(applyApprovalEvent(state, requested(), T0)).toEqual({ kind: 'accepted' });
    const unsigned = createEvent(ApprovalCancelledV1, meta(), { approvalId: id, by: { id: 'system', role: 'system', kind: 'system' }, reason: 'x' });
    expect(applyApprovalEvent(state, unsigned, T0 + 1)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'unsigned' });
    // Another agent of the tenant, naming itself or the requester.
    expect(applyApprovalEvent(state, cancelled({ id: 'agent:other', role: 'agent', kind: 'agent' }, sameTenantAgent), T0 + 2)).toEqual({ kind: 'rejected', reason: 'not-requester' });
    expect(applyApprovalEvent(state, cancelled(requester, sameTenantAgent), T0 + 3)).toEqual({ kind: 'rejected', reason: 'not-requester' });
    // Another tenant's agent: its key does not count in acme at all.
    expect(applyApprovalEvent(state, cancelled(requester, otherTenantAgent), T0 + 4)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'foreign-tenant' });
    expect(state.approvals.get(id)?.status).toBe('pending');
    expect(state.forbidden.count).toBe(4);
    const byService = signEvent(createEvent(ApprovalCancelledV1, meta(), { approvalId: id, by: { id: 'service:approval', role: 'system', kind: 'system' }, reason: 'run ended' }), TEST_KEYS.approval);
    expect(applyApprovalEvent(state, byService, T0 + 5)).toEqual({ kind: 'accepted' });
  });

  it("lets the requester withdraw its own request", () => {
    const state = pendingState();
    expect(applyApprovalEvent(state, cancelled(), T0 + 1)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)).toMatchObject({ status: 'cancelled', cancelledBy: requester });
  });
});

describe('grant use: one call, once, for a while', () => {
  const sameTenantAgent = testAgentKey('agent:other', ['acme']);
  const keyring = testKeyring(TEST_KEYS.approval, TEST_AGENT_KEY, sameTenantAgent);
  const used = (key = TEST_AGENT_KEY, toolCallId = TOOL_CALL, by = requester) => signClaim(createEvent(ApprovalUsedV1, meta(), { approvalId: id, toolCallId, by }), key);
  const approvedState = (useBy?: number) => {
    const state = createApprovalsState(keyring);
    applyApprovalEvent(state, requested(), T0);
    // A second-edition decision names its use-by time; a first-edition one gets the default.
    const decision =
      useBy === undefined
        ? signed(createEvent(ApprovalDecidedV1, meta(), { approvalId: id, verdict: 'approve', reviewer: alice }))
        : signed(createEvent(ApprovalDecidedV2, meta(), { approvalId: id, verdict: 'approve', reviewer: alice, useBy: new Date(useBy).toISOString() }));
    expect(applyApprovalEvent(state, decision, T0 + 10)).toEqual({ kind: 'accepted' });
    return state;
  };

  it('accepts the first use by the requester, for its tool call, and rejects every later one', () => {
    const state = approvedState(T0 + 1_000);
    expect(applyApprovalEvent(state, used(), T0 + 20)).toEqual({ kind: 'accepted' });
    expect(grantFromApproval(state, id)).toMatchObject({ useBy: T0 + 1_000, usedAt: T0 + 20 });
    expect(applyApprovalEvent(state, used(), T0 + 21)).toEqual({ kind: 'rejected', reason: 'already-used' });
  });

  it('rejects a use logged after the use-by time, and defaults it for a decision that names none', () => {
    const state = approvedState(T0 + 1_000);
    expect(applyApprovalEvent(state, used(), T0 + 1_001)).toEqual({ kind: 'rejected', reason: 'past-use-by' });
    const old = approvedState();
    expect(grantFromApproval(old, id)?.useBy).toBe(T0 + 10 + DEFAULT_GRANT_TTL_MS);
    expect(applyApprovalEvent(old, used(), T0 + 11 + DEFAULT_GRANT_TTL_MS)).toEqual({ kind: 'rejected', reason: 'past-use-by' });
  });

  it('rejects a use by another agent, an unsigned one, one for another tool call, and one of a pending approval', () => {
    const state = approvedState(T0 + 1_000);
    expect(applyApprovalEvent(state, used(sameTenantAgent, TOOL_CALL, { id: 'agent:other', role: 'agent', kind: 'agent' }), T0 + 20)).toEqual({ kind: 'rejected', reason: 'not-requester' });
    expect(applyApprovalEvent(state, createEvent(ApprovalUsedV1, meta(), { approvalId: id, toolCallId: TOOL_CALL, by: requester }), T0 + 21)).toEqual({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'unsigned' });
    expect(applyApprovalEvent(state, used(TEST_AGENT_KEY, 'call-2'), T0 + 22)).toEqual({ kind: 'rejected', reason: 'tool-call-mismatch' });
    expect(grantFromApproval(state, id)?.usedAt).toBeUndefined();
    const waiting = createApprovalsState(keyring);
    applyApprovalEvent(waiting, requested(), T0);
    expect(applyApprovalEvent(waiting, used(), T0 + 1)).toEqual({ kind: 'rejected', reason: 'not-granted' });
  });
});

describe('sealed content: tenants do not read each other', () => {
  const acmeKey = createContentKeys([newContentKeyEntry('acme', 'content-acme-1')]);
  const globexKey = createContentKeys([newContentKeyEntry('globex', 'content-globex-1')]);
  const withKeys = (content: ReturnType<typeof createContentKeys>) => withContentKeys(testKeyring(TEST_KEYS.approval, TEST_AGENT_KEY), content);
  const sealedRequest = (content = acmeKey) => {
    const { arguments: args, reason, ...rest } = requestPayload();
    const sealed = sealContent({ arguments: args, reason }, [...content.values()][0]!, { type: 'ApprovalRequested', approvalId: id, tenant: 'acme' });
    return claim({ ...rest, arguments: null, reason: '', sealed });
  };

  it('opens a sealed request with the tenant key and keeps its content in the state', () => {
    const state = createApprovalsState(withKeys(acmeKey));
    expect(applyApprovalEvent(state, sealedRequest(), T0)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(id)?.request).toMatchObject({ arguments: { amount: 5 }, reason: 'refunds need a person' });
    expect(JSON.stringify(sealedRequest().payload)).not.toContain('refunds need a person');
  });

  it("keeps out what it cannot open: another tenant's box is not its business, and an altered or moved box is refused", () => {
    const other = createApprovalsState(withKeys(globexKey));
    expect(applyApprovalEvent(other, sealedRequest(), T0)).toEqual({ kind: 'rejected', reason: 'sealed-elsewhere' });
    expect(other.forbidden.count).toBe(0);
    const state = createApprovalsState(withKeys(acmeKey));
    const event = sealedRequest();
    const altered = signClaim({ ...event, payload: { ...event.payload, sealed: { ...event.payload.sealed!, data: `${event.payload.sealed!.data.slice(0, -2)}AA` } } }, TEST_AGENT_KEY);
    expect(applyApprovalEvent(state, altered, T0)).toEqual({ kind: 'rejected', reason: 'sealed-tampered' });
    expect(state.forbidden.count).toBe(1);
  });

  it('refuses a request in clear for a tenant whose content key the reader holds', () => {
    const state = createApprovalsState(withKeys(acmeKey));
    expect(applyApprovalEvent(state, requested(), T0)).toEqual({ kind: 'rejected', reason: 'unsealed' });
    expect(state.approvals.has(id)).toBe(false);
  });

  it('opens a sealed decision: the edits grant, and the clear envelope shows neither edits nor comment', () => {
    const state = createApprovalsState(withKeys(acmeKey));
    applyApprovalEvent(state, sealedRequest(), T0);
    const sealed = sealContent({ editedArguments: { amount: 3 }, comment: 'only three' }, [...acmeKey.values()][0]!, { type: 'ApprovalDecided', approvalId: id, tenant: 'acme' });
    const decision = signed(createEvent(ApprovalDecidedV2, meta(), { approvalId: id, verdict: 'approve-with-edits', reviewer: alice, useBy: new Date(T0 + 60_000).toISOString(), sealed }));
    expect(JSON.stringify(decision.payload)).not.toContain('only three');
    expect(applyApprovalEvent(state, decision, T0 + 10)).toEqual({ kind: 'accepted' });
    expect(grantFromApproval(state, id)).toMatchObject({ editedArguments: { amount: 3 }, useBy: T0 + 60_000 });
  });
});
