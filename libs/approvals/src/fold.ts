import {
  APPROVAL_REQUEST_LIMITS,
  canonicalJson,
  checkClaim,
  checkGrant,
  DecisionContentSchema,
  type JsonValue,
  type Keyring,
  openContent,
  RequestContentSchema,
  type Scope,
  sealingKeyFor,
  type TopicEvent,
} from '@gatehouse/contracts';
import { approvalIdForCall } from './approval-id.js';
import { commitmentOfView } from './commitment.js';
import { type Approval, type ApprovalRequest, type ApprovalsState, createApprovalsState, type HistoryEntry, type RejectionReason, type Verdict } from './state.js';

export type ApprovalEvent = TopicEvent<'approvals'>;

const accepted: Verdict = Object.freeze({ kind: 'accepted' });
const duplicate: Verdict = Object.freeze({ kind: 'duplicate' });
const reject = (reason: RejectionReason): Verdict => Object.freeze({ kind: 'rejected', reason });

/**
 * How long a grant stays usable after its decision when the decision names no use-by time (a
 * decision written before use-by times existed): 15 minutes, so no grant of an old log is
 * honoured for ever. The approval service names its own (`GATEHOUSE_APPROVAL_GRANT_TTL_MS`).
 */
export const DEFAULT_GRANT_TTL_MS = 15 * 60 * 1000;

/** The use-by instant (ms) of a decision logged at `logTime`: never later than the state's grant limit allows. */
function useByOf(state: ApprovalsState, payload: { useBy?: string | undefined }, logTime: number): number {
  const named = payload.useBy === undefined ? logTime + DEFAULT_GRANT_TTL_MS : Date.parse(payload.useBy);
  return Math.min(named, logTime + state.limits.maxGrantTtlMs);
}

/** Whether an approval with `deadline` is void at log time `at` (ms): the deadline instant itself still counts. */
export function isPastDeadline(approval: Pick<Approval, 'deadline'>, at: number): boolean {
  return at > approval.deadline;
}

function record(state: ApprovalsState, approvalId: string, entry: HistoryEntry): void {
  const entries = state.history.get(approvalId);
  if (entries) entries.push(Object.freeze(entry));
  else state.history.set(approvalId, [Object.freeze(entry)]);
}

function settle(state: ApprovalsState, next: Approval): void {
  state.approvals.set(next.approvalId, Object.freeze(next));
}

/** Whether `reviewerId` asked for the approval: the requesting agent, or the principal it acts for. */
export function isOwnRequest(request: Approval['request'], reviewerId: string): boolean {
  return reviewerId === request.requester.id || reviewerId === request.onBehalfOf?.id;
}

/** What a settled approval keeps of its request. */
function pendingBase(approval: Approval) {
  const { approvalId, request, requestedAt, deadline, votes, requestEventId, correlationId, trace } = approval;
  return { approvalId, request, requestedAt, deadline, votes, requestEventId, ...(correlationId !== undefined && { correlationId }), ...(trace !== undefined && { trace }) };
}

/** Why a terminal approval refuses any further decision or expiry. */
function terminalReason(approval: Approval): RejectionReason | undefined {
  switch (approval.status) {
    case 'pending':
      return undefined;
    case 'approved':
    case 'approved-with-edits':
    case 'denied':
      return 'already-decided';
    case 'expired':
      return 'expired';
    case 'cancelled':
      return 'cancelled';
    default: {
      const exhaustive: never = approval;
      return exhaustive;
    }
  }
}

/**
 * The approval fold: advances `state` by one event and returns the verdict on it; deterministic
 * and total (a function of the records and their log append times only). Log order settles
 * conflicts: the first terminal event (decision or expiry) wins, and every later one is recorded
 * as rejected, never applied. Deadlines are judged by the broker's append time, never a clock.
 * A rejected event changes no approval but is never an error: it is already on the log.
 */
export function applyApprovalEvent(state: ApprovalsState, event: ApprovalEvent, logTime: number): Verdict {
  forgetSettled(state, event.payload.approvalId, logTime);
  const verdict = decide(state, event, logTime);
  const p = event.payload;
  record(state, p.approvalId, {
    eventId: event.id,
    type: event.type,
    logTime,
    verdict,
    ...(event.type === 'ApprovalRequested' && { actor: event.payload.requester }),
    ...(event.type === 'ApprovalDecided' && { actor: event.payload.reviewer, decision: event.payload.verdict }),
    ...(event.type === 'ApprovalCancelled' && { actor: event.payload.by }),
    ...(event.type === 'ApprovalUsed' && { actor: event.payload.by }),
  });
  return verdict;
}

