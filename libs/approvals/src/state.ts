import { type Actor, type ApprovalRequestedV1Event, type JsonValue, type Keyring, type TraceContext, type UnattributedReason, type UntrustedReason } from '@gatehouse/contracts';

/**
 * What a request asked for, as the log recorded it. Second-edition requests add the tool call
 * and the redaction digests; the fold counts only those (a first-edition request has no author).
 */
export type ApprovalRequest = ApprovalRequestedV1Event['payload'] & { readonly toolCallId?: string; readonly redactionDigests?: Readonly<Record<string, string>> };

interface ApprovalBase {
  readonly approvalId: string;
  readonly request: ApprovalRequest;
  /** Log append time (ms) of the request. */
  readonly requestedAt: number;
  /** The request's deadline (ms); a decision logged after it does not count. */
  readonly deadline: number;
  /** Approvals cast so far under a quorum, oldest first (empty without one). */
  readonly votes: readonly Vote[];
  /** The request event's id and correlation id: decisions about it carry them on, so the trail joins up. */
  readonly requestEventId: string;
  readonly correlationId?: string;
  /** The request's W3C trace context: the service's decision on it continues that trace (no verdict reads it). */
  readonly trace?: TraceContext;
}

/** One reviewer's approval counted towards a quorum. */
export interface Vote {
  readonly reviewer: Actor;
  /** Log append time (ms) of the vote. */
  readonly at: number;
  readonly comment?: string;
}

interface Decision {
  readonly reviewer: Actor;
  /** Log append time (ms) of the winning decision. */
  readonly decidedAt: number;
  readonly comment?: string;
}

/** What an approval's grant is worth: until when, and whether it was used (a grant is for one execution). */
interface GrantUse {
  /** The grant is void after this instant (ms), judged by the log time of its use. */
  readonly useBy: number;
  /** Log append time (ms) of the accepted use, once used. */
  readonly usedAt?: number;
}

/** One approval's lifecycle: pending until the first terminal event on the log. */
export type Approval =
  | (ApprovalBase & { readonly status: 'pending' })
  | (ApprovalBase & Decision & GrantUse & { readonly status: 'approved' })
  | (ApprovalBase & Decision & GrantUse & { readonly status: 'approved-with-edits'; readonly editedArguments: JsonValue })
  | (ApprovalBase & Decision & { readonly status: 'denied' })
  | (ApprovalBase & {
      readonly status: 'cancelled';
      readonly cancelledBy: Actor;
      /** Log append time (ms) of the cancellation. */
      readonly cancelledAt: number;
    })
  | (ApprovalBase & {
      readonly status: 'expired';
      /** Log time of the event that settled it: the expiry event, or the late decision. */
      readonly expiredAt: number;
      readonly cause: 'expiry-event' | 'late-decision';
    });

export type ApprovalStatus = Approval['status'];

/** What the fold decided about one event: writers read their own event's verdict back. */
export type Verdict =
  | { readonly kind: 'accepted' }
  /** A retried request for an approval that already exists: wait on the existing one. */
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'rejected'; readonly reason: RejectionReason; readonly untrusted?: UntrustedReason; readonly unattributed?: UnattributedReason };

export type RejectionReason =
  | 'unknown-approval'
  | 'already-decided' // a decision or expiry after a decision
  | 'expired' // a decision or expiry after the approval expired
  | 'cancelled' // anything after the requester withdrew the request
  | 'not-requester' // a cancellation by someone other than the requester or the system
  | 'past-deadline' // a decision logged after the deadline: the approval expires instead
  | 'not-yet-due' // an expiry logged at or before the deadline
  | 'self-approval' // the reviewer is the requester, or the principal it acts for
  | 'scope-mismatch' // a request whose id is not derived from its scope
  | 'missing-edits' // approve-with-edits without edited arguments (the contract forbids it)
  | 'not-a-quorum-reviewer' // under a quorum, a decision by someone not listed
  | 'already-voted' // under a quorum, a second approval by the same reviewer
  | 'edits-need-single-reviewer' // under a quorum, approve-with-edits (reviewers could disagree on the edits)
  | 'untrusted-signature' // a decision or expiry not signed by a trusted key of the approval service
  // The agent is the adversary: a claim (request, cancellation) its author may not make.
  | 'unattributed-claim' // not signed by a trusted agent key bound to the event's tenant (or the approval service)
  | 'legacy-request' // a first-edition request: no author, no commitment; read, never granted
  | 'requester-mismatch' // a request whose requester is not the agent that signed it
  | 'tenant-mismatch' // a request whose scope names another tenant than its envelope
  | 'commitment-mismatch' // the shown arguments are not the ones the arguments hash commits to
  | 'too-large' // an agent-written event past APPROVAL_REQUEST_LIMITS
  // A grant is for one call, once, for a while.
  | 'not-granted' // a use of an approval that is not approved
  | 'already-used' // a second use of a grant
  | 'past-use-by' // a use logged after the grant's use-by time
  | 'tool-call-mismatch' // a use for another tool call than the request named
  | 'other-request' // a decision naming (by causation id) another request than the one the approval holds: a decision replayed onto a re-request
  // Tenants do not read each other.
  | 'unsealed' // a request in clear for a tenant whose content key the reader holds
  | 'sealed-tampered' // a sealed box that does not open with its key (altered, or moved to another request)
  | 'sealed-elsewhere'; // a sealed box for a key this reader does not hold: another tenant's, not its business

