import { type TopicId } from '@gatehouse/contracts';
import { type DecodedRecord, type PoisonRecord } from '../records.js';
import { type CheckpointStart, type Fold, type FoldLog, type FoldProjection, type FoldStatus } from './fold-engine.js';
import { keyPartitioner, PartitionTimes } from './key-partitions.js';
import { OffsetWatermarks } from './offset-watermarks.js';
import { type FoldSnapshot, type SnapshotRejection } from './fold-snapshot.js';
import { VerdictBook } from './verdict-book.js';

/** What a core needs of its engine's options. */
export interface FoldCoreOptions<T extends TopicId, S, V> {
  readonly topicId: T;
  readonly fold: Fold<T, S, V>;
  readonly projection?: FoldProjection<T, S> | undefined;
  readonly unavailable: (reason: string, cause?: unknown) => Error;
  readonly onApplied?: (record: DecodedRecord<T>, verdict: V, live: boolean) => void;
  readonly onAbandoned?: (event: DecodedRecord<T>['event'], verdict: V) => void;
  readonly verdictCapacity?: number;
  readonly snapshotIntervalMs?: number;
  readonly log?: FoldLog;
}

export const toRecord = (offsets: ReadonlyMap<number, bigint>): Record<number, string> =>
  Object.fromEntries([...offsets].sort(([a], [b]) => a - b).map(([p, o]) => [p, o.toString()]));

const noLog: FoldLog = () => undefined;

/** Records applied between two prunes of the fold: a prune walks the whole state, so not per record. */
const PRUNE_EVERY = 5_000;
const PRUNE_AFTER_MS = 60_000;

/** Whether some partition of the log no longer begins where a read from `from` (a snapshot's offsets; none: offset 0) would. */
export function behindLogStart(starts: ReadonlyMap<number, bigint>, from: Readonly<Record<number, string>> | undefined): boolean {
  return [...starts].some(([partition, low]) => low > BigInt(from?.[partition] ?? '0'));
}

/**
 * One fold's state over the partitions it covers, with everything that keeps it: the offsets it
 * applied and committed, the verdicts writers wait for, the projection's flushes, snapshots and
 * prunes. What a driver feeds records into: the single-replica engine covers every partition of
 * the topic with one core, a replica of a scaled-out service one core per partition it owns.
 * Each concurrency rule has its paragraph where it is kept.
 */
export class FoldCore<T extends TopicId, S, V> {
  private foldState: S;
  /** What the in-memory fold has applied. */
  readonly applied: OffsetWatermarks;
  /** What the fold has applied and the projection has committed: writers wait on this. */
  readonly answered: OffsetWatermarks;
  readonly book: VerdictBook<V>;
  private readonly log: FoldLog;
  /** Whether records are live (the start-up read is done): verdicts then answer writers. */
  private live = false;
  private stopped = false;
  private unapplied = 0;
  private projectionFailures = 0;
  private flushing: Promise<void> | undefined;
  private flushAgain = false;
  private retryDelayMs = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  startReport: FoldStatus['start'] = { from: 'offset-0', records: 0 };
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

  constructor(private readonly options: FoldCoreOptions<T, S, V>) {
    this.foldState = options.fold.create();
    const late = () => options.unavailable('fold-deadline');
    this.applied = new OffsetWatermarks(late);
    this.answered = new OffsetWatermarks(late);
    this.book = new VerdictBook<V>(options.verdictCapacity ?? 10_000);
    this.log = options.log ?? noLog;
  }

  /** The fold's state, read only: the core owns it and advances it in place. */
  get state(): S {
    return this.foldState;
  }

  /** With a fold that prunes: the topic's partition count, so the core can ask how far a key's partition has come. */
  trackPartitionTimes(partitions: number): void {
    if (!this.options.fold.prune) return;
    this.partitionTimes = new PartitionTimes(keyPartitioner(partitions));
    for (const [partition, time] of Object.entries(this.seedTimes)) this.partitionTimes.advance(Number(partition), time);
  }

