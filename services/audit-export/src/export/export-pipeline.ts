import { decisionTooLarge, GatehouseError, isDecisionRecorded, topicName } from '@gatehouse/contracts';
import { type DecodedRecord, type OwnedPartition, OwnedTail, type PartitionOwners, type PoisonRecord, tailTopic } from '@gatehouse/kafka';
import { type Admin, type Kafka } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { type AuditRecord, type ExportLine, type FeedFormat, type RecordVerification } from '../feeds/export-line.js';
import { exportLines } from '../feeds/map-record.js';
import { type AuditSink, backoffMs } from '../sinks/audit-sink.js';
import { AuditError } from '../errors.js';
import { type ExportTelemetry } from '../telemetry/export-telemetry.js';
import { ExportPositions } from './export-positions.js';
import { resolveStartPosition, type StartPosition } from './start-position.js';

/** A structured log line; never carries record values. */
export type ExportLog = (level: 'info' | 'warn' | 'error', message: string, extra?: Record<string, string | number | boolean>) => void;

export interface ExportPipelineOptions {
  /** Names the export's stored positions (`export:<name>`). */
  readonly name: string;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly namespace?: string | undefined;
  readonly dataSource: DataSource;
  readonly schema: string;
  readonly sinks: readonly AuditSink[];
  /** Where a first start (no stored positions) begins. */
  readonly from: StartPosition;
  readonly telemetry: ExportTelemetry;
  readonly log?: ExportLog;
  /** Back-off while a sink is down: base and cap, ms. Default 200 / 5,000. */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  /** How often the lag gauge is refreshed, ms. Default 5,000; 0 disables the timer. */
  readonly lagIntervalMs?: number;
  /**
   * The projection's verdicts on records' sources (`RecordVerification`): each line says whether
   * its source vouched for it. Absent: lines carry no verdict (null).
   */
  readonly verdicts?: (topic: string, eventIds: readonly string[]) => Promise<ReadonlyMap<string, RecordVerification>>;
  /**
   * How long after a record's log time the export waits for it to be verified before writing its
   * line with the verdict it has then (its checkpoint is written up to a second or so later, on
   * another partition). Default 3,000; 0 never waits.
   */
  readonly verifyWaitMs?: number;
  /**
   * Scale-out (issue 19): the replicas share the audit topic's partitions through a consumer group
   * (`export-<name>`) and each exports only its own, its positions fenced by the claim `owners`
   * hands out. Without it, this replica exports every partition (behind the export's lease).
   */
  readonly owners?: PartitionOwners;
}

/** What one flush belongs to: still current, how it is aborted, and (scaled out) the epoch it commits under. */
interface FlushScope {
  current(): boolean;
  readonly signal: AbortSignal;
  readonly epoch?: number;
}

/** Resolves after `ms` or when `signal` aborts, leaving no listener behind (it runs many times a batch). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

const UNVERIFIED: RecordVerification = Object.freeze({ status: 'unverified', reason: null, keyId: null, checkpoint: null });

export interface ExportStatus {
  readonly name: string;
  /** `standby`: another replica holds this export's lease. */
  readonly phase: 'starting' | 'running' | 'stopped' | 'standby';
  /** True while a sink is down and the export waits for it. */
  readonly paused: boolean;
  /** Per partition, the next offset not yet acknowledged by every sink. */
  readonly positions: Record<number, string>;
  readonly sinks: readonly string[];
  readonly exported: number;
  readonly sinkFailures: number;
  readonly skipped: number;
}

const noLog: ExportLog = () => undefined;

/**
 * Audit topic → feeds → sinks. Per fetched partition batch: map each record, hand the lines
 * to every sink, and only once ALL acknowledged, store the partition's next offset. A sink
 * that fails is retried (only that sink) with back-off until it takes the batch; meanwhile
 * the consumer loop is held in the batch, so nothing further is read (the export pauses) and
 * nothing is skipped. Batches run one at a time in offset order per partition.
 */
