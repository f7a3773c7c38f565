import { createEvent, GatehouseError, LedgerKeyFailedV1 } from '@gatehouse/contracts';
import { type AppendResult, type DecodedRecord, EventProducer, type PoisonRecord, replayTopic, type TailHandle, tailTopic } from '@gatehouse/kafka';
import { applyLedgerEvent, type BudgetState, createLedgerState, type KeyState, type LedgerEvent, type LedgerState, type Verdict } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import { LedgerError } from '../errors.js';
import { ledgerMeta } from '../ledger-events.js';
import { type LedgerProjection } from '../projection/ledger-projection.js';
import { type LedgerPort } from './ledger-port.js';
import { OffsetWatermarks } from './offset-watermarks.js';
import { VerdictBook } from './verdict-book.js';

/** A structured log line; never carries request or record values. */
export type LedgerLog = (level: 'info' | 'warn' | 'error', message: string, extra?: Record<string, string | number | boolean>) => void;

export interface LedgerEngineOptions {
  readonly kafka: Kafka;
  /** Topic namespace (GATEHOUSE_TOPIC_NAMESPACE). */
  readonly namespace?: string | undefined;
  /** The PostgreSQL projection kept by the same pass; answers wait for it to commit. */
  readonly projection?: LedgerProjection | undefined;
  /** How long a writer waits for its own verdict (append included), ms. Default 5,000. */
  readonly decisionDeadlineMs?: number;
  /** Most verdicts kept for writers at once. Default 10,000. */
  readonly verdictCapacity?: number;
  /** Deadline of the start-up replay, ms. Default 60,000. */
  readonly replayTimeoutMs?: number;
  /** Records per projection transaction during the start-up replay. Default 1,000. */
  readonly replayBatchSize?: number;
  readonly log?: LedgerLog;
}

export type LedgerPhase = 'starting' | 'running' | 'failed' | 'stopped';

/** What `GET /v1/ledger/status` shows. */
export interface LedgerStatus {
  readonly phase: LedgerPhase;
  /** Per partition, the next offset the in-memory fold will apply. */
  readonly appliedOffsets: Record<number, string>;
  /** Per partition, the next offset not yet committed to the projection (answers wait for this). */
  readonly projectedOffsets: Record<number, string>;
  readonly keys: number;
  readonly budgets: number;
  readonly unappliedRecords: number;
  readonly waitingWriters: number;
  readonly verdictsEvicted: number;
  readonly orphansReleased: number;
  readonly projectionFailures: number;
}

const toRecord = (offsets: ReadonlyMap<number, bigint>): Record<number, string> =>
  Object.fromEntries([...offsets].sort(([a], [b]) => a - b).map(([p, o]) => [p, o.toString()]));

const noLog: LedgerLog = () => undefined;

function unavailable(reason: string, cause?: unknown): LedgerError {
  return new LedgerError('LEDGER.UNAVAILABLE', { reason }, cause);
}

/** Races `work` against `deadline` (epoch ms); a late settlement of `work` is swallowed. */
function withDeadline<T>(work: Promise<T>, deadline: number, reason: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(unavailable(reason)), Math.max(0, deadline - Date.now()));
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
 * The ledger's single decision point. On start it folds `gatehouse.ledger.v1` from offset 0
 * with `applyLedgerEvent` (log append time as the clock), then tails it, applying every record
 * in partition order and committing the projection once per batch. A writer appends its event,
 * waits until that offset is applied (and projected), and reads the fold's verdict on its own
 * event: the log order, not this process, decides.
 */
export class LedgerEngine implements LedgerPort {
  private readonly state: LedgerState = createLedgerState();
  /** What the in-memory fold has applied. */
  private readonly applied = new OffsetWatermarks();
  /** What the fold has applied and the projection has committed: writers wait on this. */
  private readonly answered = new OffsetWatermarks();
  private readonly book: VerdictBook;
  private readonly log: LedgerLog;
  private readonly deadlineMs: number;
  private phase: LedgerPhase = 'starting';
  private producer: EventProducer | undefined;
  private tail: TailHandle | undefined;
  private unapplied = 0;
  private orphans = 0;
  private projectionFailures = 0;
  private flushing: Promise<void> | undefined;
  private flushAgain = false;
  private retryDelayMs = 0;
  private retryTimer: NodeJS.Timeout | undefined;

