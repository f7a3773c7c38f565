import { type AgentKey, GatehouseError, isDecisionRecorded, type SigningKey, type TopicEvent, type TopicId, topicName } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { EventProducer, type AppendResult } from '../producer.js';
import { type DecodedRecord, type PoisonRecord } from '../records.js';
import { replayTopic } from '../replay.js';
import { type TailHandle, tailTopic } from '../tail.js';
import { keyPartitioner, PartitionTimes } from './key-partitions.js';
import { OffsetWatermarks } from './offset-watermarks.js';
import { VerdictBook } from './verdict-book.js';
import { AuditCheckpointer } from '../audit-checkpoints.js';
import { type AuditAppender, reportIfUntrusted, type UntrustedReporting } from './fold-reader.js';
import { type FoldSnapshot, type SnapshotCodec, type SnapshotRejection, type StoredFoldSnapshot } from './fold-snapshot.js';

/** A pure fold over one topic: `apply` advances `state` in place and returns its verdict on the event. */
export interface Fold<T extends TopicId, S, V> {
  create(): S;
  apply(state: S, event: TopicEvent<T>, logTime: number): V;
  /** How the state is snapshotted: a fold with one starts from its projection's last snapshot, not from offset 0. */
  readonly snapshot?: SnapshotCodec<S>;
  /**
   * Lets go of settled state: `timeOf(recordKey)` is the log time the partition of that record key
   * has reached. Must change no verdict and no row (the fold forgets the same things by itself when
   * a key's next record comes); the engine calls it now and then to bound its memory.
   */
  prune?(state: S, timeOf: (recordKey: string) => number | undefined): number;
}

/** A database projection kept by the fold's own pass; writers' answers wait for it to commit. */
export interface FoldProjection<T extends TopicId, S> {
  /** A record was applied: remember what it touched. */
  touch(record: DecodedRecord<T>): void;
  /** A record could not be applied (it fails its contract). */
  unappliable(poison: PoisonRecord): void;
  /**
   * Commits what was touched, with the offsets `through` (next to read, per partition), in one
   * transaction; with `snapshot` (the state at `through`), stores it in the same transaction,
   * unless a snapshot at later offsets is stored already.
   */
  flush(state: S, through: ReadonlyMap<number, bigint>, snapshot?: FoldSnapshot): Promise<void>;
  /** Touches not committed yet. */
  pending(): number;
  /** The stored snapshot, if any: a projection without this method keeps none. */
  loadSnapshot?(): Promise<StoredFoldSnapshot | undefined>;
}

/** A structured log line; never carries request or record values. */
export type FoldLog = (level: 'info' | 'warn' | 'error', message: string, extra?: Record<string, string | number | boolean>) => void;

export interface FoldEngineOptions<T extends TopicId, S, V> {
  readonly kafka: Kafka;
  readonly topicId: T;
  readonly fold: Fold<T, S, V>;
  /** Makes the error a writer gets when its verdict cannot be confirmed (reason is a short code). */
  readonly unavailable: (reason: string, cause?: unknown) => Error;
  /** Topic namespace (GATEHOUSE_TOPIC_NAMESPACE). */
  readonly namespace?: string | undefined;
  readonly projection?: FoldProjection<T, S> | undefined;
  /** Every applied record with its verdict, after the fold (start-up replay included). */
  readonly onApplied?: (record: DecodedRecord<T>, verdict: V, live: boolean) => void;
  /**
   * A writer gave up before its event was applied and its caller was told "unavailable";
   * the fold applied it later with `verdict`. The place to undo what nobody will act on.
   */
  readonly onAbandoned?: (event: TopicEvent<T>, verdict: V) => void;
  /**
   * The keys the fold trusts for granting events, and the source this reader reports as: a live
   * granting event without a trusted signature (the fold ignores it) is reported on the audit
   * topic as `SECURITY.UNTRUSTED_GRANT` and logged.
   */
  readonly untrusted?: UntrustedReporting;
  /**
   * Signs checkpoints over every audit record the engine appends (its security reports and
   * `publishTo('audit', …)`), so verifiers count them as the service's (`AuditChainCheckpointV1`);
   * without it they read as unverified. The service's own signing key.
   */
  readonly auditKey?: SigningKey | AgentKey;
  /** How long a writer waits for its own verdict (append included), ms. Default 5,000. */
  readonly decisionDeadlineMs?: number;
  /** Most verdicts kept for writers at once. Default 10,000. */
  readonly verdictCapacity?: number;
  /**
   * How long the start-up read may go without reading a record, ms (default 60,000): a read that
   * keeps moving goes on however long the history since the snapshot is (the engine answers
   * nothing until it is done, and stores snapshots on the way), one that stalls fails the start.
   */
  readonly replayTimeoutMs?: number;
  /** Records per projection transaction during the start-up replay. Default 1,000. */
  readonly replayBatchSize?: number;
  /**
   * Least time between two snapshots of the fold, ms (with a fold `snapshot` codec and a projection
   * that keeps them): one is written with a projection commit once this long has passed since the
   * last, at the end of the start-up read, and at stop. Default 30,000; 0 writes none (stored ones
   * are still loaded).
   */
  readonly snapshotIntervalMs?: number;
  readonly log?: FoldLog;
}