export class ExportPipeline {
  private readonly topic: string;
  private readonly positions: ExportPositions;
  private readonly log: ExportLog;
  private readonly buffers = new Map<number, (AuditRecord | PoisonRecord)[]>();
  private tail: { stop(): Promise<void> } | undefined;
  /** Scaled out: per partition this replica owns, its flushes' scope (a partition that moves aborts it). */
  private readonly owned = new Map<number, { readonly abort: AbortController; readonly epoch: number }>();
  private phase: ExportStatus['phase'] = 'starting';
  private paused = false;
  private stopping: AbortController = new AbortController();
  private stored: Record<number, string> = {};
  private exportedCount = 0;
  private failures = 0;
  private skippedCount = 0;
  private lagTimer: NodeJS.Timeout | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private generation = 0;

  private constructor(private readonly options: ExportPipelineOptions) {
    this.topic = topicName('audit', options.namespace);
    this.positions = new ExportPositions(options.dataSource, options.schema, options.name, this.topic);
    this.log = options.log ?? noLog;
  }

  /** Starts exporting from the stored positions, or from `from` on a first start. */
  static async start(options: ExportPipelineOptions): Promise<ExportPipeline> {
    const pipeline = new ExportPipeline(options);
    await pipeline.run();
    const interval = options.lagIntervalMs ?? 5_000;
    if (interval > 0) {
      pipeline.lagTimer = setInterval(() => void pipeline.refreshLag().catch(() => undefined), interval);
      pipeline.lagTimer.unref();
    }
    return pipeline;
  }

  get name(): string {
    return this.options.name;
  }

  status(): ExportStatus {
    return {
      name: this.options.name,
      phase: this.phase,
      paused: this.paused,
      positions: { ...this.stored },
      sinks: this.options.sinks.map((s) => s.name),
      exported: this.exportedCount,
      sinkFailures: this.failures,
      skipped: this.skippedCount,
    };
  }

  /** Stops, moves the stored positions to `position` (back or forward), and resumes from there. */
  async reposition(position: StartPosition): Promise<Record<number, string>> {
    // Scaled out, other replicas export the other partitions from positions they have read: one
    // replica cannot move them all. Stop all but one replica, or set the position at a first start.
    if (this.options.owners) throw new AuditError('AUDIT.EXPORT_SCALED_OUT');
    await this.halt();
    const next = await resolveStartPosition(this.options.admin, this.topic, position);
    await this.positions.replace(next);
    this.log('info', 'export repositioned', { export: this.options.name, kind: position.kind });
    this.stopping = new AbortController();
    await this.run();
    return { ...this.stored };
  }

  /** Reads the topic's ends and sets the lag gauge: records appended but not yet exported. */
  async refreshLag(): Promise<Record<number, number>> {
    const ends = await this.options.admin.fetchTopicOffsets(this.topic);
    const lag: Record<number, number> = {};
    for (const end of ends) {
      const position = BigInt(this.stored[end.partition] ?? end.low);
      const value = Number(BigInt(end.high) - position);
      lag[end.partition] = Math.max(0, value);
      this.options.telemetry.setLag(this.options.name, end.partition, lag[end.partition] ?? 0);
    }
    return lag;
  }

  async stop(): Promise<void> {
    if (this.lagTimer) clearInterval(this.lagTimer);
    await this.halt();
    this.phase = 'stopped';
    for (const sink of this.options.sinks) await sink.close().catch(() => undefined);
  }

  private async halt(): Promise<void> {
    this.generation += 1;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.stopping.abort();
    for (const { abort } of this.owned.values()) abort.abort();
    const tail = this.tail;
    this.tail = undefined;
    await tail?.stop().catch(() => undefined);
    this.buffers.clear();
    this.paused = false;
  }

