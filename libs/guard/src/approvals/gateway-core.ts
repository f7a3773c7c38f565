import {
  type Approval,
  type ApprovalEvent,
  applyApprovalEvent,
  approvalIdForCall,
  commitArguments,
  createApprovalsState,
  grantFromApproval,
  type ApprovalGrant,
  type ApprovalLimits,
  type ApprovalsState,
  isForbiddenClaim,
  LOG_LIMITS,
  pruneApprovals,
} from '@gatehouse/approvals';
import {
  type AgentKey,
  APPROVAL_REQUEST_LIMITS,
  ApprovalCancelledV1,
  ApprovalRequestedV2,
  ApprovalUsedV1,
  canonicalJson,
  createEvent,
  type GrantPosition,
  type JsonValue,
  type Keyring,
  RequestContentSchema,
  type Scope,
  sealContent,
  sealingKeyFor,
  signClaim,
} from '@gatehouse/contracts';
import { ApprovalGatewayError, type ApprovalErrorCode } from './errors.js';
import { type ApprovalGateway, type ApprovalRequestInput, type AwaitApprovalOptions, type GrantedApproval } from './types.js';
import { MAX_TIMER_MS } from '../policy-engine/policies/validation.js';

/** The log under a gateway: the Kafka topic in production, an array in unit tests. */
export interface ApprovalLog {
  /**
   * Resolves once every record that was on the log when the call began has been handed to
   * the listener (starting the reader on first use). Rejects when the log cannot be read, or
   * when `signal` aborts first.
   */
  catchUp(signal: AbortSignal): Promise<void>;
  /** Appends one event; resolves once the log acknowledged it. */
  append(event: ApprovalEvent): Promise<void>;
  close(): Promise<void>;
}

/** How a log hands its records to the gateway's fold. */
export interface ApprovalLogListener {
  /** A read from offset 0 begins: the fold starts over. */
  reset(): void;
  /**
   * One record, in offset order within its partition, with the broker's append time (ms); `live`
   * with where it was read when it arrived after the first replay (what is reported when forged);
   * `partition`, the record's partition, when the log has partitions (the fold lets go of settled
   * approvals by the log time of their own partition).
   */
  record(event: ApprovalEvent, logTime: number, live?: GrantPosition, partition?: number): void;
  /** The reader stopped for good: every wait fails closed; the next call starts a new reader. */
  failed(): void;
}

export interface GatewayCoreOptions {
  /** The approval service keys the fold trusts: a decision or expiry signed by no such key is ignored. */
  readonly keyring: Keyring;
  /** A live record the fold ignored for its signature (a forged or unsigned grant): report it. */
  readonly onUntrusted?: (event: ApprovalEvent, at: GrantPosition) => void;
  /** A live claim the fold ignored because its author may not make it (another tenant's, another requester's): report it. */
  readonly onForbidden?: (event: ApprovalEvent, reason: string, at: GrantPosition) => void;
  /**
   * The agent key that signs this process's claims for a tenant and requester; undefined when
   * the agent may not claim for that tenant (the request is refused before anything is sent).
   */
  readonly claimKey: (tenant: string, requesterId: string) => AgentKey | undefined;
  /** Envelope `source` of the events the gateway appends (`guard:<instance>`). */
  readonly source: string;
  /** Default wait, ms. */
  readonly defaultTimeoutMs: number;
  /** Longest a best-effort cancellation may take, ms. */
  readonly cancelTimeoutMs: number;
  /** How long an approval can matter to this gateway's fold (default: the log's, `LOG_LIMITS`); no wait may be longer than its `maxWaitMs`. */
  readonly limits?: ApprovalLimits;
  /**
   * How long the fold remembers a settled approval, ms (default: for ever). With it, the fold
   * forgets as the approval service's does (`forgetSettled`), judged by the log time of the
   * approval's own partition, so a long-running agent holds the approvals of that window, not
   * of its lifetime.
   */
  readonly retainMs?: number;
}

/** Least time between two sweeps of settled approvals, ms: a sweep walks the whole fold. */
const PRUNE_EVERY_MS = 1_000;

interface Waiter {
  settle(approval: TerminalApproval | undefined, error?: ApprovalGatewayError): void;
}

const CANCEL_REASON = 'the requester aborted the call';