  private constructor(private readonly options: LedgerEngineOptions) {
    this.book = new VerdictBook(options.verdictCapacity ?? 10_000);
    this.log = options.log ?? noLog;
    this.deadlineMs = options.decisionDeadlineMs ?? 5_000;
  }

  /** Replays the ledger topic, starts tailing it and returns the running engine. */
  static async start(options: LedgerEngineOptions): Promise<LedgerEngine> {
    const engine = new LedgerEngine(options);
    try {
      await engine.run();
    } catch (error) {
      await engine.stop();
      throw error;
    }
    return engine;
  }

  private async run(): Promise<void> {
    const { kafka, namespace, projection } = this.options;
    this.producer = await EventProducer.connect(kafka, { namespace });
    const batchSize = this.options.replayBatchSize ?? 1_000;
    let sinceFlush = 0;
    const started = Date.now();
    const replay = await replayTopic(kafka, 'ledger', {
      namespace,
      timeoutMs: this.options.replayTimeoutMs ?? 60_000,
      onRecord: async (record) => {
        this.ingest(record);
        sinceFlush += 1;
        if (projection && sinceFlush >= batchSize) {
          sinceFlush = 0;
          await projection.flush(this.state, this.applied.snapshot());
        }
      },
      onPoison: (poison) => this.ingestPoison(poison),
    });
    for (const [partition, next] of Object.entries(replay.nextOffsets)) this.applied.advance(Number(partition), BigInt(next));
    if (projection) await projection.flush(this.state, this.applied.snapshot());
    for (const [partition, next] of this.applied.snapshot()) this.answered.advance(partition, next);
    this.log('info', 'ledger replayed', { records: replay.records, unapplied: replay.poison, ms: Date.now() - started });
    this.tail = await tailTopic(kafka, 'ledger', {
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
        if (this.phase === 'stopped') return;
        // Fail closed: no answer can be confirmed any more; health stays as the runtime reports it.
        this.phase = 'failed';
        this.log('error', 'ledger tail stopped; decisions are refused until restart', { code: 'LEDGER.TAIL_CRASHED' });
      },
    });
    if (this.phase === 'starting') this.phase = 'running';
  }

  /** Applies one record to the fold; keeps the verdict when this process appended the event. */
  private ingest(record: DecodedRecord<'ledger'>): void {
    const verdict = applyLedgerEvent(this.state, record.event, record.logTime.getTime());
    const fate = this.book.settle(record.event.id, verdict);
    this.options.projection?.touch(record);
    const next = BigInt(record.offset) + 1n;
    this.applied.advance(record.partition, next);
    if (!this.options.projection && this.phase !== 'starting') this.answered.advance(record.partition, next);
    if (fate === 'abandoned') this.release(record.event, verdict);
  }

  private ingestPoison(poison: PoisonRecord): void {
    this.unapplied += 1;
    this.options.projection?.unappliable(poison);
    this.applied.advance(poison.partition, BigInt(poison.offset) + 1n);
    this.log('warn', 'ledger record could not be applied', { code: poison.code, partition: poison.partition, offset: poison.offset });
  }

  /**
   * A writer gave up before its event was applied and told its caller the ledger was
   * unavailable, so the caller will not execute: a reservation it won nobody holds. Hand it
   * back at once instead of leaving it to the TTL (after a takeover the key stays ambiguous).
   */
  private release(event: LedgerEvent, verdict: Verdict): void {
    if (verdict.kind !== 'accepted') return;
    if (event.type !== 'LedgerKeyReserved' && event.type !== 'LedgerKeyTakenOver') return;
    const producer = this.producer;
    if (!producer || this.phase !== 'running') return;
    const { key, leaseToken } = event.payload;
    this.orphans += 1;
    const failed = createEvent(LedgerKeyFailedV1, ledgerMeta(key), { key, leaseToken, code: 'LEDGER.WRITER_GAVE_UP', retryable: true });
    producer.publish('ledger', failed).catch(() => this.log('warn', 'could not release an orphaned reservation', { code: 'LEDGER.RELEASE_FAILED' }));
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
        try {
          await projection.flush(this.state, through);
        } catch {
          // The fold goes on; answers wait (and time out, failing closed) until the database is back.
          this.projectionFailures += 1;
          this.retryDelayMs = Math.min(Math.max(this.retryDelayMs * 2, 100), 2_000);
          this.log('warn', 'ledger projection write failed; retrying', { code: 'LEDGER.PROJECTION_WRITE_FAILED', retryInMs: this.retryDelayMs });
          this.scheduleRetry();
          return;
        }
        this.retryDelayMs = 0;
        for (const [partition, next] of through) this.answered.advance(partition, next);
      } while (this.flushAgain && this.phase !== 'stopped');
    })().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.phase === 'stopped') return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.flush();
    }, this.retryDelayMs);
  }

  key(key: string): KeyState | undefined {
    return this.state.keys.get(key);
  }

  /** The fold's state (read only: the engine owns it). */
  view(): { readonly keys: ReadonlyMap<string, KeyState>; readonly budgets: ReadonlyMap<string, BudgetState> } {
    return this.state;
  }

  async decide(event: LedgerEvent): Promise<Verdict> {
    const producer = this.producer;
    if (this.phase !== 'running' || !producer) throw unavailable(this.phase);
    const deadline = Date.now() + this.deadlineMs;
    this.book.expect(event.id);
    let appended: AppendResult;
    try {
      appended = await withDeadline(producer.publish('ledger', event), deadline, 'append-deadline');
    } catch (error) {
      this.giveUp(event);
      // An event that fails its contract was never sent: that is the request's fault, not the ledger's.
      if (error instanceof GatehouseError && error.category === 'validation') throw error;
      throw error instanceof LedgerError ? error : unavailable('append-failed', error);
    }
    try {
      await this.answered.waitFor(appended.partition, BigInt(appended.offset), deadline);
    } catch (error) {
      this.giveUp(event);
      throw error instanceof LedgerError ? error : unavailable('fold-failed', error);
    }
    const verdict = this.book.take(event.id);
    if (!verdict) throw unavailable('verdict-lost');
    return verdict;
  }

  private giveUp(event: LedgerEvent): void {
    const settled = this.book.abandon(event.id);
    if (settled) this.release(event, settled);
  }

  status(): LedgerStatus {
    return {
      phase: this.phase,
      appliedOffsets: toRecord(this.applied.snapshot()),
      projectedOffsets: toRecord(this.answered.snapshot()),
      keys: this.state.keys.size,
      budgets: this.state.budgets.size,
      unappliedRecords: this.unapplied,
      waitingWriters: this.answered.waiting(),
      verdictsEvicted: this.book.evicted(),
      orphansReleased: this.orphans,
      projectionFailures: this.projectionFailures,
    };
  }

  /** Stops tailing and appending; waiting writers get LEDGER.UNAVAILABLE. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.phase === 'stopped') return;
    const wasRunning = this.phase === 'running';
    this.phase = 'stopped';
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const stopping = unavailable('stopping');
    this.answered.close(stopping);
    this.applied.close(stopping);
    await this.tail?.stop().catch(() => undefined);
    await this.flushing?.catch(() => undefined);
    const projection = this.options.projection;
    if (wasRunning && projection && projection.pending() > 0) {
      // Best effort: a restart replays from offset 0 and fills in whatever this misses.
      await projection.flush(this.state, this.applied.snapshot()).catch(() => undefined);
    }
    await this.producer?.close().catch(() => undefined);
  }
}
