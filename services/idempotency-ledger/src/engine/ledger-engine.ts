import { createEvent, type Keyring, LedgerKeyExpiredV1, LedgerKeyFailedV1, signEvent, type SigningKey, topicName } from '@gatehouse/contracts';
import { assertTopicRetention, type FoldLog, type FoldProjection, type FoldStatus, partitionCount, type ServiceFold, type ServiceFoldOptions, startServiceFold } from '@gatehouse/kafka';
import { type BudgetState, type KeyState, type LedgerEvent, type LedgerState, type Verdict } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import { LedgerError } from '../errors.js';
import { CHECKPOINT_REFRESH_MS, checkpointRetentionNeedMs, DEFAULT_CHECKPOINT_INTERVAL_MS, LEDGER_SNAPSHOT_VERSION, LEDGER_SOURCE, ledgerCheckpointEvents, ledgerMeta, ledgerProjection } from '@gatehouse/ledger-projection';
import { type LedgerPort } from './ledger-port.js';

/** A structured log line; never carries request or record values. */
export type LedgerLog = FoldLog;

export interface LedgerEngineOptions {
  readonly kafka: Kafka;
  /** Signs every event the ledger appends: only the ledger service grants keys and budgets. */
  readonly signingKey: SigningKey;
  /** The ledger keys the fold trusts (this service's own public key among them). */
  readonly keyring: Keyring;
  /** Topic namespace (GATEHOUSE_TOPIC_NAMESPACE). */
  readonly namespace?: string | undefined;
  /** The PostgreSQL projection kept by the same pass; answers wait for it to commit. */
  readonly projection?: FoldProjection<'ledger', LedgerState> | undefined;
  /** How long a writer waits for its own verdict (append included), ms. Default 5,000. */
  readonly decisionDeadlineMs?: number;
  /** Most verdicts kept for writers at once. Default 10,000. */
  readonly verdictCapacity?: number;
  /** How long the start-up read may go without reading a record, ms. Default 60,000. */
  readonly replayTimeoutMs?: number;
  /** Records per projection transaction during the start-up replay. Default 1,000. */
  readonly replayBatchSize?: number;
  /** Least time between two snapshots of the fold, ms (see `FoldEngineOptions`). */
  readonly snapshotIntervalMs?: number;
  /**
   * Time between two checkpoints of the fold's state into the ledger topic, ms (one is also
   * written once the start-up read is done). Default 1 hour. They are what lets the topic delete
   * records by time: the service refuses a topic that keeps less than `checkpointRetentionNeedMs`.
   * 0 writes none, and then the topic must keep every record for ever.
   */
  readonly checkpointIntervalMs?: number;
  /**
   * Scale-out (issue 19): the replicas share the topic's partitions through one consumer group and
   * this replica folds only its own (`OwnedFoldEngine`); each partition's projection rows come from
   * `projectionOf`, fenced by `owners`. Without it, this replica folds every partition.
   */
  readonly owned?: Omit<NonNullable<ServiceFoldOptions<'ledger', LedgerState, Verdict>['owned']>, 'group'>;
  readonly log?: LedgerLog;
}

/** What `GET /v1/ledger/status` shows. */
export interface LedgerStatus extends FoldStatus {
  readonly keys: number;
  readonly budgets: number;
  readonly orphansReleased: number;
  /** Ledger events the fold ignored for their signature. */
  readonly untrustedGrants: number;
  /** Completed keys this replica expired (retention) since it started. */
  readonly keysExpired: number;
  /** Checkpoints of the state this replica wrote into the log, and when the last was acknowledged. */
  readonly checkpoints: { readonly written: number; readonly failed: number; readonly lastAt?: string };
}

/** Most expiries one sweep appends; the next sweep takes the rest. */
export const EXPIRY_BATCH = 500;

/**
 * The ledger's single decision point: a `FoldEngine` over `gatehouse.ledger.v1` with
 * `applyLedgerEvent` as its fold. A writer appends its event and reads the fold's verdict on
 * it once applied (and projected): the log order, not this process, decides.
 */