export type FoldPhase = 'starting' | 'running' | 'failed' | 'stopped';

export interface FoldStatus {
  readonly phase: FoldPhase;
  /** Per partition, the next offset the in-memory fold will apply. */
  readonly appliedOffsets: Record<number, string>;
  /** Per partition, the next offset not yet committed to the projection (answers wait for this). */
  readonly projectedOffsets: Record<number, string>;
  readonly unappliedRecords: number;
  readonly waitingWriters: number;
  readonly verdictsEvicted: number;
  readonly projectionFailures: number;
  /** Where the start began: a snapshot (and the records read after it), or offset 0 (and why no snapshot was used, when one was stored). */
  readonly start: { readonly from: 'snapshot' | 'offset-0'; readonly records: number; readonly rejected?: SnapshotRejection };
  /** Snapshots this engine stored, and the offsets of the last. */
  readonly snapshots: { readonly written: number; readonly lastOffsets?: Record<number, string> };
}

const toRecord = (offsets: ReadonlyMap<number, bigint>): Record<number, string> =>
  Object.fromEntries([...offsets].sort(([a], [b]) => a - b).map(([p, o]) => [p, o.toString()]));

const noLog: FoldLog = () => undefined;

/** Races `work` against `deadline` (epoch ms); a late settlement of `work` is swallowed. */
function withDeadline<R>(work: Promise<R>, deadline: number, late: () => Error): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    const timer = setTimeout(() => reject(late()), Math.max(0, deadline - Date.now()));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error('append failed'));
      },
    );
  });
}

/**
 * A service's single decision point over one topic. On start it folds the topic from offset 0
 * (log append time as the clock), then tails it, applying every record in partition order and
 * committing the projection once per batch. A writer appends its event, waits until that offset
 * is applied (and projected), and reads the fold's verdict on its own event: the log order, not
 * this process, decides. A tail that stops for good fails the engine closed.
 */
export class FoldEngine<T extends TopicId, S, V> {
  private foldState: S;
  /** What the in-memory fold has applied. */
  private readonly applied: OffsetWatermarks;
  /** What the fold has applied and the projection has committed: writers wait on this. */
  private readonly answered: OffsetWatermarks;
  private readonly book: VerdictBook<V>;
  private readonly log: FoldLog;
  private readonly deadlineMs: number;
  private currentPhase: FoldPhase = 'starting';
  private producer: EventProducer | undefined;
  private tail: TailHandle | undefined;
  private unapplied = 0;
  private projectionFailures = 0;
  private flushing: Promise<void> | undefined;
  private flushAgain = false;
  private retryDelayMs = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  /** One per audit source the engine writes (a service writes one): what signs its checkpoints. */
  private readonly checkpointers = new Map<string, AuditCheckpointer>();
  private startReport: FoldStatus['start'] = { from: 'offset-0', records: 0 };
  private snapshotsWritten = 0;
  private lastSnapshotOffsets: Record<number, string> | undefined;
  private lastSnapshotAt = 0;
  /** Records applied since the last snapshot was taken. */
  private sinceSnapshot = 0;
  /** How far each partition has come in log time: what the fold's `prune` asks. */
  private partitionTimes: PartitionTimes | undefined;
  private seedTimes: Readonly<Record<number, number>> = {};
  private sincePrune = 0;
  private lastPruneAt = Date.now();
  /** The engine's audit writes: appended, then covered by the next checkpoint. */
  private readonly audit: AuditAppender = { publish: (_topicId, event) => this.appendAudit(event) };

