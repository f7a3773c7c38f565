import { createEvent, type Keyring, LedgerKeyExpiredV1, LedgerKeyFailedV1, signEvent, type SigningKey, topicName } from '@gatehouse/contracts';
import { assertTopicRetention, FoldEngine, type FoldLog, type FoldProjection, type FoldStatus } from '@gatehouse/kafka';
import { type BudgetState, type KeyState, type LedgerEvent, type LedgerState, type Verdict } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import { LedgerError } from '../errors.js';
import { LEDGER_SOURCE, ledgerMeta } from '../ledger-events.js';
import { ledgerProjection } from '../projection/ledger-projection.js';
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
  private engine!: FoldEngine<'ledger', LedgerState, Verdict>;

  private constructor(
    private readonly log: LedgerLog,
    private readonly signingKey: SigningKey,
  ) {}

  /** Replays the ledger topic, starts tailing it and returns the running engine. */
  static async start(options: LedgerEngineOptions): Promise<LedgerEngine> {
    const ledger = new LedgerEngine(options.log ?? (() => undefined), options.signingKey);
    // An open or ambiguous key has no end in time: a topic that deletes records could drop the
    // reservation that stops a second execution. Refused before anything is read.
    await assertTopicRetention(options.kafka, topicName('ledger', options.namespace), 'forever');
    ledger.engine = await FoldEngine.start({
      ...options,
      topicId: 'ledger',
      fold: ledgerProjection(options.keyring).fold,
      untrusted: { keyring: options.keyring, source: LEDGER_SOURCE },
      // Its security reports are the ledger service's: signed checkpoints say so (attack 6).
      auditKey: options.signingKey,
      onApplied: (record) => ledger.settle(record.event.id),
      unavailable: (reason, cause) => new LedgerError('LEDGER.UNAVAILABLE', { reason }, cause),
      onAbandoned: (event, verdict) => ledger.release(event, verdict),
    });
    return ledger;
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
    return this.engine.state.keys.get(key);
  }

  budget(budgetKey: string): BudgetState | undefined {
    return this.engine.state.budgets.get(budgetKey);
  }

  openKeys(principal: string): number {
    return (this.engine.state.openKeysByPrincipal.get(principal) ?? 0) + (this.claimsInFlight.get(principal) ?? 0);
  }

  budgetsOf(principal: string): number {
    return (this.engine.state.budgetsByPrincipal.get(principal) ?? 0) + (this.budgetsInFlight.get(principal) ?? 0);
  }

  /** Which in-flight count `event` adds to while it is decided, if any. */
  private inFlightCount(event: LedgerEvent): { readonly counts: Map<string, number>; readonly principal: string } | undefined {
    if ((event.type === 'LedgerKeyReserved' || event.type === 'LedgerKeyTakenOver') && event.payload.principal !== undefined) {
      return { counts: this.claimsInFlight, principal: event.payload.principal };
    }
    if (event.type === 'LedgerRateConsumed' && event.payload.principal !== undefined && !this.engine.state.budgets.has(event.payload.budgetKey)) {
      return { counts: this.budgetsInFlight, principal: event.payload.principal };
    }
    return undefined;
  }

  /** The fold's state (read only: the engine owns it). */
  view(): {
    readonly keys: ReadonlyMap<string, KeyState>;
    readonly budgets: ReadonlyMap<string, BudgetState>;
    readonly openKeysByPrincipal: ReadonlyMap<string, number>;
    readonly budgetsByPrincipal: ReadonlyMap<string, number>;
  } {
    return this.engine.state;
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
    const state = this.engine.state;
    return { ...this.engine.status(), keys: state.keys.size, budgets: state.budgets.size, orphansReleased: this.orphans, untrustedGrants: state.untrusted.count, keysExpired: this.expired };
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
    for (const [key, state] of this.engine.state.keys) {
      if (state.status === 'completed' && state.completedAt < before) due.push(key);
      if (due.length >= EXPIRY_BATCH) break;
    }
    const verdicts = await Promise.all(due.map((key) => this.decide(createEvent(LedgerKeyExpiredV1, ledgerMeta(key), { key, before })).catch(() => undefined)));
    const expired = verdicts.filter((v) => v?.kind === 'accepted').length;
    this.expired += expired;
    if (expired > 0) this.log('info', 'completed keys expired', { expired, retainMs });
    return expired;
  }

  /** Stops tailing and appending; waiting writers get LEDGER.UNAVAILABLE. Safe to call twice. */
  stop(): Promise<void> {
    return this.engine.stop();
  }
}