function forbidden(state: ApprovalsState, reason: RejectionReason): Verdict {
  state.forbidden.count += 1;
  return reject(reason);
}

const utf8Bytes = (value: unknown) => Buffer.byteLength(canonicalJson(value), 'utf8');

/** Whether one of a request's large fields, opened, is past the bounds (the whole event is measured before it is opened). */
function fieldsTooLarge(request: ApprovalRequest): boolean {
  return [request.arguments, request.dryRunPreview, request.inputSchema].some((field) => field !== undefined && utf8Bytes(field) > APPROVAL_REQUEST_LIMITS.fieldBytes);
}

/**
 * A second-edition request's content, opened: the request as the fold keeps it. A tenant whose
 * content key this reader holds gets only sealed requests (clear content is readable by every
 * agent on the topic); a box this reader holds no key for is another tenant's, none of its
 * business (`sealed-elsewhere`, not reported).
 */
function openRequest(state: ApprovalsState, event: ApprovalEvent & { type: 'ApprovalRequested'; version: 2 }): { request: ApprovalRequest } | { refused: Verdict } {
  const { sealed, ...clear } = event.payload;
  if (sealed === undefined) return sealingKeyFor(state.keyring.content, event.tenant) ? { refused: reject('unsealed') } : { request: clear };
  const opened = openContent(sealed, state.keyring.content, { type: event.type, approvalId: clear.approvalId, tenant: event.tenant });
  if (!opened.ok) return { refused: reject(opened.reason === 'no-key' ? 'sealed-elsewhere' : 'sealed-tampered') };
  const content = RequestContentSchema.safeParse(opened.value);
  if (!content.success) return { refused: reject('sealed-tampered') };
  return { request: { ...clear, ...content.data } };
}

/**
 * Why a request may not count, if it may not: a request is the requesting agent's claim, so it
 * must be signed by that agent's key, for its own tenant, naming itself, with an id derived
 * from its call and arguments a reviewer sees as committed. A first-edition request proves none
 * of this: it is read (a user's log holds them) and never counts.
 */
function requestRefusal(state: ApprovalsState, event: ApprovalEvent & { type: 'ApprovalRequested' }): { refused: Verdict } | { request: ApprovalRequest } {
  if (event.version === 1) return { refused: reject('legacy-request') };
  const p = event.payload;
  if (utf8Bytes(event) > APPROVAL_REQUEST_LIMITS.eventBytes) return { refused: reject('too-large') };
  const claim = checkClaim(event, state.keyring);
  if (!claim.attributed) return { refused: Object.freeze({ kind: 'rejected', reason: 'unattributed-claim', unattributed: claim.reason }) };
  if (claim.author.kind !== 'agent') return { refused: Object.freeze({ kind: 'rejected', reason: 'unattributed-claim', unattributed: 'wrong-signer' }) };
  if (event.tenant !== p.scope.tenant) return { refused: reject('tenant-mismatch') };
  if (p.requester.kind !== 'agent' || p.requester.id !== claim.author.agentId) return { refused: reject('requester-mismatch') };
  if (approvalIdForCall(p.scope, p.requester.id, p.toolCallId) !== p.approvalId) return { refused: reject('scope-mismatch') };
  const opened = openRequest(state, event);
  if ('refused' in opened) return opened;
  if (fieldsTooLarge(opened.request)) return { refused: reject('too-large') };
  if (commitmentOfView(opened.request.arguments, p.redactionDigests) !== p.scope.argumentsHash) return { refused: reject('commitment-mismatch') };
  return opened;
}

/** A decision as the fold judges it: its sealed content opened, its use-by time named or not. */
interface OpenedDecision {
  readonly approvalId: string;
  readonly verdict: 'approve' | 'approve-with-edits' | 'deny';
  readonly reviewer: ApprovalRequest['requester'];
  readonly comment?: string;
  readonly editedArguments?: JsonValue;
  readonly useBy?: string;
}

