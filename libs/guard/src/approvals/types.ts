import { type ApprovalGrant } from '@gatehouse/approvals';
import { type Actor, type JsonValue, type Scope } from '@gatehouse/contracts';

/**
 * What a caller asks a reviewer. The gateway makes the request its agent's claim: it commits to
 * the real arguments (redacting `redactedPaths` behind salted digests), derives the approval id
 * from the call, names its own agent as the requester and signs it with the agent's key.
 */
export interface ApprovalRequestInput {
  /** The exact call: one approval grants one execution of one tool call. */
  readonly call: { readonly tenant: string; readonly connectorId: string; readonly executionId: string; readonly toolCallId: string };
  /** The real arguments of the call (JSON): the reviewer is shown them with `redactedPaths` redacted. */
  readonly arguments: JsonValue;
  /** Concrete JSON pointers of the values to redact (what `redactArguments` reports). */
  readonly redactedPaths?: readonly string[];
  /** JSON Schema of the tool's input, so a reviewer's edit can be validated. */
  readonly inputSchema?: Record<string, JsonValue>;
  readonly toolDescription?: string;
  /** The connector's dry-run result, when it has one. */
  readonly dryRunPreview?: JsonValue;
  /** Who the caller thinks asks; the request names the gateway's agent (its key's binding), with this role. */
  readonly requester: Actor;
  /** The principal the agent acts for (the trusted caller): barred from approving, like the requester. */
  readonly onBehalfOf?: Actor;
  /** `required` approvals of the listed reviewer ids settle the request (any of them may deny). */
  readonly quorum?: { readonly required: number; readonly reviewers: readonly string[] };
  /** Static text: why approval is needed. */
  readonly reason: string;
  /** ISO instant after which the request is void (judged by the log's append time). */
  readonly deadline: string;
  /** Correlation id of the envelope: the run id the audit records use. */
  readonly correlationId?: string;
  /** W3C traceparent of the request. */
  readonly traceparent?: string;
}

export interface AwaitApprovalOptions {
  /**
   * How long to wait for a terminal decision, ms (default 60,000). Past it the wait fails
   * with `APPROVAL.TIMEOUT`; the request stays on the log (its deadline governs), so a retry
   * of the same call finds it and waits again.
   */
  readonly timeoutMs?: number;
  /** Aborting withdraws the request (`ApprovalCancelled`, best effort) and fails with `APPROVAL.ABORTED`. */
  readonly signal?: AbortSignal;
}

/** A grant the log confers, and whether this call was the one that asked for it. */
export interface GrantedApproval {
  readonly grant: ApprovalGrant;
  /** True when this call appended the request; false when it found one on the log. */
  readonly published: boolean;
}

/**
 * Asks a person through the approvals log and waits for the decision. The log is the
 * arbiter: the outcome is what the shared fold (`@gatehouse/approvals`) makes of it.
 */
export interface ApprovalGateway {
  /**
   * Finds the approval for `request.scope` on the log, or appends the request when there is
   * none, then waits until the approval is terminal. Resolves with the grant when approved
   * (with or without edits); rejects with an `ApprovalGatewayError` otherwise.
   */
  awaitApproval(request: ApprovalRequestInput, options?: AwaitApprovalOptions): Promise<GrantedApproval>;
  /**
   * The approval a request is about (id, scope, the view a reviewer sees), computed as
   * `awaitApproval` would, without reading or writing the log. Throws `APPROVAL.REQUEST_INVALID`
   * for a request this agent may not make.
   */
  describe(request: ApprovalRequestInput): { readonly approvalId: string; readonly scope: Scope; readonly view: JsonValue };
  /**
   * Uses `grant` for the call `request` describes, once: appends the agent's signed
   * `ApprovalUsed` and resolves when the fold accepted it (the first use of the grant, before its
   * use-by time). Rejects with `APPROVAL.USED` when the grant was used already (by this or any
   * process), `APPROVAL.EXPIRED` past its use-by time, `APPROVAL.UNAVAILABLE` when the log cannot
   * confirm. The tool runs only after this resolves.
   */
  useGrant(grant: ApprovalGrant, request: ApprovalRequestInput): Promise<void>;
  /** Stops reading and writing; pending waits fail with `APPROVAL.CLOSED`. */
  close(): Promise<void>;
}