export class LedgerEngine implements LedgerPort {
  private orphans = 0;
  private expired = 0;
  /**
   * Claims and new budgets per principal on their way to the fold: counted from the request until
   * the fold applies the event (then the fold's own count has it) or the writer gives up. The
   * per-principal bounds count them too, so a burst of concurrent requests cannot all pass the
   * check before the fold has applied any of them (across replicas, the overshoot is at most the
   * other replicas' requests in flight).
   */
  private readonly claimsInFlight = new Map<string, number>();
  private readonly budgetsInFlight = new Map<string, number>();
  private readonly inFlight = new Map<string, { readonly counts: Map<string, number>; readonly principal: string }>();
  private engine!: ServiceFold<'ledger', LedgerState, Verdict>;
  private partitions = 1;
  private topic = '';
  private checkpointTimer: NodeJS.Timeout | undefined;
  private checkpointing: Promise<void> | undefined;
  private readonly checkpointsDone = { written: 0, failed: 0, lastAt: undefined as string | undefined };
  /** Per partition, the offset after this replica's last checkpoint of it, and when that was written. */
  private readonly lastCheckpoint = new Map<number, { readonly end: bigint; readonly at: number }>();

  private constructor(
    private readonly log: LedgerLog,
    private readonly signingKey: SigningKey,
  ) {}

  /** Replays the ledger topic, starts tailing it and returns the running engine. */
  static async start(options: LedgerEngineOptions): Promise<LedgerEngine> {
    const ledger = new LedgerEngine(options.log ?? (() => undefined), options.signingKey);
    const topic = topicName('ledger', options.namespace);
    const intervalMs = options.checkpointIntervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS;
    // An open or ambiguous key has no end in time: the topic may delete records only when
    // checkpoints of the state outlive them (two intervals, and two refreshes of an unchanged
    // partition: one to write the next, one to spare). A topic that could delete the reservation
    // that stops a second execution is refused before anything is read.
    await assertTopicRetention(options.kafka, topic, intervalMs > 0 ? { atLeastMs: checkpointRetentionNeedMs(intervalMs) } : 'forever');
    ledger.partitions = await partitionCount(options.kafka, topic);
    ledger.topic = topic;
    const spec = ledgerProjection(options.keyring);
    const { owned, ...rest } = options;
    const common = {
      ...rest,
      topicId: 'ledger' as const,
      fold: spec.fold,
      checkpoints: spec.checkpoints?.(options.kafka, options.namespace),
      untrusted: { keyring: options.keyring, source: LEDGER_SOURCE },
      // Its security reports are the ledger service's: signed checkpoints say so (attack 6).
      auditKey: options.signingKey,
      onApplied: (record: { readonly event: { readonly id: string } }) => ledger.settle(record.event.id),
      unavailable: (reason: string, cause?: unknown) => new LedgerError('LEDGER.UNAVAILABLE', { reason }, cause),
      onAbandoned: (event: LedgerEvent, verdict: Verdict) => ledger.release(event, verdict),
    };
    ledger.engine = await startServiceFold({ ...common, ...(owned && { owned: { ...owned, group: 'ledger-fold' } }) });
    if (intervalMs > 0) {
      ledger.checkpointTimer = setInterval(() => void ledger.writeCheckpoint({ changedOnly: true }), intervalMs);
      ledger.checkpointTimer.unref();
      // The state the start read goes into the log at once (a service restarted more often than
      // the interval still leaves checkpoints); an empty one has nothing the log could lose. (A
      // scaled-out replica's partitions arrive later; the timer writes theirs.)
      if (ledger.engine.parts().some(({ state }) => state.keys.size + state.budgets.size > 0)) void ledger.writeCheckpoint();
    }
    return ledger;
  }

