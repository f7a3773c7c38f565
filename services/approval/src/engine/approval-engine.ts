import { EventEmitter } from 'node:events';
import { ApprovalExpiredV1, type ContentKeys, createEvent, DecisionRecordedV1, forbiddenClaimDecision, type Keyring, signEvent, type SigningKey, topicName } from '@gatehouse/contracts';
import { type Approval, type ApprovalEvent, approvalLogRetentionMs, type ApprovalsState, DEFAULT_GRANT_TTL_MS, dueForExpiry, isForbiddenClaim, LOG_LIMITS, type Verdict } from '@gatehouse/approvals';
import { approvalProjection, DEFAULT_APPROVAL_RETAIN_MS } from '@gatehouse/approval-projection';
import { assertTopicRetention, type DecodedRecord, type FoldLog, type FoldProjection, type FoldStatus, type ServiceFold, type ServiceFoldOptions, startServiceFold } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { ApprovalError } from '../errors.js';

/** The envelope source of every event the service appends. */
export const APPROVAL_SOURCE = 'service:approval';

export interface ApprovalEngineOptions {
  readonly kafka: Kafka;
  /** Signs every decision and expiry this service appends. */
  readonly signingKey: SigningKey;
  /** The approval service keys the fold trusts (this service's own public key among them). */
  readonly keyring: Keyring;
  readonly namespace?: string | undefined;
  readonly projection?: FoldProjection<'approvals', ApprovalsState> | undefined;
  /**
   * Scale-out (issue 19): the replicas share the approvals topic's partitions and this one folds only
   * its own (`startServiceFold`); a decision on another partition's approval is forwarded to its owner.
   */
  readonly owned?: Omit<NonNullable<ServiceFoldOptions<'approvals', ApprovalsState, Verdict>['owned']>, 'group'>;
  readonly decisionDeadlineMs?: number;
  /** Least time between two snapshots of the fold, ms (see `FoldEngineOptions`). */
  readonly snapshotIntervalMs?: number;
  /** How long the fold keeps a settled approval, ms (default 7 days): the projection's `retainMs`. */
  readonly retainMs?: number | undefined;
  /** How often pending approvals past their deadline are expired, ms. 0 turns the sweeper off. */
  readonly expirySweepMs?: number;
  /** How long a grant may be used after its decision, ms (default 15 minutes): the decision's `useBy`. */
  readonly grantTtlMs?: number;
  readonly log?: FoldLog;
  /** Told of every live change once the projection committed it, where the event stream is (reviewer webhooks). */
  readonly onCommitted?: (change: CommittedChange) => void;
}

/** A change to one approval, as the live fold applied it: what the event stream sends reviewers. */
export interface ApprovalChange {
  readonly approvalId: string;
  readonly type: ApprovalEvent['type'];
  readonly status: Approval['status'];
  readonly tenant: string;
  readonly connectorId: string;
  readonly at: string;
}

/** A live change once the projection committed it: the record, the fold's verdict on it and the approval as it left it. */
export interface CommittedChange {
  readonly record: DecodedRecord<'approvals'>;
  readonly verdict: Verdict;
  /** A frozen value: later events replace it in the fold, never change it. */
  readonly approval: Approval;
}

export interface ApprovalStatusReport extends FoldStatus {
  readonly approvals: number;
  readonly pending: number;
  readonly expiriesAppended: number;
  /** Decisions or expiries the fold ignored for their signature. */
  readonly untrustedGrants: number;
  /** Requests or cancellations the fold ignored because their author may not make them. */
  readonly forbiddenClaims: number;
}

/** An expiry appended recently for an approval is not appended again before this, ms. */
const EXPIRY_RETRY_MS = 5_000;

/**
 * The approval service's decision point: the shared approval fold over `gatehouse.approvals.v1`
 * (every partition, or, scaled out, the partitions this replica owns: `ServiceFold`). A decision is appended and answered by the fold's verdict on it; an
 * expiry sweeper appends `expired` for pending approvals past their deadline (the fold judges
 * the deadline by log time, so a sweep that runs early is rejected and repeated).
 */
export class ApprovalEngine {
  private engine!: ServiceFold<'approvals', ApprovalsState, Verdict>;
  private readonly changes = new EventEmitter();
  private sweeper: NodeJS.Timeout | undefined;
  private readonly expiring = new Map<string, number>();
  private expiries = 0;
  private forbiddenReported = 0;
  private onCommitted: ((change: CommittedChange) => void) | undefined;