/** One event as the fold saw it, applied or not: the "full history" of an approval. */
export interface HistoryEntry {
  readonly eventId: string;
  readonly type: 'ApprovalRequested' | 'ApprovalDecided' | 'ApprovalExpired' | 'ApprovalCancelled' | 'ApprovalUsed';
  readonly logTime: number;
  readonly verdict: Verdict;
  /** Requester of a request, reviewer of a decision, who withdrew a cancellation. */
  readonly actor?: Actor;
  /** The verdict a decision asked for. */
  readonly decision?: 'approve' | 'approve-with-edits' | 'deny';
}

/**
 * The fold's whole state, advanced in place (a replay must not copy maps per event);
 * entries are frozen values. Replaying the same records into a new state gives an equal state.
 * `history` also holds events about ids that were never requested, so nothing on the log is lost.
 */
export interface ApprovalsState {
  readonly approvals: Map<string, Approval>;
  readonly history: Map<string, HistoryEntry[]>;
  /** The approval service's public keys: a decision or expiry counts only when signed by one. */
  readonly keyring: Keyring;
  /** Granting events the fold ignored for their signature (each also in `history`). */
  readonly untrusted: { count: number };
  /** Claims the fold ignored because their author may not make them (each also in `history`). */
  readonly forbidden: { count: number };
  /** How long an approval can matter: what bounds the history a reader needs (`approvalHorizon`). */
  readonly limits: ApprovalLimits;
  /**
   * How long a settled approval stays in the fold after it settled (ms, by the log time of its own
   * partition; Infinity: for ever). Then it leaves the fold's memory, and its history with it: an
   * event about it later is about an unknown approval (`forgetSettled`, `pruneApprovals`).
   */
  readonly retainMs: number;
  /** Settled approvals (and histories of unknown ids) the fold has let go of. */
  readonly pruned: { count: number };
}

/**
 * How long an approval can matter, in log time: a request is pending at most `maxWaitMs` after it
 * was logged (a later deadline counts as that), and a grant is usable at most `maxGrantTtlMs`
 * after its decision (a later use-by time counts as that). So no request logged more than the two
 * together before an instant can grant at that instant: a reader that starts from then has every
 * approval that can still grant.
 */
export interface ApprovalLimits {
  readonly maxWaitMs: number;
  readonly maxGrantTtlMs: number;
}

/** The longest a request can stay pending: the longest deadline a connector can be configured with (30 days). */
export const MAX_APPROVAL_WAIT_MS = 30 * 24 * 60 * 60 * 1000;
/** The longest grant TTL the approval service can be configured with (GATEHOUSE_APPROVAL_GRANT_TTL_MS): 7 days. */
export const MAX_GRANT_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * How long a fold remembers a settled approval, ms, unless configured: 7 days. The approval
 * service's default (GATEHOUSE_APPROVAL_RETAIN_MS) and the agent gateway's (`retainMs`): folds that
 * forget at the same time give the same verdicts.
 */
export const DEFAULT_SETTLED_RETAIN_MS = 7 * 24 * 60 * 60 * 1000;

/** The limits of a fold that holds the whole log (the approval service's): the largest any writer can use, so they change nothing a writer wrote. */
export const LOG_LIMITS: ApprovalLimits = Object.freeze({ maxWaitMs: MAX_APPROVAL_WAIT_MS, maxGrantTtlMs: MAX_GRANT_TTL_MS });

/** A fresh, empty state trusting `keyring`: the start of every replay. */
export function createApprovalsState(keyring: Keyring, limits: ApprovalLimits = LOG_LIMITS, retainMs = Number.POSITIVE_INFINITY): ApprovalsState {
  if (!(retainMs > 0)) throw new TypeError('retainMs must be a positive number of milliseconds (or Infinity)');
  return { approvals: new Map(), history: new Map(), keyring, untrusted: { count: 0 }, forbidden: { count: 0 }, limits, retainMs, pruned: { count: 0 } };
}

/**
 * The log time (ms) from which a reader with `limits` must read to hold every approval that can
 * still grant at `now` or later: a request logged before it is past its wait and its grant's use-by
 * time by `now`. A fold started there grants, from `now` on, what a fold of the whole log grants.
 */
export function approvalHorizon(limits: ApprovalLimits, now: number): number {
  return now - limits.maxWaitMs - limits.maxGrantTtlMs;
}

/**
 * The shortest topic retention (`retention.ms`) under which a fold of what the approvals topic
 * still holds reaches, from `now` on, the state and verdicts of a fold of the whole log, when that
 * fold forgets settled approvals `retainMs` after they settled. An approval with a record the broker
 * deleted was requested before `now - retention`, so it settled within `limits`' two windows of
 * that; the whole-log fold let go of it `retainMs` later, and the other fold of the history it
 * began for that id from the remaining records (their last one logged before the first fold let
 * go) at most `retainMs` after that: twice the retention after the two windows. Infinity (keep the
 * log for ever) when the fold never forgets.
 */
export function approvalLogRetentionMs(limits: ApprovalLimits, retainMs: number): number {
  return limits.maxWaitMs + limits.maxGrantTtlMs + 2 * retainMs;
}