  /**
   * Appends a checkpoint of each partition's state (read at once, between two records) to that
   * partition; resolves when the broker has them, or one failed (logged; the next interval writes
   * again). `changedOnly` (the timer's): only the partitions with records since this replica's last
   * checkpoint of them, or whose last one is older than CHECKPOINT_REFRESH_MS. One at a time: a slow
   * write is not doubled.
   */
  writeCheckpoint(options: { readonly changedOnly?: boolean } = {}): Promise<void> {
    if (this.engine.phase !== 'running') return Promise.resolve();
    this.checkpointing ??= (async () => {
      const now = Date.now();
      const cuts = this.engine.parts().map((part) => ({ partitions: part.partitions, cut: part.cut() }));
      const due = (partition: number, offsets: ReadonlyMap<number, bigint>) => {
        const last = this.lastCheckpoint.get(partition);
        return !options.changedOnly || last === undefined || (offsets.get(partition) ?? 0n) > last.end || now - last.at >= CHECKPOINT_REFRESH_MS;
      };
      const writes = cuts.flatMap(({ partitions, cut }) => {
        const only = partitions.filter((partition) => due(partition, cut.offsets));
        return only.length === 0 ? [] : [...ledgerCheckpointEvents(cut, { topic: this.topic, partitions: this.partitions, fold: LEDGER_SNAPSHOT_VERSION, signingKey: this.signingKey, only })];
      });
      if (writes.length === 0) return;
      try {
        for (const [partition, events] of writes) {
          let end = 0n;
          for (const event of events) end = BigInt((await this.engine.append(event)).offset) + 1n;
          this.lastCheckpoint.set(partition, { end, at: now });
        }
        this.checkpointsDone.written += 1;
        this.checkpointsDone.lastAt = new Date().toISOString();
      } catch {
        this.checkpointsDone.failed += 1;
        this.log('warn', 'could not write a checkpoint of the ledger state; the next interval writes again', { code: 'LEDGER.CHECKPOINT_FAILED' });
      }
    })().finally(() => (this.checkpointing = undefined));
    return this.checkpointing;
  }

  /**
   * A writer gave up before its event was applied and told its caller the ledger was
   * unavailable, so the caller will not execute: a reservation it won nobody holds. Hand it
   * back at once instead of leaving it to the TTL (after a takeover the key stays ambiguous).
   */
  private release(event: LedgerEvent, verdict: Verdict): void {
    if (verdict.kind !== 'accepted') return;
    if (event.type !== 'LedgerKeyReserved' && event.type !== 'LedgerKeyTakenOver') return;
    if (this.engine.phase !== 'running') return;
    const { key, leaseToken } = event.payload;
    this.orphans += 1;
    const failed = signEvent(createEvent(LedgerKeyFailedV1, ledgerMeta(key, event.tenant), { key, leaseToken, code: 'LEDGER.WRITER_GAVE_UP', retryable: true }), this.signingKey);
    this.engine.append(failed).catch(() => this.log('warn', 'could not release an orphaned reservation', { code: 'LEDGER.RELEASE_FAILED' }));
  }

  key(key: string): KeyState | undefined {
    return this.engine.stateFor(key).state.keys.get(key);
  }

  budget(budgetKey: string): BudgetState | undefined {
    return this.engine.stateFor(budgetKey).state.budgets.get(budgetKey);
  }

  openKeys(principal: string, key: string): { readonly held: number; readonly share: number } {
    const { state, share } = this.engine.stateFor(key);
    return { held: (state.openKeysByPrincipal.get(principal) ?? 0) + (this.claimsInFlight.get(principal) ?? 0), share };
  }

  budgetsOf(principal: string, budgetKey: string): { readonly held: number; readonly share: number } {
    const { state, share } = this.engine.stateFor(budgetKey);
    return { held: (state.budgetsByPrincipal.get(principal) ?? 0) + (this.budgetsInFlight.get(principal) ?? 0), share };
  }

  /** Which in-flight count `event` adds to while it is decided, if any. */
  private inFlightCount(event: LedgerEvent): { readonly counts: Map<string, number>; readonly principal: string } | undefined {
    if ((event.type === 'LedgerKeyReserved' || event.type === 'LedgerKeyTakenOver') && event.payload.principal !== undefined) {
      return { counts: this.claimsInFlight, principal: event.payload.principal };
    }
    if (event.type === 'LedgerRateConsumed' && event.payload.principal !== undefined && this.budget(event.payload.budgetKey) === undefined) {
      return { counts: this.budgetsInFlight, principal: event.payload.principal };
    }
    return undefined;
  }