  private constructor(
    private readonly log: FoldLog,
    private readonly signingKey: SigningKey,
    /** How long a grant may be used after its decision, ms. */
    readonly grantTtlMs: number,
    /** The tenants' content keys: decisions are sealed like the requests they answer. */
    readonly contentKeys: ContentKeys | undefined,
  ) {
    // Every open event stream listens; the count is bounded by connections, not a leak.
    this.changes.setMaxListeners(0);
  }

  static async start(options: ApprovalEngineOptions): Promise<ApprovalEngine> {
    const approvals = new ApprovalEngine(options.log ?? (() => undefined), options.signingKey, options.grantTtlMs ?? DEFAULT_GRANT_TTL_MS, options.keyring.content);
    approvals.onCommitted = options.onCommitted;
    const keyring = options.keyring;
    // A fold of what the topic still holds reaches this fold's state and verdicts only under this
    // retention (libs/approvals/src/retention.spec.ts): on a topic that could delete sooner, a
    // restart without the snapshot, a replay or an agent's gateway could grant or forget what this
    // service did not. Refused before anything is read.
    const needMs = approvalLogRetentionMs(LOG_LIMITS, options.retainMs ?? DEFAULT_APPROVAL_RETAIN_MS);
    await assertTopicRetention(options.kafka, topicName('approvals', options.namespace), { atLeastMs: needMs });
    approvals.engine = await startServiceFold({
      kafka: options.kafka,
      namespace: options.namespace,
      projection: options.projection,
      ...(options.owned && { owned: { ...options.owned, group: 'approval-fold' } }),
      topicId: 'approvals',
      fold: approvalProjection(keyring, { retainMs: options.retainMs }).fold,
      decisionDeadlineMs: options.decisionDeadlineMs,
      snapshotIntervalMs: options.snapshotIntervalMs,
      log: options.log,
      unavailable: (reason, cause) => new ApprovalError('APPROVAL.UNAVAILABLE', { reason }, cause),
      untrusted: { keyring, source: APPROVAL_SOURCE },
      // Its security reports are the approval service's: signed checkpoints say so (attack 6).
      auditKey: options.signingKey,
      onApplied: (record, verdict, live) => {
        if (live && isForbiddenClaim(verdict)) approvals.reportForbidden(record, verdict.unattributed ?? verdict.reason, options.namespace);
        else if (live && !(verdict.kind === 'rejected' && verdict.reason === 'untrusted-signature')) approvals.announce(record, verdict);
      },
    });
    const sweepMs = options.expirySweepMs ?? 1_000;
    if (sweepMs > 0) {
      approvals.sweeper = setInterval(() => approvals.sweep(), sweepMs);
      approvals.sweeper.unref();
    }
    return approvals;
  }

  /**
   * Reports a claim the fold ignored because its author may not make it (an unsigned, another
   * tenant's or another requester's request or cancellation) as a security event: never shown
   * to a reviewer, never granted. The report carries nothing of the claim's payload.
   */
  private reportForbidden(record: DecodedRecord<'approvals'>, why: string, namespace: string | undefined): void {
    this.forbiddenReported += 1;
    const at = { topic: topicName('approvals', namespace), partition: record.partition, offset: record.offset };
    this.log('warn', `ignored a ${record.event.type} claim its author may not make`, { code: 'SECURITY.FORBIDDEN_CLAIM', claim: why, partition: record.partition, offset: record.offset });
    const { meta, payload } = forbiddenClaimDecision({ source: APPROVAL_SOURCE }, record.event, why, at);
    this.engine.publishTo('audit', createEvent(DecisionRecordedV1, meta, payload)).catch(() => this.log('warn', 'could not report a forbidden claim', { code: 'SECURITY.REPORT_FAILED' }));
  }

