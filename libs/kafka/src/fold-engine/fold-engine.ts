import { type AgentKey, GatehouseError, type SigningKey, type TopicEvent, type TopicId, topicName } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { EventProducer, type AppendResult } from '../producer.js';
import { type DecodedRecord, type PoisonRecord } from '../records.js';
import { replayTopic } from '../replay.js';
import { type TailHandle, tailTopic } from '../tail.js';
import { EngineAuditWriter } from './audit-writer.js';
import { behindLogStart, FoldCore, toRecord } from './fold-core.js';
import { reportIfUntrusted, type UntrustedReporting } from './fold-reader.js';
import { applySpanName, recordDecisionLatency } from '../telemetry/kafka-telemetry.js';
import { type FoldSnapshot, type SnapshotCodec, type SnapshotRejection, type StoredFoldSnapshot } from './fold-snapshot.js';

export { behindLogStart };

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
  /**
   * The start began from checkpoints in the log (`FoldCheckpoints`): the next flush writes `rows`
   * (per table, each row's id and where it stands) and, on every partition whose stored rows fall
   * short of its cut, first drops the rows older than the cut (they may be of keys the state no
   * longer has).
   */
  seed?(rows: ReadonlyMap<string, ReadonlyMap<string, RowPosition>>, cuts: ReadonlyMap<number, bigint>): void;
}

/** Where a projection row stands in the log: the partition and offset of the last record it reflects. */
export interface RowPosition {
  readonly partition: number;
  readonly offset: bigint;
}

/** A start from the checkpoints in a log whose beginning was deleted. */
export interface CheckpointStart<S> {
  /** The fold's state at `offsets`. */
  readonly state: S;
  /** Per partition with a checkpoint, its cut: the next offset the state has not applied (others are read from where they begin). */
  readonly offsets: ReadonlyMap<number, bigint>;
  /** The projection rows the state has, per table (`FoldProjection.seed`). */
  readonly rows: ReadonlyMap<string, ReadonlyMap<string, RowPosition>>;
}

/**
 * For a fold whose topic deletes records it would otherwise need (the ledger's open keys have no
 * end in time): how it starts when a partition no longer begins where the stored snapshot (or
 * offset 0) does. Without it, such a start reads on from where each partition begins, which only
 * a fold whose state ends in time (the approvals') may do.
 */
export interface FoldCheckpoints<S> {
  /**
   * The state from the checkpoints the log holds, covering `starts` (each partition's first
   * offset on the broker); undefined when a partition that lost records has no complete
   * checkpoint at or past its start (the engine then refuses to start: FOLD.HISTORY_LOST).
   */
  restore(starts: ReadonlyMap<number, bigint>): Promise<CheckpointStart<S> | undefined>;
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
  /** Checkpoints in the log, for a topic that deletes records the fold needs (see `FoldCheckpoints`). */
  readonly checkpoints?: FoldCheckpoints<S>;
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
  /**
   * Where the start began: a snapshot, the checkpoints in a log whose beginning was deleted, or
   * offset 0 (and why no snapshot was used, when one was stored); and the records read after it.
   */
  readonly start: { readonly from: 'snapshot' | 'checkpoint' | 'offset-0'; readonly records: number; readonly rejected?: SnapshotRejection };
  /** Snapshots this engine stored, and the offsets of the last. */
  readonly snapshots: { readonly written: number; readonly lastOffsets?: Record<number, string> };
}

