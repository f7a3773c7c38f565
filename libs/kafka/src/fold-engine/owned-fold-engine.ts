import { GatehouseError, recordKey, type TopicEvent, type TopicId, topicName, TOPICS } from '@gatehouse/contracts';
import { type AppendResult, EventProducer } from '../producer.js';
import { type OwnedPartition, OwnedTail } from '../owned-tail.js';
import { EngineAuditWriter } from './audit-writer.js';
import { behindLogStart, FoldCore } from './fold-core.js';
import { decideOn, type FoldEngineOptions, type FoldLog, type FoldPhase, type FoldProjection, type FoldStatus, logStarts, partitionCount, restoreFromCheckpoints } from './fold-engine.js';
import { reportIfUntrusted } from './fold-reader.js';
import { applySpanName } from '../telemetry/kafka-telemetry.js';
import { keyPartitioner } from './key-partitions.js';

/** Who owns which partition of a fold, as the replicas record it (a service's database). */
export interface PartitionOwners {
  /**
   * This replica takes `partition`: returns its fencing epoch, higher than every earlier owner's.
   * The projection of the partition refuses to commit for any other epoch (FOLD.FENCED).
   */
  claim(partition: number): Promise<number>;
}

export interface OwnedFoldEngineOptions<T extends TopicId, S, V> extends Omit<FoldEngineOptions<T, S, V>, 'projection'> {
  /**
   * The consumer group's purpose (`kafkaGroupId`; the topic namespace is added to it): the replicas
   * of one service share it, and Kafka splits the partitions among them.
   */
  readonly group: string;
  /** Records ownership and hands out fencing epochs. */
  readonly owners: PartitionOwners;
  /** The projection of one partition's rows, fenced by `epoch` (its offsets and its own snapshot row). */
  readonly projectionOf?: (partition: number, epoch: number) => FoldProjection<T, S>;
  /** How long the group waits for a replica that stopped answering before its partitions move, ms. Default 10,000. */
  readonly sessionTimeoutMs?: number;
}

/** What the engine does with a partition: loading its snapshot, reading up to the end it saw when it got it, or answering. */
type Stage = 'loading' | 'catching-up' | 'live';

interface Owned<T extends TopicId, S, V> {
  readonly core: FoldCore<T, S, V>;
  stage: Stage;
  /** The offset the partition's end had when it was assigned: the core answers once it applied it. */
  target: bigint;
  read: number;
  sinceFlush: number;
}

/** The refusal of a request for a key of a partition this replica does not own (the service forwards it to the owner). */
export function notOwner(partition: number): GatehouseError {
  return new GatehouseError('FOLD.NOT_OWNER', 'another replica owns the partition of this key', { category: 'unavailable', retryable: true, details: { partition } });
}

/**
 * A replica's part of a scaled-out fold service. The replicas of a service share one consumer
 * group on the topic, and Kafka assigns each its partitions: a replica folds only those, with one
 * `FoldCore` per partition (its own state, projection offsets and snapshot row), and answers only
 * writers whose key is on one of them; a request for another partition's key gets FOLD.NOT_OWNER
 * (retryable), and the service forwards it to the owner.
 *
 * A partition it is assigned is claimed first (`owners.claim`: a fencing epoch), then its snapshot
 * is loaded and the partition read from the snapshot's offsets up to the end it had when it was
 * assigned; only then does its core answer. A partition that moves away stops at once: its
 * writers get the `unavailable` error (retryable), and whatever it had not committed is never
 * committed, because the new owner's claim fenced it: every answer waits for a commit, so no
 * verdict is answered by two replicas, and the new owner reads on from the last commit, so none is
 * lost.
 */
export class OwnedFoldEngine<T extends TopicId, S, V> {
  private readonly owned = new Map<number, Owned<T, S, V>>();
  private readonly log: FoldLog;
  private readonly deadlineMs: number;
  private currentPhase: FoldPhase = 'starting';
  private producer: EventProducer | undefined;
  private tail: OwnedTail<T> | undefined;
  private partitions = 0;
  private partitionOf: (key: string) => number = () => 0;
  private readonly topic: string;
  /** The engine's audit writes (security reports): appended, then covered by the next checkpoint. */
  private readonly audit: EngineAuditWriter;

  private constructor(private readonly options: OwnedFoldEngineOptions<T, S, V>) {
    this.log = options.log ?? (() => undefined);
    this.deadlineMs = options.decisionDeadlineMs ?? 5_000;
    this.topic = topicName(options.topicId, options.namespace);
    this.audit = new EngineAuditWriter(() => this.producer, () => options.unavailable(this.currentPhase), options.auditKey, this.log);
  }

  /** Joins the group and returns the engine; it answers for each partition once that partition is caught up. */
  static async start<T extends TopicId, S, V>(options: OwnedFoldEngineOptions<T, S, V>): Promise<OwnedFoldEngine<T, S, V>> {
    const engine = new OwnedFoldEngine(options);
    try {
      await engine.run();
    } catch (error) {
      await engine.stop();
      throw error;
    }
    return engine;
  }