  /** The fold's state (read only: the engine owns it): every partition this replica holds, together. */
  view(): {
    readonly keys: ReadonlyMap<string, KeyState>;
    readonly budgets: ReadonlyMap<string, BudgetState>;
    readonly openKeysByPrincipal: ReadonlyMap<string, number>;
    readonly budgetsByPrincipal: ReadonlyMap<string, number>;
  } {
    const parts = this.engine.parts();
    if (parts.length === 1 && parts[0]) return parts[0].state;
    const counts = (pick: (state: LedgerState) => ReadonlyMap<string, number>) => {
      const sum = new Map<string, number>();
      for (const { state } of parts) for (const [k, n] of pick(state)) sum.set(k, (sum.get(k) ?? 0) + n);
      return sum;
    };
    return {
      keys: new Map(parts.flatMap(({ state }) => [...state.keys])),
      budgets: new Map(parts.flatMap(({ state }) => [...state.budgets])),
      openKeysByPrincipal: counts((state) => state.openKeysByPrincipal),
      budgetsByPrincipal: counts((state) => state.budgetsByPrincipal),
    };
  }

  /** The event `eventId` is no longer on its way: the fold applied it, or its writer gave up. */
  private settle(eventId: string): void {
    const entry = this.inFlight.get(eventId);
    if (entry === undefined) return;
    this.inFlight.delete(eventId);
    const left = (entry.counts.get(entry.principal) ?? 1) - 1;
    if (left > 0) entry.counts.set(entry.principal, left);
    else entry.counts.delete(entry.principal);
  }

  /** Signs `event` as the ledger service, appends it and answers with the fold's verdict on it. */
  async decide(event: LedgerEvent): Promise<Verdict> {
    const counted = this.inFlightCount(event);
    if (counted === undefined) return this.engine.decide(signEvent(event, this.signingKey));
    this.inFlight.set(event.id, counted);
    counted.counts.set(counted.principal, (counted.counts.get(counted.principal) ?? 0) + 1);
    try {
      return await this.engine.decide(signEvent(event, this.signingKey));
    } finally {
      this.settle(event.id);
    }
  }

  status(): LedgerStatus {
    const parts = this.engine.parts();
    const sum = (pick: (state: LedgerState) => number) => parts.reduce((n, { state }) => n + pick(state), 0);
    const { written, failed, lastAt } = this.checkpointsDone;
    return {
      ...this.engine.status(),
      keys: sum((state) => state.keys.size),
      budgets: sum((state) => state.budgets.size),
      orphansReleased: this.orphans,
      untrustedGrants: sum((state) => state.untrusted.count),
      keysExpired: this.expired,
      checkpoints: { written, failed, ...(lastAt !== undefined && { lastAt }) },
    };
  }

  /**
   * Retention: appends an expiry for up to EXPIRY_BATCH keys completed more than `retainMs` ago
   * (by their completions' log time) and answers how many the fold expired. The fold decides
   * each by log time, so replicas sweeping at once, or a clock that runs ahead, expire nothing
   * that is not due; a key reserved again since is left alone.
   */
  async expireCompleted(retainMs: number, now: number = Date.now()): Promise<number> {
    if (this.engine.phase !== 'running') return 0;
    const before = now - retainMs;
    const due: string[] = [];
    for (const part of this.engine.parts()) {
      for (const [key, state] of part.state.keys) {
        if (state.status === 'completed' && state.completedAt < before) due.push(key);
        if (due.length >= EXPIRY_BATCH) break;
      }
    }
    due.splice(EXPIRY_BATCH);
    const verdicts = await Promise.all(due.map((key) => this.decide(createEvent(LedgerKeyExpiredV1, ledgerMeta(key), { key, before })).catch(() => undefined)));
    const expired = verdicts.filter((v) => v?.kind === 'accepted').length;
    this.expired += expired;
    if (expired > 0) this.log('info', 'completed keys expired', { expired, retainMs });
    return expired;
  }

  /** Stops tailing and appending; waiting writers get LEDGER.UNAVAILABLE. Safe to call twice. */
  async stop(): Promise<void> {
    clearInterval(this.checkpointTimer);
    await this.checkpointing;
    await this.engine.stop();
  }
}