/** Races `work` against `deadline` (epoch ms); a late settlement of `work` is swallowed. */
export function withDeadline<R>(work: Promise<R>, deadline: number, late: () => Error): Promise<R> {
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
 * A service's single decision point over one topic. On start it folds the topic from its
 * snapshot (or offset 0; log append time as the clock), then tails it, applying every record in
 * partition order and committing the projection once per batch (one `FoldCore` over every
 * partition). A writer appends its event, waits until that offset is applied (and projected), and
 * reads the fold's verdict on its own event: the log order, not this process, decides. A tail that
 * stops for good fails the engine closed. (A scaled-out service folds only the partitions it owns:
 * `OwnedFoldEngine`.)
 */
export class FoldEngine<T extends TopicId, S, V> {
  private readonly core: FoldCore<T, S, V>;
  private readonly log: FoldLog;
  private readonly deadlineMs: number;
  private currentPhase: FoldPhase = 'starting';
  private producer: EventProducer | undefined;
  private tail: TailHandle | undefined;
  /** The engine's audit writes: appended, then covered by the next checkpoint. */
  private readonly audit: EngineAuditWriter;

  private constructor(private readonly options: FoldEngineOptions<T, S, V>) {
    this.core = new FoldCore(options);
    this.log = options.log ?? (() => undefined);
    this.deadlineMs = options.decisionDeadlineMs ?? 5_000;
    this.audit = new EngineAuditWriter(() => this.producer, () => options.unavailable(this.currentPhase), options.auditKey, this.log);
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
    const core = this.core;
    this.producer = await EventProducer.connect(kafka, { namespace });
    const batchSize = this.options.replayBatchSize ?? 1_000;
    let sinceFlush = 0;
    const started = Date.now();
    const topic = topicName(topicId, namespace);
    const starts = this.options.checkpoints ? await logStarts(kafka, topic) : undefined;
    let fromOffsets = await core.loadSnapshot(starts);
    if (starts && behindLogStart(starts, fromOffsets)) fromOffsets = await this.restoreCheckpoints(starts);
    if (this.options.fold.prune) core.trackPartitionTimes(await partitionCount(kafka, topic));
    const replay = await replayTopic(kafka, topicId, {
      namespace,
      timeoutMs: this.options.replayTimeoutMs ?? 60_000,
      timeoutOnStall: true,
      ...(fromOffsets && { fromOffsets }),
      onRecord: async (record) => {
        core.ingest(record);
        sinceFlush += 1;
        if (projection && sinceFlush >= batchSize) {
          sinceFlush = 0;
          await core.startupFlush();
        }
      },
      onPoison: (poison) => core.ingestPoison(poison),
    });
    await core.finishStartup(replay.nextOffsets, replay.records + replay.poison);
    this.log('info', `${topicId} replayed`, { records: replay.records, unapplied: replay.poison, ms: Date.now() - started, from: core.startReport.from });
    this.tail = await tailTopic(kafka, topicId, {
      namespace,
      fromOffsets: replay.nextOffsets,
      recordSpan: applySpanName(topicId),
      onRecord: (record) => {
        core.ingest(record);
        if (this.options.untrusted) reportIfUntrusted(record, topicId, namespace, this.options.untrusted, () => (this.producer ? this.audit : undefined), this.log);
      },
      onPoison: (poison) => core.ingestPoison(poison),
      onBatchEnd: (partition, next) => core.batchEnd(partition, BigInt(next)),
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
   * Starts the fold from the checkpoints in the log (some partition no longer begins where the
   * start would read from) and returns the offsets to read on from; refuses with FOLD.HISTORY_LOST
   * when they do not cover what was deleted.
   */
  private async restoreCheckpoints(starts: ReadonlyMap<number, bigint>): Promise<Record<number, string>> {
    const { topicId, namespace, checkpoints } = this.options;
    if (!checkpoints) throw new TypeError('restoreCheckpoints without checkpoints');
    let found: CheckpointStart<S> & { readonly fromOffsets: Record<number, string> };
    try {
      found = await restoreFromCheckpoints(checkpoints, topicName(topicId, namespace), starts);
    } catch (error) {
      this.log('error', `${topicId} lost records no checkpoint covers; refusing to start`, { code: 'FOLD.HISTORY_LOST' });
      throw error;
    }
    this.core.restored(found);
    return found.fromOffsets;
  }

  /**
   * The fold's state and, per partition, the next offset it has not applied: a consistent cut when
   * read between two records' handling (from a timer, not from inside a handler), and only until
   * the next record is applied (the state is the engine's own, advanced in place).
   */
  cut(): { readonly state: S; readonly offsets: ReadonlyMap<number, bigint> } {
    return this.core.cut();
  }

  /** The fold's state, read only: the engine owns it and advances it in place. */
  get state(): S {
    return this.core.state;
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
    return decideOn(this.core, producer, this.options, event, Date.now() + this.deadlineMs);
  }

  /**
   * Resolves once the record at `offset` on `partition` is applied and (with a projection)
   * committed, so what it changed can be read back from the database; rejects after `timeoutMs`
   * or when the engine stops.
   */
  whenAnswered(partition: number, offset: bigint, timeoutMs = 30_000): Promise<void> {
    return this.core.answered.waitFor(partition, offset, Date.now() + timeoutMs);
  }

  /** Appends `event` to another topic (a security event on the audit topic, say) with the engine's producer. */
  async publishTo<U extends TopicId>(topicId: U, event: TopicEvent<U>): Promise<AppendResult> {
    const producer = this.producer;
    if (this.currentPhase !== 'running' || !producer) throw this.options.unavailable(this.currentPhase);
    if (topicId === 'audit') return this.audit.publish('audit', event as TopicEvent<'audit'>);
    return producer.publish(topicId, event);
  }

  /** Appends without waiting for a verdict (an undo, an expiry sweep); resolves once the broker has it. */
  async append(event: TopicEvent<T>): Promise<AppendResult> {
    const producer = this.producer;
    if (this.currentPhase !== 'running' || !producer) throw this.options.unavailable(this.currentPhase);
    return producer.publish(this.options.topicId, event);
  }

  status(): FoldStatus {
    return { phase: this.currentPhase, ...this.core.status() };
  }

  /** Stops tailing and appending; waiting writers get the `unavailable` error. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.currentPhase === 'stopped') return;
    const wasRunning = this.currentPhase === 'running';
    this.currentPhase = 'stopped';
    const stopping = this.options.unavailable('stopping');
    // The tail stops first, so no record is applied while the core commits its last rows.
    this.core.answered.close(stopping);
    this.core.applied.close(stopping);
    await this.tail?.stop().catch(() => undefined);
    await this.core.stop(stopping, wasRunning);
    // The last checkpoints, so every audit record this engine appended is covered.
    await this.audit.close();
    await this.producer?.close().catch(() => undefined);
  }
}

/**
 * Appends `event` with `producer`, waits on `core` until its offset is applied (and projected) and
 * returns the fold's verdict on it: the writer's path of every engine. `deadline` bounds it all.
 */
export async function decideOn<T extends TopicId, S, V>(
  core: FoldCore<T, S, V>,
  producer: EventProducer,
  options: Pick<FoldEngineOptions<T, S, V>, 'topicId' | 'unavailable' | 'namespace'>,
  event: TopicEvent<T>,
  deadline: number,
): Promise<V> {
  const started = performance.now();
  const topic = topicName(options.topicId, options.namespace);
  core.book.expect(event.id);
  let appended: AppendResult;
  try {
    appended = await withDeadline(producer.publish(options.topicId, event), deadline, () => options.unavailable('append-deadline'));
  } catch (error) {
    core.giveUp(event);
    // An event that fails its contract was never sent: that is the request's fault, not the engine's.
    const refused = error instanceof GatehouseError && error.category === 'validation';
    recordDecisionLatency(topic, started, refused ? 'refused' : 'unavailable');
    if (refused) throw error;
    throw isUnavailable(error) ? error : options.unavailable('append-failed', error);
  }
  try {
    const verdict = await core.verdictOf(event.id, appended.partition, BigInt(appended.offset), deadline);
    recordDecisionLatency(topic, started, 'answered');
    return verdict;
  } catch (error) {
    core.giveUp(event);
    recordDecisionLatency(topic, started, 'unavailable');
    throw isUnavailable(error) ? error : options.unavailable('fold-failed', error);
  }
}

/** The refusal of a fold over a log that deleted records no checkpoint in it covers. */
function historyLost(topic: string, starts: ReadonlyMap<number, bigint>): GatehouseError {
  return new GatehouseError('FOLD.HISTORY_LOST', 'the topic deleted records the fold needs and holds no checkpoint covering them: start from a database whose projection is past them, or restore the topic', {
    category: 'unavailable',
    details: { topic, starts: toRecord(starts) },
  });
}

/**
 * The start of a fold over a log whose beginning was deleted, from `checkpoints` (the engine's and
 * a rebuild's), with the offsets each partition reads on from (its cut, or where it begins when it
 * lost nothing and has none); FOLD.HISTORY_LOST when they do not cover what was deleted.
 */
export async function restoreFromCheckpoints<S>(checkpoints: FoldCheckpoints<S>, topic: string, starts: ReadonlyMap<number, bigint>): Promise<CheckpointStart<S> & { readonly fromOffsets: Record<number, string> }> {
  const found = await checkpoints.restore(starts);
  if (!found) throw historyLost(topic, starts);
  const fromOffsets = Object.fromEntries([...starts].map(([partition, low]) => [partition, (found.offsets.get(partition) ?? low).toString()]));
  return { ...found, fromOffsets };
}

/** Each partition's first offset on the broker (what retention has not deleted). */
export async function logStarts(kafka: Kafka, topic: string): Promise<Map<number, bigint>> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.low)]));
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The number of partitions of `topic`. */
export async function partitionCount(kafka: Kafka, topic: string): Promise<number> {
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