  private async run(): Promise<void> {
    const { kafka, namespace } = this.options;
    this.partitions = await partitionCount(kafka, this.topic);
    this.partitionOf = keyPartitioner(this.partitions);
    this.producer = await EventProducer.connect(kafka, { namespace });
    this.tail = await OwnedTail.start({
      kafka,
      topicId: this.options.topicId,
      namespace,
      group: this.options.group,
      ...(this.options.sessionTimeoutMs !== undefined && { sessionTimeoutMs: this.options.sessionTimeoutMs }),
      take: (partition) => this.take(partition),
      onCrash: (error) => this.fail(error),
      onTakeFailed: (partition, attempt) => {
        if (attempt === 1 || attempt % 10 === 0) this.log('warn', `${this.options.topicId} partition ${partition} could not be set up yet; retrying`, { code: 'FOLD.PARTITION_SETUP_FAILED', partition, attempt });
      },
      recordSpan: applySpanName(this.options.topicId),
    });
    this.currentPhase = 'running';
  }

  /**
   * The group gave this replica `partition`: it is claimed (a fencing epoch), its snapshot loaded
   * (or its log checkpoints), and read up to the end it had now before its core answers.
   */
  private async take(partition: number): Promise<OwnedPartition<T>> {
    const epoch = await this.options.owners.claim(partition);
    const projection = this.options.projectionOf?.(partition, epoch);
    const core = new FoldCore<T, S, V>({ ...this.options, projection });
    const entry: Owned<T, S, V> = { core, stage: 'loading', target: 0n, read: 0, sinceFlush: 0 };
    const { kafka, checkpoints } = this.options;
    const starts = new Map([[partition, (await logStarts(kafka, this.topic)).get(partition) ?? 0n]]);
    let from = await core.loadSnapshot(checkpoints ? starts : undefined);
    if (checkpoints && behindLogStart(starts, from)) {
      const found = await restoreFromCheckpoints(checkpoints, this.topic, starts);
      core.restored(found);
      from = found.fromOffsets;
    }
    core.trackPartitionTimes(this.partitions);
    const fromOffset = BigInt(from?.[partition] ?? starts.get(partition)?.toString() ?? '0');
    core.applied.advance(partition, fromOffset);
    entry.target = await this.endOf(partition);
    entry.stage = 'catching-up';
    this.owned.set(partition, entry);
    if (fromOffset >= entry.target) await this.goLive(partition, entry);
    return {
      from: fromOffset,
      record: async (record) => {
        core.ingest(record);
        if (entry.stage === 'live' && this.options.untrusted) reportIfUntrusted(record, this.options.topicId, this.options.namespace, this.options.untrusted, () => (this.producer ? this.audit : undefined), this.log);
        entry.read += 1;
        if (entry.stage === 'catching-up' && (entry.sinceFlush += 1) >= (this.options.replayBatchSize ?? 1_000)) {
          entry.sinceFlush = 0;
          await core.startupFlush();
        }
      },
      poison: (poison) => {
        core.ingestPoison(poison);
        entry.read += 1;
      },
      batchEnd: async (next) => {
        if (entry.stage === 'live') return core.batchEnd(partition, next);
        core.applied.advance(partition, next);
        if (next >= entry.target) await this.goLive(partition, entry);
      },
      stop: async () => {
        if (this.owned.get(partition) === entry) this.owned.delete(partition);
        // Its last rows are committed only while no other replica has claimed it (the epoch fences them).
        await core.stop(this.options.unavailable(this.currentPhase === 'stopped' ? 'stopping' : 'partition-moved'), entry.stage === 'live');
        if (this.currentPhase !== 'stopped') this.log('info', `${this.options.topicId} partition ${partition} moved to another replica`, { partition });
      },
    };
  }

  private async goLive(partition: number, entry: Owned<T, S, V>): Promise<void> {
    if (entry.stage === 'live') return;
    entry.stage = 'live';
    await entry.core.finishStartup({ [partition]: entry.core.applied.get(partition).toString() }, entry.read);
    this.log('info', `${this.options.topicId} partition ${partition} answering`, { partition, records: entry.read, from: entry.core.startReport.from });
  }