function openDecision(state: ApprovalsState, event: ApprovalEvent & { type: 'ApprovalDecided' }, tenant: string): { decision: OpenedDecision } | { refused: Verdict } {
  if (event.version === 1 || event.payload.sealed === undefined) return { decision: event.payload };
  const { sealed, ...clear } = event.payload;
  const opened = openContent(sealed, state.keyring.content, { type: event.type, approvalId: clear.approvalId, tenant });
  if (!opened.ok) return { refused: reject(opened.reason === 'no-key' ? 'sealed-elsewhere' : 'sealed-tampered') };
  const content = DecisionContentSchema.safeParse(opened.value);
  if (!content.success) return { refused: reject('sealed-tampered') };
  return { decision: { ...clear, ...content.data } };
}

/** Rejection reasons that mean a claim its author may not make: what readers report as `SECURITY.FORBIDDEN_CLAIM`. */
const FORBIDDEN_REASONS: ReadonlySet<RejectionReason> = new Set<RejectionReason>([
  'unattributed-claim',
  'legacy-request',
  'requester-mismatch',
  'tenant-mismatch',
  'scope-mismatch',
  'commitment-mismatch',
  'too-large',
  'not-requester',
  'unsealed',
  'sealed-tampered',
]);

/** Whether the fold ignored an event as a forbidden claim (a reader reports it; see `forbiddenClaimDecision`). */
export function isForbiddenClaim(verdict: Verdict): verdict is Extract<Verdict, { kind: 'rejected' }> {
  return verdict.kind === 'rejected' && FORBIDDEN_REASONS.has(verdict.reason);
}

function decide(state: ApprovalsState, event: ApprovalEvent, logTime: number): Verdict {
  // Only the approval service grants: an unsigned or forged decision or expiry changes nothing.
  const trust = checkGrant(event, state.keyring);
  if (!trust.trusted) {
    state.untrusted.count += 1;
    return Object.freeze({ kind: 'rejected', reason: 'untrusted-signature', untrusted: trust.reason });
  }
  switch (event.type) {
    case 'ApprovalRequested': {
      const p = event.payload;
      const judged = requestRefusal(state, event);
      if ('refused' in judged) {
        if (isForbiddenClaim(judged.refused)) state.forbidden.count += 1;
        return judged.refused;
      }
      if (state.approvals.has(p.approvalId)) return duplicate;
      settle(state, {
        status: 'pending',
        approvalId: p.approvalId,
        request: judged.request,
        requestedAt: logTime,
        // A deadline past the longest wait counts as that: what bounds the history a reader needs.
        deadline: Math.min(Date.parse(p.deadline), logTime + state.limits.maxWaitMs),
        votes: [],
        requestEventId: event.id,
        ...(event.correlationId !== undefined && { correlationId: event.correlationId }),
        ...(event.trace !== undefined && { trace: event.trace }),
      });
      return accepted;
    }
    case 'ApprovalDecided': {
      const current = state.approvals.get(event.payload.approvalId);
      if (!current) return reject('unknown-approval');
      // A decision answers the request it names (the service sets its causation id to the request's
      // event id): one copied onto a later request for the same id (a re-request a reader that
      // started after the first one holds as new) answers nothing.
      if (event.causationId !== undefined && event.causationId !== current.requestEventId) return reject('other-request');
      const opened = openDecision(state, event, current.request.scope.tenant);
      if ('refused' in opened) return opened.refused;
      const p = opened.decision;
      const terminal = terminalReason(current);
      if (terminal) return reject(terminal);
      const base = pendingBase(current);
      if (isPastDeadline(current, logTime)) {
        // The log shows the deadline passed while pending: the approval is expired, whoever decides.
        settle(state, { ...base, status: 'expired', expiredAt: logTime, cause: 'late-decision' });
        return reject('past-deadline');
      }
      if (isOwnRequest(current.request, p.reviewer.id)) return reject('self-approval');
      const decision = { reviewer: p.reviewer, decidedAt: logTime, useBy: useByOf(state, p, logTime), ...(p.comment !== undefined && { comment: p.comment }) };
      const quorum = current.request.quorum;
      if (quorum) {
        if (!quorum.reviewers.includes(p.reviewer.id)) return reject('not-a-quorum-reviewer');
        if (p.verdict === 'approve-with-edits') return reject('edits-need-single-reviewer');
        if (p.verdict === 'approve') {
          if (current.votes.some((v) => v.reviewer.id === p.reviewer.id)) return reject('already-voted');
          const votes = [...current.votes, Object.freeze({ reviewer: p.reviewer, at: logTime, ...(p.comment !== undefined && { comment: p.comment }) })];
          // Below the quorum the vote is counted and the approval stays pending.
          if (votes.length < quorum.required) settle(state, { ...base, votes, status: 'pending' });
          else settle(state, { ...base, votes, ...decision, status: 'approved' });
          return accepted;
        }
      }
      switch (p.verdict) {
        case 'approve':
          settle(state, { ...base, ...decision, status: 'approved' });
          return accepted;
        case 'approve-with-edits':
          if (p.editedArguments === undefined) return reject('missing-edits');
          settle(state, { ...base, ...decision, status: 'approved-with-edits', editedArguments: p.editedArguments });
          return accepted;
        case 'deny':
          settle(state, { ...base, ...decision, status: 'denied' });
          return accepted;
        default: {
          const exhaustive: never = p.verdict;
          return exhaustive;
        }
      }
    }
    case 'ApprovalExpired': {
      const p = event.payload;
      const current = state.approvals.get(p.approvalId);
      if (!current) return reject('unknown-approval');
      const terminal = terminalReason(current);
      if (terminal) return reject(terminal);
      // The request's own deadline is the one that counts, not the one the expirer copied.
      if (!isPastDeadline(current, logTime)) return reject('not-yet-due');
      settle(state, { ...pendingBase(current), status: 'expired', expiredAt: logTime, cause: 'expiry-event' });
      return accepted;
    }
    case 'ApprovalCancelled': {
      const p = event.payload;
      const claim = checkClaim(event, state.keyring);
      if (!claim.attributed) {
        state.forbidden.count += 1;
        return Object.freeze({ kind: 'rejected', reason: 'unattributed-claim', unattributed: claim.reason });
      }
      const current = state.approvals.get(p.approvalId);
      if (!current) return reject('unknown-approval');
      // Only the agent that asked (its own key, naming itself) or the approval service may withdraw a request.
      if (claim.author.kind === 'agent') {
        if (event.tenant !== current.request.scope.tenant) return forbidden(state, 'tenant-mismatch');
        if (claim.author.agentId !== current.request.requester.id || p.by.id !== claim.author.agentId) return forbidden(state, 'not-requester');
      }
      const terminal = terminalReason(current);
      if (terminal) return reject(terminal);
      settle(state, { ...pendingBase(current), status: 'cancelled', cancelledBy: p.by, cancelledAt: logTime });
      return accepted;
    }
    case 'ApprovalUsed':
      return useGrant(state, event, logTime);
    default: {
      const exhaustive: never = event;
      return exhaustive;
    }
  }
}