  private constructor(private readonly options: FoldEngineOptions<T, S, V>) {
    this.foldState = options.fold.create();
    const late = () => options.unavailable('fold-deadline');
    this.applied = new OffsetWatermarks(late);
    this.answered = new OffsetWatermarks(late);
    this.book = new VerdictBook<V>(options.verdictCapacity ?? 10_000);
    this.log = options.log ?? noLog;
    this.deadlineMs = options.decisionDeadlineMs ?? 5_000;
  }

  /** Replays the topic, starts tailing it and returns the running engine. */
  static async start<T extends TopicId, S, V>(options: FoldEngineOptions<T, S, V>): Promise<FoldEngine<T, S, V>> {
    const engine = new FoldEngine(options);
    try {
      await engine.run();
    } catch (error) {
      await engine.stop();
      throw error;
    }
    return engine;
  }

  private async run(): Promise<void> {
    const { kafka, namespace, projection, topicId } = this.options;
    this.producer = await EventProducer.connect(kafka, { namespace });
    const batchSize = this.options.replayBatchSize ?? 1_000;
    let sinceFlush = 0;
    const started = Date.now();
    const fromOffsets = await this.loadSnapshot();
    if (this.options.fold.prune) {
      this.partitionTimes = new PartitionTimes(keyPartitioner(await partitionCount(kafka, topicName(topicId, namespace))));
      for (const [partition, time] of Object.entries(this.seedTimes)) this.partitionTimes.advance(Number(partition), time);
    }
    const replay = await replayTopic(kafka, topicId, {
      namespace,
      timeoutMs: this.options.replayTimeoutMs ?? 60_000,
      timeoutOnStall: true,
      ...(fromOffsets && { fromOffsets }),
      onRecord: async (record) => {
        this.ingest(record);
        sinceFlush += 1;
        if (projection && sinceFlush >= batchSize) {
          sinceFlush = 0;
          const snapshot = this.snapshotIfDue();
          const writing = projection.flush(this.foldState, this.applied.snapshot(), snapshot);
          this.pruneIfDue(); // the flush has read its rows
          await writing;
          this.snapshotStored(snapshot);
        }
      },
      onPoison: (poison) => this.ingestPoison(poison),
    });
    for (const [partition, next] of Object.entries(replay.nextOffsets)) this.applied.advance(Number(partition), BigInt(next));
    // The start-up read's end is worth a snapshot whenever it read anything: the next start begins there.
    if (projection) {
      // The rows first; then, the fold having let go of what settled while the service was down,
      // the snapshot of what is left (the state at the same offsets): the next start loads that.
      await projection.flush(this.foldState, this.applied.snapshot());
      this.pruneIfDue(true);
      const snapshot = this.sinceSnapshot > 0 ? this.takeSnapshot() : undefined;
      await projection.flush(this.foldState, this.applied.snapshot(), snapshot);
      this.snapshotStored(snapshot);
    } else {
      this.pruneIfDue(true);
    }
    for (const [partition, next] of this.applied.snapshot()) this.answered.advance(partition, next);
    this.startReport = { ...this.startReport, records: replay.records + replay.poison };
    this.log('info', `${topicId} replayed`, { records: replay.records, unapplied: replay.poison, ms: Date.now() - started, from: this.startReport.from });
    this.tail = await tailTopic(kafka, topicId, {
      namespace,
      fromOffsets: replay.nextOffsets,
      onRecord: (record) => this.ingest(record),
      onPoison: (poison) => this.ingestPoison(poison),
      onBatchEnd: (partition, next) => {
        this.applied.advance(partition, BigInt(next));
        if (!projection) this.answered.advance(partition, BigInt(next));
        // Not awaited: a slow database must not hold the fold back; flushes coalesce meanwhile.
        void this.flush();
      },
      onCrash: () => {
        if (this.currentPhase === 'stopped') return;
        // Fail closed: no answer can be confirmed any more.
        this.currentPhase = 'failed';
        this.log('error', `${topicId} tail stopped; decisions are refused until restart`, { code: 'FOLD.TAIL_CRASHED' });
      },
    });
    if (this.currentPhase === 'starting') this.currentPhase = 'running';
  }