  private async run(): Promise<void> {
    const generation = this.generation;
    if (this.options.owners) {
      this.stored = {};
      this.buffers.clear();
      this.tail = await OwnedTail.start({
        kafka: this.options.kafka,
        topicId: 'audit',
        namespace: this.options.namespace,
        group: `export-${this.options.name}`,
        take: (partition) => this.take(partition),
        onCrash: () => this.scheduleRestart(generation),
      });
    } else {
      let stored = await this.positions.load();
      if (Object.keys(stored).length === 0) {
        stored = await resolveStartPosition(this.options.admin, this.topic, this.options.from);
        await this.positions.replace(stored);
      }
      this.stored = { ...stored };
      this.buffers.clear();
      const scope: FlushScope = { current: () => generation === this.generation, signal: this.stopping.signal };
      this.tail = await tailTopic(this.options.kafka, 'audit', {
        namespace: this.options.namespace,
        fromOffsets: stored,
        onRecord: (record) => this.buffer(record),
        onPoison: (poison) => this.bufferPoison(poison),
        onBatchEnd: (partition, nextOffset) => this.flush(scope, partition, nextOffset),
        onCrash: () => this.scheduleRestart(generation),
      });
    }
    this.phase = 'running';
    this.log('info', 'export running', { export: this.options.name, sinks: this.options.sinks.map((s) => s.name).join(','), ...(this.options.owners && { scaledOut: true }) });
  }

  /**
   * Scaled out: the group gave this replica `partition`. It is claimed, its sinks look at its
   * streams' ends again (another replica may have written there), and it is exported from its
   * stored position (a first start: the configured one).
   */
  private async take(partition: number): Promise<OwnedPartition<'audit'>> {
    const epoch = await (this.options.owners as PartitionOwners).claim(partition);
    let from = (await this.positions.load())[partition];
    if (from === undefined) {
      from = (await resolveStartPosition(this.options.admin, this.topic, this.options.from))[partition] ?? '0';
      await this.positions.advance(partition, from, epoch);
    }
    for (const sink of this.options.sinks) await sink.reclaim?.(partition);
    const abort = new AbortController();
    const entry = { abort, epoch };
    this.owned.set(partition, entry);
    this.stored[partition] = from;
    this.buffers.set(partition, []);
    const scope: FlushScope = { current: () => this.owned.get(partition) === entry, signal: abort.signal, epoch };
    return {
      from: BigInt(from),
      record: (record) => this.buffer(record),
      poison: (poison) => this.bufferPoison(poison),
      batchEnd: (next) => this.flush(scope, partition, next.toString()),
      stop: async () => {
        // A flush under way stops before it stores anything: the new owner exports from the stored position.
        abort.abort();
        if (this.owned.get(partition) === entry) this.owned.delete(partition);
        this.buffers.delete(partition);
        delete this.stored[partition];
      },
    };
  }

  private scheduleRestart(generation: number): void {
    if (generation !== this.generation) return;
    this.log('warn', 'export consumer crashed; restarting from the stored positions', { export: this.options.name });
    this.generation += 1;
    const tail = this.tail;
    this.tail = undefined;
    this.restartTimer = setTimeout(() => {
      void (async () => {
        await tail?.stop().catch(() => undefined);
        try {
          await this.run();
        } catch {
          this.scheduleRestart(this.generation);
        }
      })();
    }, 1_000);
    this.restartTimer.unref();
  }

  private buffer(record: DecodedRecord<'audit'>): void {
    const { event } = record;
    if (!isDecisionRecorded(event)) return;
    // A record past the bounds never reaches a SIEM feed: the projection parks it, the export counts it as poison.
    if (decisionTooLarge(event)) {
      this.bufferPoison({ topic: record.topic, partition: record.partition, offset: record.offset, key: record.key, value: null, code: 'AUDIT.EVENT_TOO_LARGE', reason: 'a decision record past the size bounds' });
      return;
    }
    const list = this.buffers.get(record.partition) ?? [];
    list.push({ event, topic: record.topic, partition: record.partition, offset: record.offset, logTime: record.logTime });
    this.buffers.set(record.partition, list);
  }

  private bufferPoison(poison: PoisonRecord): void {
    const list = this.buffers.get(poison.partition) ?? [];
    list.push(poison);
    this.buffers.set(poison.partition, list);
  }