/**
 * A grant is for one call, once, for a while: only the requester's own key may use it, for the
 * tool call its request named, before its use-by time, and only the first use counts.
 */
function useGrant(state: ApprovalsState, event: ApprovalEvent & { type: 'ApprovalUsed' }, logTime: number): Verdict {
  const p = event.payload;
  const claim = checkClaim(event, state.keyring);
  if (!claim.attributed || claim.author.kind !== 'agent') {
    state.forbidden.count += 1;
    return Object.freeze({ kind: 'rejected', reason: 'unattributed-claim', unattributed: claim.attributed ? 'wrong-signer' : claim.reason });
  }
  const current = state.approvals.get(p.approvalId);
  if (!current) return reject('unknown-approval');
  if (event.tenant !== current.request.scope.tenant) return forbidden(state, 'tenant-mismatch');
  if (claim.author.agentId !== current.request.requester.id || p.by.id !== claim.author.agentId) return forbidden(state, 'not-requester');
  if (current.status !== 'approved' && current.status !== 'approved-with-edits') return reject('not-granted');
  if (p.toolCallId !== current.request.toolCallId) return reject('tool-call-mismatch');
  if (current.usedAt !== undefined) return reject('already-used');
  if (logTime > current.useBy) return reject('past-use-by');
  settle(state, { ...current, usedAt: logTime });
  return accepted;
}