  /**
   * Loads the projection's snapshot into the fold and returns the offsets to read on from;
   * undefined (read from offset 0) when there is none, or it is another fold version's or
   * unreadable, which is logged as FOLD.SNAPSHOT_REJECTED and shown in `status().start`.
   */
  async loadSnapshot(starts?: ReadonlyMap<number, bigint>): Promise<Record<number, string> | undefined> {
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
    // The log has deleted records after the snapshot: the fold of what is left would miss them.
    if (starts && behindLogStart(starts, stored.offsets)) return reject('behind-log-start');
    this.foldState = state;
    for (const [partition, next] of offsets) this.applied.advance(partition, next);
    // The start reads on at least as far as the projection's last records: their times are the partitions' times by then.
    this.seedTimes = found.partitionTimes;
    this.lastSnapshotOffsets = { ...stored.offsets };
    this.lastSnapshotAt = Date.now();
    this.startReport = { from: 'snapshot', records: 0 };
    return Object.fromEntries([...offsets].map(([p, o]) => [p, o.toString()]));
  }

  /** Starts the fold from a checkpoint start (`restoreFromCheckpoints`): its state, offsets and rows. */
  restored(found: CheckpointStart<S>): void {
    this.foldState = found.state;
    for (const [partition, cut] of found.offsets) this.applied.advance(partition, cut);
    this.options.projection?.seed?.(found.rows, found.offsets);
    // A snapshot of the restored state is due at the end of the start, whatever it read after it.
    this.sinceSnapshot = Math.max(this.sinceSnapshot, 1);
    const rejected = this.startReport.rejected;
    this.startReport = { from: 'checkpoint', records: 0, ...(rejected && { rejected }) };
    this.log('info', `${this.options.topicId} starting from the checkpoints in its log`, { partitions: found.offsets.size });
  }

  /**
   * The fold's state and, per partition, the next offset it has not applied: a consistent cut when
   * read between two records' handling (from a timer, not from inside a handler), and only until
   * the next record is applied (the state is the core's own, advanced in place).
   */
  cut(): { readonly state: S; readonly offsets: ReadonlyMap<number, bigint> } {
    return { state: this.foldState, offsets: this.applied.snapshot() };
  }

  /**
   * Applies one record to the fold; keeps the verdict when this process appended the event.
   * Returns the verdict, for the driver's live hooks.
   */
  ingest(record: DecodedRecord<T>): V {
    const verdict = this.options.fold.apply(this.foldState, record.event, record.logTime.getTime());
    this.sinceSnapshot += 1;
    this.partitionTimes?.advance(record.partition, record.logTime.getTime());
    this.sincePrune += 1;
    if (!this.options.projection) this.pruneIfDue();
    const fate = this.book.settle(record.event.id, verdict);
    this.options.projection?.touch(record);
    const next = BigInt(record.offset) + 1n;
    this.applied.advance(record.partition, next);
    if (!this.options.projection && this.live) this.answered.advance(record.partition, next);
    this.options.onApplied?.(record, verdict, this.live);
    if (fate === 'abandoned') this.options.onAbandoned?.(record.event, verdict);
    return verdict;
  }

  ingestPoison(poison: PoisonRecord): void {
    this.unapplied += 1;
    this.sinceSnapshot += 1;
    this.options.projection?.unappliable(poison);
    this.applied.advance(poison.partition, BigInt(poison.offset) + 1n);
    this.log('warn', `${this.options.topicId} record could not be applied`, { code: poison.code, partition: poison.partition, offset: poison.offset });
  }

  /** During the start-up read: commits a batch of rows (and a snapshot when one is due). */
  async startupFlush(): Promise<void> {
    const projection = this.options.projection;
    if (!projection) return;
    const snapshot = this.snapshotIfDue();
    const writing = projection.flush(this.foldState, this.applied.snapshot(), snapshot);
    this.pruneIfDue(); // the flush has read its rows
    await writing;
    this.snapshotStored(snapshot);
  }