  /**
   * Loads the projection's snapshot into the fold and returns the offsets to read on from;
   * undefined (read from offset 0) when there is none, or it is another fold version's or
   * unreadable, which is logged as FOLD.SNAPSHOT_REJECTED and shown in `status().start`.
   */
  private async loadSnapshot(): Promise<Record<number, string> | undefined> {
    const codec = this.options.fold.snapshot;
    const found = codec ? await this.options.projection?.loadSnapshot?.() : undefined;
    if (!codec || !found) return undefined;
    const stored = found.snapshot;
    const reject = (rejected: SnapshotRejection) => {
      this.startReport = { from: 'offset-0', records: 0, rejected };
      this.log('warn', `${this.options.topicId} snapshot not loaded; replaying from offset 0`, { code: 'FOLD.SNAPSHOT_REJECTED', rejected, fold: codec.version });
      return undefined;
    };
    if (stored.fold !== codec.version) return reject('other-version');
    if (found.aheadOfProjection) return reject('ahead-of-projection');
    let state: S;
    const offsets = new Map<number, bigint>();
    try {
      state = codec.decode(stored.state);
      for (const [partition, next] of Object.entries(stored.offsets)) {
        if (!/^\d+$/.test(partition) || !/^\d+$/.test(next)) throw new TypeError('offsets');
        offsets.set(Number(partition), BigInt(next));
      }
    } catch {
      return reject('unreadable');
    }
    this.foldState = state;
    for (const [partition, next] of offsets) this.applied.advance(partition, next);
    // The start reads on at least as far as the projection's last records: their times are the partitions' times by then.
    this.seedTimes = found.partitionTimes;
    this.lastSnapshotOffsets = { ...stored.offsets };
    this.lastSnapshotAt = Date.now();
    this.startReport = { from: 'snapshot', records: 0 };
    return Object.fromEntries([...offsets].map(([p, o]) => [p, o.toString()]));
  }

  /** The fold's state now, as a snapshot at the offsets it has applied. Call it where the flush reads its rows (before any await). */
  private takeSnapshot(): FoldSnapshot | undefined {
    const codec = this.options.fold.snapshot;
    if (!codec || !this.options.projection?.loadSnapshot || this.options.snapshotIntervalMs === 0) return undefined;
    const offsets = toRecord(this.applied.snapshot());
    this.sinceSnapshot = 0;
    this.lastSnapshotAt = Date.now();
    return { fold: codec.version, offsets, state: codec.encode(this.foldState) };
  }

  /** A snapshot when the interval has passed and something was applied since the last; otherwise none. */
  private snapshotIfDue(): FoldSnapshot | undefined {
    if (this.sinceSnapshot === 0 || Date.now() - this.lastSnapshotAt < (this.options.snapshotIntervalMs ?? 30_000)) return undefined;
    return this.takeSnapshot();
  }

  private snapshotLost(): void {
    this.lastSnapshotAt = 0;
    this.sinceSnapshot = Math.max(this.sinceSnapshot, 1);
  }

  /** Counts a snapshot the projection committed. */
  private snapshotStored(snapshot: FoldSnapshot | undefined): void {
    if (!snapshot) return;
    this.snapshotsWritten += 1;
    this.lastSnapshotOffsets = { ...snapshot.offsets };
  }

  /** Applies one record to the fold; keeps the verdict when this process appended the event. */
  private ingest(record: DecodedRecord<T>): void {
    const verdict = this.options.fold.apply(this.foldState, record.event, record.logTime.getTime());
    this.sinceSnapshot += 1;
    this.partitionTimes?.advance(record.partition, record.logTime.getTime());
    this.sincePrune += 1;
    if (!this.options.projection) this.pruneIfDue();
    const fate = this.book.settle(record.event.id, verdict);
    this.options.projection?.touch(record);
    const next = BigInt(record.offset) + 1n;
    this.applied.advance(record.partition, next);
    const live = this.currentPhase !== 'starting';
    if (!this.options.projection && live) this.answered.advance(record.partition, next);
    if (live && this.options.untrusted) reportIfUntrusted(record, this.options.topicId, this.options.namespace, this.options.untrusted, () => (this.producer ? this.audit : undefined), this.log);
    this.options.onApplied?.(record, verdict, live);
    if (fate === 'abandoned') this.options.onAbandoned?.(record.event, verdict);
  }

  private ingestPoison(poison: PoisonRecord): void {
    this.unapplied += 1;
    this.sinceSnapshot += 1;
    this.options.projection?.unappliable(poison);
    this.applied.advance(poison.partition, BigInt(poison.offset) + 1n);
    this.log('warn', `${this.options.topicId} record could not be applied`, { code: poison.code, partition: poison.partition, offset: poison.offset });
  }