/** Longest a grant's use may take to be read back, ms. Past it the call fails closed. */
const USE_TIMEOUT_MS = 10_000;

type TerminalApproval = Exclude<Approval, { status: 'pending' }>;

function terminal(approval: Approval | undefined): approval is TerminalApproval {
  return approval !== undefined && approval.status !== 'pending';
}

/** Resolves with `promise`, or with undefined after `ms`; the timer never outlives the race. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}


/** The agent a claim names: the one its key is bound to, with the role the caller gave. */
function authorOf(key: AgentKey, request: ApprovalRequestInput) {
  return { id: key.agent.id, role: request.requester.role, kind: 'agent' as const };
}

/** What `describe` answers: the approval a request is about. */
export interface DescribedApproval {
  readonly approvalId: string;
  readonly scope: Scope;
  /** The arguments as a reviewer is shown them (redacted values replaced by the marker). */
  readonly view: JsonValue;
}

const bytes = (value: unknown) => Buffer.byteLength(canonicalJson(value), 'utf8');

/** The fold's bounds on the large fields, checked before sending: an oversized request is refused here, not ignored there. */
function fieldsTooLarge(content: { arguments: JsonValue; dryRunPreview?: JsonValue; inputSchema?: Record<string, JsonValue> }): boolean {
  return [content.arguments, content.dryRunPreview, content.inputSchema].some((field) => field !== undefined && bytes(field) > APPROVAL_REQUEST_LIMITS.fieldBytes);
}

export function validateTimeout(value: unknown, name: string, where: string): number {
  // Node timers hold at most 2^31-1 ms; a longer one would fire at once.
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > MAX_TIMER_MS) throw new TypeError(`${where}: ${name} must be a positive integer (ms) of at most ${MAX_TIMER_MS}`);
  return value as number;
}

/**
 * The gateway's logic over any `ApprovalLog`: one fold (`@gatehouse/approvals`) of every
 * record the log hands over, and waiters resolved from it. A call catches up with the log
 * before it decides whether to append its request, so a decision made while no process was
 * waiting is found by replay, and a retried call waits on its existing approval.
 */
export class ApprovalGatewayCore implements ApprovalGateway {
  private state: ApprovalsState;
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Requests this gateway appended that its fold has not read back yet: never appended twice. */
  private readonly appended = new Map<string, Promise<void>>();
  private closed = false;
  /** Counts reader failures: a wait that began before one cannot trust the fold it read. */
  private failures = 0;
  readonly log: ApprovalLog;

  constructor(
    logFactory: (listener: ApprovalLogListener) => ApprovalLog,
    private readonly options: GatewayCoreOptions,
  ) {
    const limits = options.limits ?? LOG_LIMITS;
    const retainMs = options.retainMs ?? Number.POSITIVE_INFINITY;
    this.state = createApprovalsState(options.keyring, limits, retainMs);
    this.log = logFactory({
      reset: () => {
        this.state = createApprovalsState(options.keyring, limits, retainMs);
        this.partitionOf.clear();
        this.partitionTimes.clear();
      },
      record: (event, logTime, live, partition) => {
        this.apply(event, logTime, live);
        if (partition !== undefined) this.advance(event.payload.approvalId, partition, logTime);
      },
      failed: () => {
        this.failures += 1;
        this.failAll('APPROVAL.UNAVAILABLE');
      },
    });
  }

  /** The partition each approval held in the fold was read on, and the log time each partition has reached. */
  private readonly partitionOf = new Map<string, number>();
  private readonly partitionTimes = new Map<number, number>();
  private lastPrune = Date.now();

  /**
   * Notes where `approvalId`'s record was read and how far its partition has come; now and then
   * lets go of every settled approval its partition's time says the service's fold forgot too.
   * Forgetting changes no verdict: the next record about a forgotten id would forget it anyway.
   */
  private advance(approvalId: string, partition: number, logTime: number): void {
    if (this.state.retainMs === Number.POSITIVE_INFINITY) return;
    if (this.state.approvals.has(approvalId) || this.state.history.has(approvalId)) this.partitionOf.set(approvalId, partition);
    if (logTime > (this.partitionTimes.get(partition) ?? Number.NEGATIVE_INFINITY)) this.partitionTimes.set(partition, logTime);
    const now = Date.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    pruneApprovals(this.state, (id) => {
      const p = this.partitionOf.get(id);
      return p === undefined ? undefined : this.partitionTimes.get(p);
    });
    for (const id of this.partitionOf.keys()) if (!this.state.approvals.has(id) && !this.state.history.has(id)) this.partitionOf.delete(id);
  }