  private async endOf(partition: number): Promise<bigint> {
    const admin = this.options.kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(this.topic);
      return BigInt(offsets.find((o) => o.partition === partition)?.high ?? '0');
    } finally {
      await admin.disconnect();
    }
  }

  private fail(error: unknown): void {
    if (this.currentPhase === 'stopped') return;
    // Fail closed: no answer can be confirmed any more.
    this.currentPhase = 'failed';
    this.log('error', `${this.options.topicId} consumer stopped; decisions are refused until restart`, { code: 'FOLD.TAIL_CRASHED', error: error instanceof Error ? error.name : 'unknown' });
  }

  get phase(): FoldPhase {
    return this.currentPhase;
  }

  /** The partition of a record key on the topic (the producers' partitioner). */
  partitionOfKey(key: string): number {
    return this.partitionOf(key);
  }

  /** The partitions this replica answers for now. */
  livePartitions(): number[] {
    return [...this.owned].filter(([, e]) => e.stage === 'live').map(([p]) => p).sort((a, b) => a - b);
  }

  /** The state of the partition `key` is on, when this replica answers for it; FOLD.NOT_OWNER otherwise. */
  stateFor(key: string): S {
    const partition = this.partitionOf(key);
    const entry = this.owned.get(partition);
    if (this.currentPhase !== 'running') throw this.options.unavailable(this.currentPhase);
    if (entry?.stage !== 'live') throw notOwner(partition);
    return entry.core.state;
  }

  /** Each partition this replica answers for: its state, and a consistent cut of it (`FoldEngine.cut`). */
  parts(): { readonly partition: number; readonly state: S; cut(): { readonly state: S; readonly offsets: ReadonlyMap<number, bigint> } }[] {
    return [...this.owned]
      .filter(([, e]) => e.stage === 'live')
      .map(([partition, e]) => ({ partition, state: e.core.state, cut: () => e.core.cut() }));
  }

  /**
   * Appends `event` and answers with the fold's verdict on it, when its key's partition is one this
   * replica answers for; FOLD.NOT_OWNER (before anything is appended) when it is not.
   */
  async decide(event: TopicEvent<T>): Promise<V> {
    const producer = this.producer;
    if (this.currentPhase !== 'running' || !producer) throw this.options.unavailable(this.currentPhase);
    const partition = this.partitionOf(recordKey(event, TOPICS[this.options.topicId]));
    const entry = this.owned.get(partition);
    if (entry?.stage !== 'live') throw notOwner(partition);
    return decideOn(entry.core, producer, this.options, event, Date.now() + this.deadlineMs);
  }

  /** Appends without waiting for a verdict; resolves once the broker has it. */
  async append(event: TopicEvent<T>): Promise<AppendResult> {
    const producer = this.producer;
    if (this.currentPhase !== 'running' || !producer) throw this.options.unavailable(this.currentPhase);
    return producer.publish(this.options.topicId, event);
  }

  /** Appends `event` to another topic (a security event on the audit topic, say); audit records are covered by the engine's signed checkpoints. */
  async publishTo<U extends TopicId>(topicId: U, event: TopicEvent<U>): Promise<AppendResult> {
    const producer = this.producer;
    if (this.currentPhase !== 'running' || !producer) throw this.options.unavailable(this.currentPhase);
    if (topicId === 'audit') return this.audit.publish('audit', event as TopicEvent<'audit'>);
    return producer.publish(topicId, event);
  }

  /**
   * Resolves once the record at `offset` on `partition` is applied and committed by this replica;
   * rejects after `timeoutMs`, when the engine stops, or when the partition is not (or no longer) this replica's.
   */
  whenAnswered(partition: number, offset: bigint, timeoutMs = 30_000): Promise<void> {
    const entry = this.owned.get(partition);
    if (!entry) return Promise.reject(notOwner(partition));
    return entry.core.answered.waitFor(partition, offset, Date.now() + timeoutMs);
  }

  /** The engine's status: the partitions it answers for, and its cores' figures together. */
  status(): FoldStatus & { readonly owned: Record<number, Stage>; readonly assignments: number } {
    const cores = [...this.owned.values()].map((e) => e.core.status());
    const merge = (pick: (s: (typeof cores)[number]) => Record<number, string>) => Object.assign({}, ...cores.map(pick)) as Record<number, string>;
    const sum = (pick: (s: (typeof cores)[number]) => number) => cores.reduce((n, s) => n + pick(s), 0);
    const froms = new Set(cores.map((s) => s.start.from));
    return {
      phase: this.currentPhase,
      appliedOffsets: merge((s) => s.appliedOffsets),
      projectedOffsets: merge((s) => s.projectedOffsets),
      unappliedRecords: sum((s) => s.unappliedRecords),
      waitingWriters: sum((s) => s.waitingWriters),
      verdictsEvicted: sum((s) => s.verdictsEvicted),
      projectionFailures: sum((s) => s.projectionFailures),
      start: { from: froms.size === 1 ? [...froms][0] ?? 'offset-0' : froms.has('offset-0') ? 'offset-0' : 'snapshot', records: sum((s) => s.start.records) },
      snapshots: { written: sum((s) => s.snapshots.written), lastOffsets: merge((s) => s.snapshots.lastOffsets ?? {}) },
      owned: Object.fromEntries([...this.owned].map(([p, e]) => [p, e.stage])),
      assignments: this.tail?.assignmentCount ?? 0,
    };
  }

  /** Leaves the group (its partitions move at once) and stops; waiting writers get the `unavailable` error. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.currentPhase === 'stopped') return;
    this.currentPhase = 'stopped';
    const stopping = this.options.unavailable('stopping');
    for (const entry of this.owned.values()) {
      entry.core.answered.close(stopping);
      entry.core.applied.close(stopping);
    }
    // Each partition commits what it has (if it was answering) as the tail stops it.
    await this.tail?.stop();
    this.owned.clear();
    await this.audit.close();
    await this.producer?.close().catch(() => undefined);
  }
}