/** What the guard needs to mint a connector grant from an approval. */
export interface ApprovalGrant {
  readonly approvalId: string;
  readonly scope: Scope;
  /** Present for an approval with edits: the call runs with these arguments instead. */
  readonly editedArguments?: JsonValue;
  readonly reviewer: Extract<Approval, { status: 'approved' }>['reviewer'];
  readonly decidedAt: number;
  /** The grant is void after this instant (ms); it is used (once) by an accepted `ApprovalUsed`. */
  readonly useBy: number;
  /** Log time (ms) of the accepted use, once used. */
  readonly usedAt?: number;
}

/** The grant an approved approval confers; undefined while pending, or when denied, expired, cancelled or unknown. */
export function grantFromApproval(state: ApprovalsState, approvalId: string): ApprovalGrant | undefined {
  const approval = state.approvals.get(approvalId);
  if (approval?.status !== 'approved' && approval?.status !== 'approved-with-edits') return undefined;
  return Object.freeze({
    approvalId: approval.approvalId,
    scope: approval.request.scope,
    reviewer: approval.reviewer,
    decidedAt: approval.decidedAt,
    useBy: approval.useBy,
    ...(approval.usedAt !== undefined && { usedAt: approval.usedAt }),
    ...(approval.status === 'approved-with-edits' && { editedArguments: approval.editedArguments }),
  });
}

/**
 * When an approval stopped being able to change anything that matters (ms, log time): a pending
 * one at its deadline (it can only expire after it), a denied, cancelled or expired one when it
 * settled, a granted one when its grant was used or its use-by time passed.
 */
export function settledAt(approval: Approval): number {
  switch (approval.status) {
    case 'pending':
      return approval.deadline;
    case 'approved':
    case 'approved-with-edits':
      return approval.usedAt ?? approval.useBy;
    case 'denied':
      return approval.decidedAt;
    case 'cancelled':
      return approval.cancelledAt;
    case 'expired':
      return approval.expiredAt;
    default: {
      const exhaustive: never = approval;
      return exhaustive;
    }
  }
}

/**
 * Lets go of `approvalId` when it settled more than `retainMs` before `at` (the log time of its own
 * partition), with its history; and of the history of an id that was never an approval, once its
 * last entry is that old. A function of that one id's records only, so every reader (whole log,
 * snapshot, live tail) forgets at the same record. Returns whether it forgot anything.
 */
export function forgetSettled(state: ApprovalsState, approvalId: string, at: number): boolean {
  const approval = state.approvals.get(approvalId);
  const entries = state.history.get(approvalId);
  const since = approval ? settledAt(approval) : entries?.[entries.length - 1]?.logTime;
  if (since === undefined || !(since + state.retainMs < at)) return false;
  state.approvals.delete(approvalId);
  state.history.delete(approvalId);
  state.pruned.count += 1;
  return true;
}

/**
 * Frees the memory of every approval `forgetSettled` would let go of by now: `timeOf(approvalId)`
 * is the log time its partition has reached (undefined: none read yet). What a reader calls now and
 * then; it changes no verdict, since the next record about a forgotten id forgets it anyway.
 */
export function pruneApprovals(state: ApprovalsState, timeOf: (approvalId: string) => number | undefined): number {
  if (state.retainMs === Number.POSITIVE_INFINITY) return 0;
  let pruned = 0;
  for (const approvalId of new Set([...state.approvals.keys(), ...state.history.keys()])) {
    const at = timeOf(approvalId);
    if (at !== undefined && forgetSettled(state, approvalId, at)) pruned += 1;
  }
  return pruned;
}

/** Pending approvals whose deadline has passed at `now` (ms), oldest deadline first: what an expirer appends for. */
export function dueForExpiry(state: ApprovalsState, now: number): Extract<Approval, { status: 'pending' }>[] {
  const due: Extract<Approval, { status: 'pending' }>[] = [];
  for (const approval of state.approvals.values()) {
    if (approval.status === 'pending' && isPastDeadline(approval, now)) due.push(approval);
  }
  return due.sort((a, b) => a.deadline - b.deadline || (a.approvalId < b.approvalId ? -1 : a.approvalId > b.approvalId ? 1 : 0));
}

/** Folds records in offset order: the state any replica reaches from the same log. */
export function foldApprovals(records: Iterable<{ event: ApprovalEvent; logTime: number }>, keyring: Keyring, state: ApprovalsState = createApprovalsState(keyring)): ApprovalsState {
  for (const { event, logTime } of records) applyApprovalEvent(state, event, logTime);
  return state;
}