  /**
   * Every `PRUNE_EVERY` records, lets the fold go of what settled long enough ago by its partition's
   * time. With a projection only where nothing touched waits to be written (right after a flush read
   * its rows): a row the fold no longer holds would never be written.
   */
  private pruneIfDue(now = false): void {
    const times = this.partitionTimes;
    if (!times || (this.options.projection?.pending() ?? 0) > 0) return;
    // Every PRUNE_EVERY records, or a minute after the last prune when records came meanwhile (a quiet service).
    const due = now || this.sincePrune >= PRUNE_EVERY || (this.sincePrune > 0 && Date.now() - this.lastPruneAt >= PRUNE_AFTER_MS);
    if (!due) return;
    this.sincePrune = 0;
    this.lastPruneAt = Date.now();
    // What the fold let go of is worth a snapshot: a start loads less.
    if ((this.options.fold.prune?.(this.foldState, times.timeOf) ?? 0) > 0) this.sinceSnapshot = Math.max(this.sinceSnapshot, 1);
  }

  /** Commits the projection up to what the fold has applied, then releases the writers it covers. */
  private flush(): Promise<void> {
    const projection = this.options.projection;
    if (!projection) return Promise.resolve();
    if (this.flushing) {
      this.flushAgain = true;
      return this.flushing;
    }
    this.flushing = (async () => {
      do {
        this.flushAgain = false;
        const through = this.applied.snapshot();
        const snapshot = this.snapshotIfDue();
        try {
          const writing = projection.flush(this.foldState, through, snapshot);
          this.pruneIfDue(); // the flush has read its rows
          await writing;
          this.snapshotStored(snapshot);
        } catch {
          // The snapshot went with the failed transaction: take one again at the next flush.
          if (snapshot) this.snapshotLost();
          // The fold goes on; answers wait (and time out, failing closed) until the database is back.
          this.projectionFailures += 1;
          this.retryDelayMs = Math.min(Math.max(this.retryDelayMs * 2, 100), 2_000);
          this.log('warn', `${this.options.topicId} projection write failed; retrying`, { code: 'FOLD.PROJECTION_WRITE_FAILED', retryInMs: this.retryDelayMs });
          this.scheduleRetry();
          return;
        }
        this.retryDelayMs = 0;
        for (const [partition, next] of through) this.answered.advance(partition, next);
      } while (this.flushAgain && this.currentPhase !== 'stopped');
    })().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.currentPhase === 'stopped') return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.flush();
    }, this.retryDelayMs);
  }

  /** The fold's state, read only: the engine owns it and advances it in place. */
  get state(): S {
    return this.foldState;
  }

  get phase(): FoldPhase {
    return this.currentPhase;
  }

  /**
   * Appends `event`, waits until the fold has applied (and the projection committed) its offset,
   * and returns the fold's verdict on it. Throws the `unavailable` error when that cannot be
   * confirmed within the deadline; an event that fails its contract throws its validation error.
   */
  async decide(event: TopicEvent<T>): Promise<V> {
    const producer = this.producer;
    if (this.currentPhase !== 'running' || !producer) throw this.options.unavailable(this.currentPhase);
    const deadline = Date.now() + this.deadlineMs;
    this.book.expect(event.id);
    let appended: AppendResult;
    try {
      appended = await withDeadline(producer.publish(this.options.topicId, event), deadline, () => this.options.unavailable('append-deadline'));
    } catch (error) {
      this.giveUp(event);
      // An event that fails its contract was never sent: that is the request's fault, not the engine's.
      if (error instanceof GatehouseError && error.category === 'validation') throw error;
      throw isUnavailable(error) ? error : this.options.unavailable('append-failed', error);
    }
    try {
      await this.answered.waitFor(appended.partition, BigInt(appended.offset), deadline);
    } catch (error) {
      this.giveUp(event);
      throw isUnavailable(error) ? error : this.options.unavailable('fold-failed', error);
    }
    const verdict = this.book.take(event.id);
    if (verdict === undefined) throw this.options.unavailable('verdict-lost');
    return verdict;
  }

  /**
   * Resolves once the record at `offset` on `partition` is applied and (with a projection)
   * committed, so what it changed can be read back from the database; rejects after `timeoutMs`
   * or when the engine stops.
   */
  whenAnswered(partition: number, offset: bigint, timeoutMs = 30_000): Promise<void> {
    return this.answered.waitFor(partition, offset, Date.now() + timeoutMs);
  }

  /** Appends `event` to another topic (a security event on the audit topic, say) with the engine's producer. */
  async publishTo<U extends TopicId>(topicId: U, event: TopicEvent<U>): Promise<AppendResult> {
    const producer = this.producer;
    if (this.currentPhase !== 'running' || !producer) throw this.options.unavailable(this.currentPhase);
    if (topicId === 'audit') return this.appendAudit(event as TopicEvent<'audit'>);
    return producer.publish(topicId, event);
  }

  /** Appends an audit record; once acknowledged, the next checkpoint of its source covers it. */
  private async appendAudit(event: TopicEvent<'audit'>): Promise<AppendResult> {
    const producer = this.producer;
    if (!producer) throw this.options.unavailable(this.currentPhase);
    const appended = await producer.publish('audit', event);
    if (isDecisionRecorded(event)) this.checkpointerOf(event.source)?.covered(event);
    return appended;
  }

  private checkpointerOf(source: string): AuditCheckpointer | undefined {
    const key = this.options.auditKey;
    if (!key) return undefined;
    let checkpointer = this.checkpointers.get(source);
    if (!checkpointer) {
      checkpointer = new AuditCheckpointer({
        key,
        source,
        append: (checkpoint) => (this.producer ? this.producer.publish('audit', checkpoint) : Promise.reject(this.options.unavailable('stopped'))),
        onError: () => this.log('warn', 'could not append an audit checkpoint; its records go into the next', { code: 'AUDIT.CHECKPOINT_FAILED' }),
      });
      this.checkpointers.set(source, checkpointer);
    }
    return checkpointer;
  }

  /** Appends without waiting for a verdict (an undo, an expiry sweep); resolves once the broker has it. */
  async append(event: TopicEvent<T>): Promise<AppendResult> {
    const producer = this.producer;
    if (this.currentPhase !== 'running' || !producer) throw this.options.unavailable(this.currentPhase);
    return producer.publish(this.options.topicId, event);
  }

  private giveUp(event: TopicEvent<T>): void {
    const settled = this.book.abandon(event.id);
    if (settled !== undefined) this.options.onAbandoned?.(event, settled);
  }

  status(): FoldStatus {
    return {
      phase: this.currentPhase,
      appliedOffsets: toRecord(this.applied.snapshot()),
      projectedOffsets: toRecord(this.answered.snapshot()),
      unappliedRecords: this.unapplied,
      waitingWriters: this.answered.waiting(),
      verdictsEvicted: this.book.evicted(),
      projectionFailures: this.projectionFailures,
      start: this.startReport,
      snapshots: { written: this.snapshotsWritten, ...(this.lastSnapshotOffsets && { lastOffsets: this.lastSnapshotOffsets }) },
    };
  }

  /** Stops tailing and appending; waiting writers get the `unavailable` error. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.currentPhase === 'stopped') return;
    const wasRunning = this.currentPhase === 'running';
    this.currentPhase = 'stopped';
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const stopping = this.options.unavailable('stopping');
    this.answered.close(stopping);
    this.applied.close(stopping);
    await this.tail?.stop().catch(() => undefined);
    await this.flushing?.catch(() => undefined);
    const projection = this.options.projection;
    if (wasRunning && projection && (projection.pending() > 0 || this.sinceSnapshot > 0)) {
      // Best effort, with a snapshot so the next start begins here: a restart reads on from the last one stored anyway.
      const snapshot = this.takeSnapshot();
      await projection.flush(this.foldState, this.applied.snapshot(), snapshot).then(
        () => this.snapshotStored(snapshot),
        () => undefined,
      );
    }
    // The last checkpoints, so every audit record this engine appended is covered.
    for (const checkpointer of this.checkpointers.values()) await checkpointer.close().catch(() => undefined);
    await this.producer?.close().catch(() => undefined);
  }
}

/** Records applied between two prunes of the fold: a prune walks the whole state, so not per record. */
const PRUNE_EVERY = 5_000;
const PRUNE_AFTER_MS = 60_000;

/** The number of partitions of `topic`. */
async function partitionCount(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return (await admin.fetchTopicOffsets(topic)).length;
  } finally {
    await admin.disconnect();
  }
}

/** Whether `error` is already an "unavailable" answer (a deadline the engine set). */
function isUnavailable(error: unknown): boolean {
  return error instanceof GatehouseError && error.category === 'unavailable';
}