  /** The fold as this gateway has read it so far (for reviewers in tests and diagnostics). */
  get fold(): ApprovalsState {
    return this.state;
  }

  private apply(event: ApprovalEvent, logTime: number, live?: GrantPosition): void {
    const verdict = applyApprovalEvent(this.state, event, logTime);
    if (live && verdict.kind === 'rejected' && verdict.reason === 'untrusted-signature') this.options.onUntrusted?.(event, live);
    if (live && isForbiddenClaim(verdict)) this.options.onForbidden?.(event, verdict.unattributed ?? verdict.reason, live);
    const approvalId = event.payload.approvalId;
    if (event.type === 'ApprovalRequested' && this.state.approvals.has(approvalId)) this.appended.delete(approvalId);
    const approval = this.state.approvals.get(approvalId);
    const waiters = this.waiters.get(approvalId);
    if (waiters && terminal(approval)) for (const waiter of [...waiters]) waiter.settle(approval);
  }

  private failAll(code: ApprovalErrorCode): void {
    for (const [approvalId, waiters] of [...this.waiters]) {
      for (const waiter of [...waiters]) waiter.settle(undefined, new ApprovalGatewayError(code, approvalId));
    }
  }

  async awaitApproval(request: ApprovalRequestInput, options: AwaitApprovalOptions = {}): Promise<GrantedApproval> {
    if (this.closed) throw new ApprovalGatewayError('APPROVAL.CLOSED');
    if (options === null || typeof options !== 'object') throw new TypeError('awaitApproval: options must be an object');
    const timeoutMs = options.timeoutMs === undefined ? this.options.defaultTimeoutMs : validateTimeout(options.timeoutMs, 'timeoutMs', 'awaitApproval');

    const signal = options.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('awaitApproval: signal must be an AbortSignal');
    const { approvalId, event, key } = this.requestEvent(request);
    if (signal?.aborted) throw new ApprovalGatewayError('APPROVAL.ABORTED', approvalId);

    const operation = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      operation.abort();
    }, timeoutMs);
    const onAbort = () => operation.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const aborted = () => signal?.aborted === true && !timedOut;
    const failures = this.failures;
    try {
      try {
        await this.log.catchUp(operation.signal);
      } catch {
        // Not having read the log to its end is "cannot confirm": fail closed, ask nothing.
        if (aborted()) throw new ApprovalGatewayError('APPROVAL.ABORTED', approvalId);
        throw new ApprovalGatewayError(this.closed ? 'APPROVAL.CLOSED' : 'APPROVAL.UNAVAILABLE', approvalId);
      }
      let published = false;
      if (!this.state.approvals.has(approvalId)) published = await this.appendOnce(approvalId, event);
      // The reader may have failed while we appended: nothing would ever wake this wait.
      if (this.failures !== failures) throw new ApprovalGatewayError('APPROVAL.UNAVAILABLE', approvalId);
      const approval = await this.waitTerminal(approvalId, operation.signal);
      if (!approval) {
        if (aborted()) {
          await this.withdraw(approvalId, request, key, published);
          throw new ApprovalGatewayError('APPROVAL.ABORTED', approvalId);
        }
        // Our own deadline passed: the request stays, its deadline on the log governs.
        throw new ApprovalGatewayError('APPROVAL.TIMEOUT', approvalId);
      }
      switch (approval.status) {
        case 'approved':
        case 'approved-with-edits': {
          const grant = grantFromApproval({ ...this.state, approvals: new Map([[approvalId, approval]]) }, approvalId);
          if (!grant) throw new ApprovalGatewayError('APPROVAL.UNAVAILABLE', approvalId);
          return Object.freeze({ grant, published });
        }
        case 'denied':
          throw new ApprovalGatewayError('APPROVAL.DENIED', approvalId);
        case 'expired':
          throw new ApprovalGatewayError('APPROVAL.EXPIRED', approvalId);
        case 'cancelled':
          throw new ApprovalGatewayError('APPROVAL.CANCELLED', approvalId);
        default: {
          const exhaustive: never = approval;
          return exhaustive;
        }
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * The approval a request is about, without asking anything: its id, its scope (the arguments
   * hash commits to the real arguments) and the view a reviewer is shown. Throws
   * `APPROVAL.REQUEST_INVALID` for a request this agent may not make.
   */
  describe(request: ApprovalRequestInput): DescribedApproval {
    return this.requestEvent(request).described;
  }

  private requestEvent(request: ApprovalRequestInput) {
    try {
      if (request === null || typeof request !== 'object') throw new TypeError('request must be an object');
      const { tenant, connectorId, executionId, toolCallId } = request.call;
      const key = this.options.claimKey(tenant, request.requester.id);
      if (!key) throw new TypeError('the agent may not claim for this tenant');
      const committed = commitArguments(request.arguments, request.redactedPaths ?? [], key, { tenant, connectorId, executionId, toolCallId });
      const scope: Scope = { tenant, connectorId, executionId, argumentsHash: committed.argumentsHash };
      // The requester is the agent the key is bound to: a claim names its own author.
      const requester = authorOf(key, request);
      const approvalId = approvalIdForCall(scope, requester.id, toolCallId);
      // A later deadline would outlast the request's life in this gateway's own fold: refused, not shortened.
      const maxWaitMs = this.state.limits.maxWaitMs;
      if (Date.parse(request.deadline) - Date.now() > maxWaitMs) throw new TypeError(`the deadline is more than the gateway's maxApprovalWaitMs (${maxWaitMs} ms) away`);
      const content = RequestContentSchema.parse({
        arguments: committed.view,
        ...(request.inputSchema === undefined ? {} : { inputSchema: request.inputSchema }),
        ...(request.toolDescription === undefined ? {} : { toolDescription: request.toolDescription }),
        ...(request.dryRunPreview === undefined ? {} : { dryRunPreview: request.dryRunPreview }),
        ...(request.onBehalfOf === undefined ? {} : { onBehalfOf: request.onBehalfOf }),
        reason: request.reason,
      });
      if (fieldsTooLarge(content)) throw new TypeError('the request is past the size bounds');
      // With the tenant's content key, what the request says of the call is sealed: other tenants' agents read the topic too.
      const contentKey = sealingKeyFor(this.options.keyring.content, tenant);
      const body = contentKey ? { arguments: null, reason: '', sealed: sealContent(content, contentKey, { type: 'ApprovalRequested', approvalId, tenant }) } : content;
      const event = createEvent(
        ApprovalRequestedV2,
        this.metaOf(request, approvalId),
        {
          approvalId,
          scope,
          redactedPaths: Object.keys(committed.redactionDigests).sort(),
          redactionDigests: { ...committed.redactionDigests },
          toolCallId,
          requester,
          deadline: request.deadline,
          ...(request.quorum === undefined ? {} : { quorum: { required: request.quorum.required, reviewers: [...request.quorum.reviewers] } }),
          ...body,
        },
      );
      // The signature adds about 150 bytes to the event the fold measures.
      if (bytes(event) + 256 > APPROVAL_REQUEST_LIMITS.eventBytes) throw new TypeError('the request is past the size bounds');
      return { approvalId, event: signClaim(event, key), key, described: Object.freeze({ approvalId, scope, view: committed.view }) };
    } catch {
      // The contract error names fields and values; the caller learns only that it was invalid.
      throw new ApprovalGatewayError('APPROVAL.REQUEST_INVALID');
    }
  }

  /** The envelope of every event this gateway appends about a call: its tenant, the approval, the run and trace. */
  private metaOf(request: ApprovalRequestInput, approvalId: string) {
    return {
      source: this.options.source,
      tenant: request.call.tenant,
      subject: approvalId,
      ...(request.correlationId === undefined ? {} : { correlationId: request.correlationId }),
      ...(request.traceparent === undefined ? {} : { trace: { traceparent: request.traceparent } }),
    };
  }

  /** Appends the request unless this gateway already did (concurrent callers share one append). */
  private async appendOnce(approvalId: string, event: ApprovalEvent): Promise<boolean> {
    const earlier = this.appended.get(approvalId);
    if (earlier) {
      try {
        await earlier;
        return false;
      } catch {
        // The earlier append failed: this caller tries its own.
      }
    }
    const append = this.log.append(event);
    this.appended.set(approvalId, append);
    try {
      await append;
      return true;
    } catch {
      if (this.appended.get(approvalId) === append) this.appended.delete(approvalId);
      throw new ApprovalGatewayError(this.closed ? 'APPROVAL.CLOSED' : 'APPROVAL.UNAVAILABLE', approvalId);
    }
  }

  /** The approval once terminal; undefined when `signal` aborts first. */
  private waitTerminal(approvalId: string, signal: AbortSignal): Promise<TerminalApproval | undefined> {
    const now = this.state.approvals.get(approvalId);
    if (terminal(now)) return Promise.resolve(now);
    if (signal.aborted) return Promise.resolve(undefined);
    if (this.closed) return Promise.reject(new ApprovalGatewayError('APPROVAL.CLOSED', approvalId));
    return new Promise((resolve, reject) => {
      const waiters = this.waiters.get(approvalId) ?? new Set<Waiter>();
      this.waiters.set(approvalId, waiters);
      const onAbort = () => waiter.settle(undefined);
      const waiter: Waiter = {
        settle: (approval, error) => {
          waiters.delete(waiter);
          if (waiters.size === 0 && this.waiters.get(approvalId) === waiters) this.waiters.delete(approvalId);
          signal.removeEventListener('abort', onAbort);
          if (error) reject(error);
          else resolve(approval);
        },
      };
      waiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async useGrant(grant: ApprovalGrant, request: ApprovalRequestInput): Promise<void> {
    if (this.closed) throw new ApprovalGatewayError('APPROVAL.CLOSED');
    const { approvalId, key } = this.requestEvent(request);
    if (grant === null || typeof grant !== 'object' || grant.approvalId !== approvalId) throw new ApprovalGatewayError('APPROVAL.REQUEST_INVALID', approvalId);
    const current = this.state.approvals.get(approvalId);
    if ((current?.status === 'approved' || current?.status === 'approved-with-edits') && current.usedAt !== undefined) throw new ApprovalGatewayError('APPROVAL.USED', approvalId);
    const event = signClaim(
      createEvent(
        ApprovalUsedV1,
        this.metaOf(request, approvalId),
        { approvalId, toolCallId: request.call.toolCallId, by: authorOf(key, request) },
      ),
      key,
    );
    const failures = this.failures;
    try {
      await this.log.append(event);
      // Our own use, read back through the fold: log order decides between racing processes.
      await this.log.catchUp(AbortSignal.timeout(USE_TIMEOUT_MS));
    } catch {
      throw new ApprovalGatewayError(this.closed ? 'APPROVAL.CLOSED' : 'APPROVAL.UNAVAILABLE', approvalId);
    }
    if (this.failures !== failures) throw new ApprovalGatewayError('APPROVAL.UNAVAILABLE', approvalId);
    const verdict = this.state.history.get(approvalId)?.find((h) => h.eventId === event.id)?.verdict;
    if (verdict?.kind === 'accepted') return;
    if (verdict?.kind === 'rejected' && verdict.reason === 'already-used') throw new ApprovalGatewayError('APPROVAL.USED', approvalId);
    if (verdict?.kind === 'rejected' && verdict.reason === 'past-use-by') throw new ApprovalGatewayError('APPROVAL.EXPIRED', approvalId);
    throw new ApprovalGatewayError('APPROVAL.UNAVAILABLE', approvalId);
  }

  /** Best effort: withdraws a pending request nobody else in this process still waits for. */
  private async withdraw(approvalId: string, request: ApprovalRequestInput, key: AgentKey, published: boolean): Promise<void> {
    const current = this.state.approvals.get(approvalId);
    if (current ? current.status !== 'pending' : !published) return;
    if ((this.waiters.get(approvalId)?.size ?? 0) > 0) return;
    try {
      const event = signClaim(
        createEvent(
          ApprovalCancelledV1,
          this.metaOf(request, approvalId),
          { approvalId, by: authorOf(key, request), reason: CANCEL_REASON },
        ),
        key,
      );
      await within(
        this.log.append(event).catch(() => undefined),
        this.options.cancelTimeoutMs,
      );
    } catch {
      // Best effort: the request's deadline on the log still ends it.
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.failAll('APPROVAL.CLOSED');
    await this.log.close();
  }
}