  /**
   * The start-up read reached `nextOffsets`: commits the rows and, the fold having let go of what
   * settled while the service was down, the snapshot of what is left (the state at the same
   * offsets, which the next start loads); then the core answers writers.
   */
  async finishStartup(nextOffsets: Readonly<Record<number, string>>, records: number): Promise<void> {
    for (const [partition, next] of Object.entries(nextOffsets)) this.applied.advance(Number(partition), BigInt(next));
    const projection = this.options.projection;
    if (projection) {
      await projection.flush(this.foldState, this.applied.snapshot());
      this.pruneIfDue(true);
      const snapshot = this.sinceSnapshot > 0 ? this.takeSnapshot() : undefined;
      await projection.flush(this.foldState, this.applied.snapshot(), snapshot);
      this.snapshotStored(snapshot);
    } else {
      this.pruneIfDue(true);
    }
    for (const [partition, next] of this.applied.snapshot()) this.answered.advance(partition, next);
    this.startReport = { ...this.startReport, records };
    this.live = true;
  }

  /** A live batch of `partition` ended at `next`: the projection commits it (not awaited: flushes coalesce). */
  batchEnd(partition: number, next: bigint): void {
    this.applied.advance(partition, next);
    if (!this.options.projection) this.answered.advance(partition, next);
    // Not awaited: a slow database must not hold the fold back; flushes coalesce meanwhile.
    void this.flush();
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
  flush(): Promise<void> {
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
        } catch (error) {
          // The snapshot went with the failed transaction: take one again at the next flush.
          if (snapshot) this.snapshotLost();
          this.projectionFailed(error);
          return;
        }
        this.retryDelayMs = 0;
        for (const [partition, next] of through) this.answered.advance(partition, next);
      } while (this.flushAgain && !this.stopped);
    })().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** The fold goes on; answers wait (and time out, failing closed) until the database is back. */
  private projectionFailed(error: unknown): void {
    this.projectionFailures += 1;
    if (isFenced(error)) {
      // Another replica owns the partition now: nothing this core holds will ever be committed.
      this.log('warn', `${this.options.topicId} projection write fenced: the partition has a newer owner`, { code: 'FOLD.FENCED' });
      return;
    }
    this.retryDelayMs = Math.min(Math.max(this.retryDelayMs * 2, 100), 2_000);
    this.log('warn', `${this.options.topicId} projection write failed; retrying`, { code: 'FOLD.PROJECTION_WRITE_FAILED', retryInMs: this.retryDelayMs });
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.flush();
    }, this.retryDelayMs);
  }

  /**
   * The verdict on the writer's own event once its offset is answered; the `unavailable` error
   * when that cannot be confirmed by `deadline`.
   */
  async verdictOf(eventId: string, partition: number, offset: bigint, deadline: number): Promise<V> {
    await this.answered.waitFor(partition, offset, deadline);
    const verdict = this.book.take(eventId);
    if (verdict === undefined) throw this.options.unavailable('verdict-lost');
    return verdict;
  }

  /** A writer gave up: the verdict, if the fold already applied its event, goes to `onAbandoned`. */
  giveUp(event: DecodedRecord<T>['event']): void {
    const settled = this.book.abandon(event.id);
    if (settled !== undefined) this.options.onAbandoned?.(event, settled);
  }

  /** The core's part of the engine's status. */
  status(): Omit<FoldStatus, 'phase'> {
    return {
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

  /**
   * Stops: waiting writers get `error`; a running core commits what it has (best effort, with a
   * snapshot so the next start begins here: a restart reads on from the last one stored anyway).
   */
  async stop(error: Error, finalFlush: boolean): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.answered.close(error);
    this.applied.close(error);
    await this.flushing?.catch(() => undefined);
    const projection = this.options.projection;
    if (finalFlush && projection && (projection.pending() > 0 || this.sinceSnapshot > 0)) {
      const snapshot = this.takeSnapshot();
      await projection.flush(this.foldState, this.applied.snapshot(), snapshot).then(
        () => this.snapshotStored(snapshot),
        () => undefined,
      );
    }
  }
}

/** Whether a projection write failed because another replica owns the partition now (FOLD.FENCED). */
export function isFenced(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'FOLD.FENCED';
}