  private async flush(scope: FlushScope, partition: number, nextOffset: string): Promise<void> {
    if (!scope.current()) return;
    const items = this.buffers.get(partition) ?? [];
    this.buffers.set(partition, []);
    const read = items.filter((i): i is AuditRecord => 'event' in i);
    const records = await this.judged(read, scope.signal);
    if (!scope.current()) return;
    for (const poison of items.filter((i): i is PoisonRecord => !('event' in i))) {
      // The projection keeps the reason; the export counts it and moves on.
      this.skippedCount += 1;
      this.options.telemetry.skipped(this.options.name, poison.code);
    }
    const linesByFormat = new Map<FeedFormat, ExportLine[]>();
    const lines = (format: FeedFormat): ExportLine[] => {
      let list = linesByFormat.get(format);
      if (!list) {
        list = records.flatMap((r) => exportLines(r, format));
        linesByFormat.set(format, list);
      }
      return list;
    };
    const spans = records.map((r) =>
      this.options.telemetry.startExportSpan(this.options.name, { id: r.event.id, trace: r.event.trace, partition: r.partition, offset: r.offset }),
    );
    const pending = new Set(this.options.sinks);
    const signal = scope.signal;
    for (let attempt = 1; ; attempt += 1) {
      for (const sink of [...pending]) {
        const batch = sink.formats.flatMap((f) => lines(f));
        try {
          await sink.write(batch);
          const ackedAt = Date.now();
          for (const line of batch) this.options.telemetry.acknowledged(this.options.name, sink.name, line, ackedAt);
          pending.delete(sink);
        } catch {
          this.failures += 1;
          this.options.telemetry.sinkFailed(this.options.name, sink.name);
          if (attempt === 1) this.log('warn', 'sink did not acknowledge; export paused', { export: this.options.name, sink: sink.name, partition });
        }
      }
      if (pending.size === 0) break;
      this.paused = true;
      if (signal.aborted) return this.abandon(spans);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoffMs(attempt, this.options.retryBaseMs ?? 200, this.options.retryMaxMs ?? 5_000));
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
      if (signal.aborted) return this.abandon(spans);
    }
    if (this.paused) this.log('info', 'sinks acknowledged; export resumed', { export: this.options.name, partition });
    this.paused = false;
    // Stored only now: a crash before this line re-exports the batch (its lines are found in the
    // sinks and not written twice). Scaled out, only while this replica still owns the partition.
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.positions.advance(partition, nextOffset, scope.epoch);
        break;
      } catch (error) {
        if (signal.aborted || (error instanceof GatehouseError && error.code === 'FOLD.FENCED')) return this.abandon(spans);
        await new Promise((r) => setTimeout(r, backoffMs(attempt, 200, 5_000)));
      }
    }
    if (!scope.current()) return this.abandon(spans);
    this.stored[partition] = nextOffset;
    this.exportedCount += records.length;
    for (const span of spans) span.end();
  }

  /**
   * The records with the projection's verdict on each, once every one is verified or its wait
   * (`verifyWaitMs` after its log time) is over: a forbidden record waits too, since an honest
   * checkpoint may still vouch for it. A database that does not answer leaves them unverified.
   */
  private async judged(records: AuditRecord[], signal: AbortSignal): Promise<AuditRecord[]> {
    const lookup = this.options.verdicts;
    if (!lookup || records.length === 0) return records;
    const waitMs = this.options.verifyWaitMs ?? 3_000;
    const ids = records.map((r) => r.event.id);
    let verdicts: ReadonlyMap<string, RecordVerification> = new Map();
    for (;;) {
      try {
        verdicts = await lookup(this.topic, ids);
      } catch {
        // Asked again until the wait is over; then the lines say unverified.
      }
      const waitUntil = Math.max(0, ...records.filter((r) => verdicts.get(r.event.id)?.status !== 'verified').map((r) => r.logTime.getTime() + waitMs));
      if (Date.now() >= waitUntil || signal.aborted) break;
      await pause(Math.min(200, waitUntil - Date.now()), signal);
    }
    return records.map((r) => ({ ...r, verification: verdicts.get(r.event.id) ?? UNVERIFIED }));
  }

  private abandon(spans: readonly { end(): void; setStatus(status: { code: number }): unknown }[]): void {
    for (const span of spans) {
      span.setStatus({ code: 2 });
      span.end();
    }
  }
}