  /** Tells subscribers about a change once the projection holds it, so a reviewer who reads it back finds it. */
  private announce(record: DecodedRecord<'approvals'>, verdict: Verdict): void {
    const { event, logTime } = record;
    const approval = this.engine.stateFor(event.payload.approvalId).state.approvals.get(event.payload.approvalId);
    if (!approval) return;
    const change: ApprovalChange = {
      approvalId: approval.approvalId,
      type: event.type,
      status: approval.status,
      tenant: approval.request.scope.tenant,
      connectorId: approval.request.scope.connectorId,
      at: logTime.toISOString(),
    };
    this.engine.whenAnswered(record.partition, BigInt(record.offset)).then(
      () => {
        this.onCommitted?.({ record, verdict, approval });
        this.changes.emit('own', change);
        this.changes.emit('change', change);
      },
      () => undefined, // stopping, or the database is down: a reconnecting stream re-reads the list
    );
  }

  /** Appends `expired` for every pending approval past its deadline (not re-sent within 5 s), of the partitions this replica holds. */
  sweep(now = Date.now()): number {
    if (this.engine.phase !== 'running') return 0;
    let appended = 0;
    const parts = this.engine.parts();
    for (const approval of parts.flatMap(({ state }) => dueForExpiry(state, now))) {
      const last = this.expiring.get(approval.approvalId);
      if (last !== undefined && now - last < EXPIRY_RETRY_MS) continue;
      this.expiring.set(approval.approvalId, now);
      const event = this.sign(createEvent(
        ApprovalExpiredV1,
        {
          source: APPROVAL_SOURCE,
          tenant: approval.request.scope.tenant,
          subject: approval.approvalId,
          causationId: approval.requestEventId,
          ...(approval.correlationId !== undefined && { correlationId: approval.correlationId }),
          // The expiry ends the agent's approval wait in the request's trace.
          ...(approval.trace !== undefined && { trace: approval.trace }),
        },
        { approvalId: approval.approvalId, deadline: new Date(approval.deadline).toISOString() },
      ));
      appended += 1;
      this.expiries += 1;
      this.engine.append(event).catch(() => this.log('warn', 'could not append an expiry; the next sweep retries', { code: 'APPROVAL.EXPIRY_APPEND_FAILED' }));
    }
    for (const [id] of this.expiring) if (!parts.some(({ state }) => state.approvals.get(id)?.status === 'pending')) this.expiring.delete(id);
    return appended;
  }

  /**
   * The approval as this replica's fold has applied it (it may lag the log, never lead it);
   * scaled out, FOLD.NOT_OWNER when another replica owns its partition (the request is forwarded there).
   */
  approval(approvalId: string): Approval | undefined {
    return this.engine.stateFor(approvalId).state.approvals.get(approvalId);
  }

  /** The fold's state, read only: every partition this replica holds (one replica: the whole topic's). */
  get state(): ApprovalsState {
    const parts = this.engine.parts();
    if (parts.length === 1 && parts[0]) return parts[0].state;
    throw new TypeError('a scaled-out replica holds one state per partition: read approval(id) or status()');
  }

  /** Signs `event` as this service, appends it, and answers with the fold's verdict on it once applied and projected. */
  decide(event: ApprovalEvent): Promise<Verdict> {
    return this.engine.decide(this.sign(event));
  }

  private sign<E extends ApprovalEvent>(event: E): E {
    return signEvent(event, this.signingKey);
  }

  /** Calls `listener` for every live change (this replica's, and those `relay` brings) until the returned function is called. */
  subscribe(listener: (change: ApprovalChange) => void): () => void {
    this.changes.on('change', listener);
    return () => this.changes.off('change', listener);
  }

  /** Calls `listener` for every live change of the partitions this replica folds, once projected. */
  subscribeOwn(listener: (change: ApprovalChange) => void): () => void {
    this.changes.on('own', listener);
    return () => this.changes.off('own', listener);
  }

  /** Hands subscribers a change another replica folded and announced (scaled out); nothing else sees it. */
  relay(change: ApprovalChange): void {
    this.changes.emit('change', change);
  }

  status(): ApprovalStatusReport {
    let [approvals, pending, untrusted, forbidden] = [0, 0, 0, 0];
    for (const { state } of this.engine.parts()) {
      approvals += state.approvals.size;
      for (const a of state.approvals.values()) if (a.status === 'pending') pending += 1;
      untrusted += state.untrusted.count;
      forbidden += state.forbidden.count;
    }
    return { ...this.engine.status(), approvals, pending, expiriesAppended: this.expiries, untrustedGrants: untrusted, forbiddenClaims: forbidden };
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.changes.removeAllListeners();
    await this.engine.stop();
  }
}
