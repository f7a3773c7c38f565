import { randomUUID } from 'node:crypto';
import { type AgentKey, type AuditChainCheckpoint, type DecisionRecorded, eventDigest, GatehouseError, isDecisionRecorded, MAX_CHECKPOINT_DIGESTS, type TopicEvent, TOPICS } from '@gatehouse/contracts';
import { AuditCheckpointer, type EventProducer } from '@gatehouse/kafka';
import { toDecisionEvent } from './to-decision-event.js';
import { type AuditBoundary, type AuditEvent, type AuditSink } from './types.js';

/** Appends audit events of record (decisions, and the sink's checkpoints); resolves once the broker acknowledged all of them. */
export interface AuditEventPublisher {
  publishMany(events: readonly TopicEvent<'audit'>[]): Promise<void>;
}

/** A publisher over an `EventProducer`; `close` disconnects only a producer it connected itself. */
export interface KafkaAuditPublisher extends AuditEventPublisher {
  close(): Promise<void>;
}

/**
 * Publishes to the `audit` topic (under the producer's namespace). Given a connect function
 * instead of a producer, it connects on first use and again after a failed connect, so an
 * agent process can start while the broker is down.
 */
export function kafkaAuditPublisher(producer: EventProducer | (() => Promise<EventProducer>)): KafkaAuditPublisher {
  if (typeof producer !== 'function') {
    return {
      publishMany: async (events) => {
        await producer.publishMany('audit', events);
      },
      close: async () => undefined,
    };
  }
  const connect = producer;
  let connecting: Promise<EventProducer> | undefined;
  let closed = false;
  const current = (): Promise<EventProducer> => {
    if (!connecting) {
      const attempt = connect();
      connecting = attempt;
      // A failed connect is forgotten, so the next publish tries again.
      attempt.catch(() => {
        if (connecting === attempt) connecting = undefined;
      });
    }
    return connecting;
  };
  return {
    publishMany: async (events) => {
      if (closed) throw new GatehouseError('AUDIT.PUBLISHER_CLOSED', 'the audit publisher is closed', { category: 'internal' });
      const connected = await current();
      await connected.publishMany('audit', events);
    },
    close: async () => {
      closed = true;
      const pending = connecting;
      connecting = undefined;
      if (!pending) return;
      const connected = await pending.catch(() => undefined);
      await connected?.close();
    },
  };
}

export type KafkaAuditMode = 'required' | 'best-effort';

export interface KafkaAuditSinkOptions {
  readonly publisher: AuditEventPublisher;
  /**
   * `required`: `write` resolves once the event is acknowledged and rejects otherwise, so the
   * gate fails closed. `best-effort`: `write` resolves at once; failed batches are retried.
   */
  readonly mode: KafkaAuditMode;
  /** Envelope `source`, e.g. `guard:<instance>`. */
  readonly source: string;
  /** Tenant of events whose context names none. */
  readonly defaultTenant: string;
  /** Most events per request. Default 100. */
  readonly maxBatch?: number;
  /**
   * How long a batch below `maxBatch` waits for more events, ms. Default 10 for `best-effort`;
   * 0 for `required`, where a gate waits for its record: the first write goes at once, and
   * writes that arrive while a batch is in flight go together in the next (group commit), so
   * concurrent gates share a round trip without any of them waiting out a timer.
   */
  readonly lingerMs?: number;
  /** Most events held (queued or in flight); beyond it best-effort drops and counts. Default 10,000. */
  readonly maxBuffered?: number;
  /** Deadline of a required write and of `flush`, ms. Default 5,000. */
  readonly deliveryTimeoutMs?: number;
  /** First pause before a failed best-effort batch is retried, doubling up to 30 s. Default 500. */
  readonly retryBackoffMs?: number;
  /** Id of this sink's hash chain (default: `source` plus a random suffix, new per instance). */
  readonly producer?: string;
  /**
   * The agent's claim key (`agentKeyFromEnv()`): the sink signs a checkpoint over the digests of
   * the decisions the broker acknowledged (`AuditChainCheckpointV1`), so `gatehouse audit verify`
   * and audit-export count them as this agent's, for the tenants its key is bound to. `source`
   * must then be `guard:<name>` and `defaultTenant` one of the key's tenants. Without a key no
   * checkpoint is written, and every decision of the sink reads as unverified.
   */
  readonly agentKey?: AgentKey;
  /** A checkpoint once this many decisions were acknowledged (1 to 1,000). Default 100. */
  readonly checkpointEvery?: number;
  /** ... and at the latest this long after the first of them, ms. Default 1,000. */
  readonly checkpointIntervalMs?: number;
}

/** An `AuditSink` that appends to `gatehouse.audit.v1`. */
export interface KafkaAuditSink extends AuditSink {
  readonly required: boolean;
  readonly mode: KafkaAuditMode;
  /** Best-effort events dropped because the buffer was full (or still buffered at `close`). */
  readonly dropped: number;
  /** Events queued or in flight. */
  readonly buffered: number;
  flush(): Promise<void>;
  close(): Promise<void>;
}

export const KAFKA_UNAVAILABLE = 'AUDIT.KAFKA_UNAVAILABLE';
export const EVENTS_DROPPED = 'AUDIT.EVENTS_DROPPED';
export const EVENTS_DROPPED_REASON = 'audit events were dropped while Kafka was unavailable';

const MAX_BACKOFF_MS = 30_000;
const DEFAULTS = { maxBatch: 100, lingerMs: 10, maxBuffered: 10_000, deliveryTimeoutMs: 5_000, retryBackoffMs: 500 } as const;
const OPTION_KEYS: ReadonlySet<string> = new Set(['publisher', 'mode', 'source', 'defaultTenant', 'producer', 'agentKey', 'checkpointEvery', 'checkpointIntervalMs', ...Object.keys(DEFAULTS)]);

type Failure = 'send-failed' | 'timeout' | 'backlog' | 'closed';

const FAILURE_MESSAGES: Readonly<Record<Failure, string>> = {
  'send-failed': 'the audit topic did not take the events',
  timeout: 'the audit topic did not acknowledge the events in time',
  backlog: 'too many audit events are waiting for the audit topic',
  closed: 'the Kafka audit sink closed before the events were delivered',
};

/** Static text only: the underlying error (kafkajs names hosts and may quote more) is never copied. */
function unavailable(reason: Failure, details: Record<string, number> = {}): GatehouseError {
  return new GatehouseError(KAFKA_UNAVAILABLE, FAILURE_MESSAGES[reason], {
    category: 'unavailable',
    retryable: true,
    details: { reason, ...details },
  });
}

interface Waiter {
  resolve(): void;
  reject(error: GatehouseError): void;
  timer: NodeJS.Timeout;
}

interface Entry {
  /** A decision, or one of the sink's checkpoints. */
  record: TopicEvent<'audit'>;
  /** When it joined the queue (ms), for the linger. */
  readonly queuedAt: number;
  /** Required mode, and every checkpoint: who awaits the acknowledgement, until settled. */
  waiter?: Waiter;
  /** A decision's digest once linked into the chain: what the next checkpoint covers. */
  digest?: string;
}

function positiveInteger(value: unknown, name: string, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new TypeError(`kafkaAuditSink ${name} must be an integer of at least ${min}`);
  }
  return value;
}

function identifier(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) {
    throw new TypeError(`kafkaAuditSink ${name} must be a string of 1 to 256 characters`);
  }
  return value;
}

/** The agent key, checked against what its checkpoints will claim: a misconfiguration fails at start, not in verify. */
function agentKeyOption(options: KafkaAuditSinkOptions, source: string, defaultTenant: string): AgentKey | undefined {
  const key = options.agentKey as Partial<AgentKey> | undefined;
  if (key === undefined) {
    if (options.checkpointEvery !== undefined || options.checkpointIntervalMs !== undefined) throw new TypeError('kafkaAuditSink checkpoint options need an agentKey');
    return undefined;
  }
  if (typeof key !== 'object' || key === null || key.signer !== 'agent' || typeof key.agent !== 'object' || typeof key.privateKey !== 'object') {
    throw new TypeError('kafkaAuditSink agentKey must be an agent key (agentKeyFromEnv)');
  }
  if (!source.startsWith('guard:')) throw new TypeError('kafkaAuditSink source must be guard:<name> when an agentKey signs its checkpoints');
  if (!key.agent.tenants.includes(defaultTenant)) throw new TypeError('kafkaAuditSink defaultTenant must be one of the agentKey tenants');
  return options.agentKey;
}

class BatchingKafkaAuditSink implements KafkaAuditSink {
  readonly mode: KafkaAuditMode;
  private readonly publisher: AuditEventPublisher;
  private readonly source: string;
  private readonly defaultTenant: string;
  /** This sink's stream in the tamper-evident chain: a new id per sink instance. */
  private readonly producer: string;
  private seq = 0;
  private lastDigest: string | null = null;
  private readonly maxBatch: number;
  private readonly lingerMs: number;
  private readonly maxBuffered: number;
  private readonly deliveryTimeoutMs: number;
  private readonly retryBackoffMs: number;
  /** With an agent key: what signs checkpoints over the acknowledged decisions. */
  private readonly checkpoints: AuditCheckpointer | undefined;

  private queue: Entry[] = [];
  private inFlight: Entry[] | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;
  private backoffTimer: NodeJS.Timeout | undefined;
  private consecutiveFailures = 0;
  private readonly flushWaiters = new Set<Waiter>();
  private droppedTotal = 0;
  /** Drops not yet reported on the log, and the boundary of the first of them. */
  private unreportedDrops = 0;
  private firstDroppedBoundary: AuditBoundary | undefined;
  /** No new writes once `close` began. */
  private closed = false;
  /** No more sends or timers once `close` finished flushing. */
  private stopped = false;
  private closing: Promise<void> | undefined;

  constructor(options: KafkaAuditSinkOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('kafkaAuditSink options must be an object');
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) throw new TypeError(`unknown kafkaAuditSink option "${key}"`);
    }
    const publisher = options.publisher as Partial<AuditEventPublisher> | null | undefined;
    if (typeof publisher !== 'object' || publisher === null || typeof publisher.publishMany !== 'function') {
      throw new TypeError('kafkaAuditSink publisher must have a publishMany() method');
    }
    if (options.mode !== 'required' && options.mode !== 'best-effort') throw new TypeError('kafkaAuditSink mode must be "required" or "best-effort"');
    this.publisher = options.publisher;
    this.mode = options.mode;
    this.source = identifier(options.source, 'source');
    this.defaultTenant = identifier(options.defaultTenant, 'defaultTenant');
    this.producer = options.producer === undefined ? `${this.source}#${randomUUID().slice(0, 8)}` : identifier(options.producer, 'producer');
    this.maxBatch = positiveInteger(options.maxBatch ?? DEFAULTS.maxBatch, 'maxBatch', 1);
    this.lingerMs = positiveInteger(options.lingerMs ?? (options.mode === 'required' ? 0 : DEFAULTS.lingerMs), 'lingerMs', 0);
    this.maxBuffered = positiveInteger(options.maxBuffered ?? DEFAULTS.maxBuffered, 'maxBuffered', 1);
    this.deliveryTimeoutMs = positiveInteger(options.deliveryTimeoutMs ?? DEFAULTS.deliveryTimeoutMs, 'deliveryTimeoutMs', 1);
    this.retryBackoffMs = positiveInteger(options.retryBackoffMs ?? DEFAULTS.retryBackoffMs, 'retryBackoffMs', 1);
    const agentKey = agentKeyOption(options, this.source, this.defaultTenant);
    if (agentKey) {
      const every = positiveInteger(options.checkpointEvery ?? 100, 'checkpointEvery', 1);
      if (every > MAX_CHECKPOINT_DIGESTS) throw new TypeError(`kafkaAuditSink checkpointEvery must be at most ${MAX_CHECKPOINT_DIGESTS}`);
      this.checkpoints = new AuditCheckpointer({
        key: agentKey,
        source: this.source,
        producer: this.producer,
        every,
        intervalMs: positiveInteger(options.checkpointIntervalMs ?? 1_000, 'checkpointIntervalMs', 1),
        append: (checkpoint) => this.sendCheckpoint(checkpoint),
      });
    }
  }

  get required(): boolean {
    return this.mode === 'required';
  }

  get dropped(): number {
    return this.droppedTotal;
  }

  get buffered(): number {
    return this.queue.length + (this.inFlight?.length ?? 0);
  }

  write(event: AuditEvent): void | Promise<void> {
    if (this.closed) {
      throw new GatehouseError('AUDIT.SINK_CLOSED', 'the Kafka audit sink is closed', { category: 'internal' });
    }
    // Mapped (and validated) now: an invalid event fails its own write, never a whole batch.
    const record = toDecisionEvent(event, { source: this.source, defaultTenant: this.defaultTenant });
    if (this.mode === 'best-effort') {
      if (this.buffered >= this.maxBuffered) {
        this.droppedTotal += 1;
        this.unreportedDrops += 1;
        this.firstDroppedBoundary ??= event.boundary;
        return;
      }
      this.queue.push({ record, queuedAt: Date.now() });
      this.schedule();
      return;
    }
    if (this.buffered >= this.maxBuffered) return Promise.reject(unavailable('backlog', { buffered: this.buffered }));
    return new Promise<void>((resolve, reject) => {
      const entry: Entry = { record, queuedAt: Date.now() };
      entry.waiter = {
        resolve,
        reject,
        timer: setTimeout(() => this.expire(entry), this.deliveryTimeoutMs),
      };
      this.queue.push(entry);
      this.schedule();
    });
  }

  /** Delivers what is buffered, then (with an agent key) a checkpoint over it: what `flush` resolving means. */
  async flush(): Promise<void> {
    await this.flushRecords();
    await this.checkpoints?.flush();
  }

  private flushRecords(): Promise<void> {
    if (this.buffered === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.flushWaiters.delete(waiter);
          reject(unavailable('timeout', { buffered: this.buffered, timeoutMs: this.deliveryTimeoutMs }));
        }, this.deliveryTimeoutMs),
      };
      this.flushWaiters.add(waiter);
      // Deliver now, rather than after the linger or the back-off.
      this.clearTimers();
      this.consecutiveFailures = 0;
      this.pump();
    });
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    let failure: unknown;
    try {
      await this.flushRecords();
    } catch (error) {
      failure = error;
    }
    // The last checkpoint, over whatever was delivered, even when the rest could not be.
    await this.checkpoints?.close().catch((error: unknown) => void (failure ??= error));
    this.stopped = true;
    this.clearTimers();
    // What is still queued now will never be sent.
    this.abandon(this.queue, 'closed');
    this.queue = [];
    if (failure !== undefined) throw failure;
  }

  /**
   * Sends when `maxBatch` events wait, when the oldest has lingered `lingerMs`, or at once
   * while a flush waits; otherwise arms the linger timer for the oldest event.
   */
  private schedule(): void {
    if (this.stopped || this.inFlight || this.backoffTimer) return;
    const oldest = this.queue[0];
    if (!oldest) {
      this.settleFlushes();
      return;
    }
    const wait = oldest.queuedAt + this.lingerMs - Date.now();
    if (this.queue.length >= this.maxBatch || this.flushWaiters.size > 0 || wait <= 0) {
      this.pump();
      return;
    }
    this.lingerTimer ??= setTimeout(() => {
      this.lingerTimer = undefined;
      this.pump();
    }, wait);
  }

  /** Sends the next batch unless one is in flight or a retry is pending. */
  private pump(): void {
    if (this.stopped || this.inFlight || this.backoffTimer) return;
    if (this.lingerTimer) {
      clearTimeout(this.lingerTimer);
      this.lingerTimer = undefined;
    }
    if (this.queue.length === 0) {
      this.settleFlushes();
      return;
    }
    const batch = this.queue.splice(0, this.maxBatch);
    this.inFlight = batch;
    // Links are assigned when an event is first sent, in send order (one batch in flight at a
    // time), so the chain's order is the log's order; a retried batch keeps its links.
    for (const entry of batch) {
      if (entry.digest !== undefined || !isDecisionRecorded(entry.record)) continue;
      const { record, digest } = this.link(entry.record);
      entry.record = record;
      entry.digest = digest;
    }
    const records = batch.map((entry) => entry.record);
    // A publisher that throws instead of rejecting fails the batch, not the caller's write.
    new Promise<void>((resolve) => resolve(this.publisher.publishMany(records))).then(
      () => this.delivered(batch),
      () => this.failed(batch),
    );
  }

  private delivered(batch: Entry[]): void {
    this.inFlight = undefined;
    this.consecutiveFailures = 0;
    for (const entry of batch) {
      this.settle(entry);
      // On the log now (even one whose caller timed out meanwhile): the next checkpoint covers it.
      if (entry.digest !== undefined && isDecisionRecorded(entry.record)) this.checkpoints?.covered(entry.record, entry.digest);
    }
    if (this.unreportedDrops > 0 && !this.stopped) {
      // Put the gap itself on the record, first in line.
      this.queue.unshift({ record: this.dropReport(), queuedAt: Date.now() });
      this.unreportedDrops = 0;
      this.firstDroppedBoundary = undefined;
    }
    this.afterSend();
  }

  private failed(batch: Entry[]): void {
    this.inFlight = undefined;
    if (this.mode === 'required' || this.stopped) {
      // A required caller has failed closed; sending its event later would put on the
      // log a decision whose operation never ran.
      this.abandon(batch, 'send-failed');
      for (const waiter of this.flushWaiters) this.rejectFlush(waiter, unavailable('send-failed'));
      this.afterSend();
      return;
    }
    this.queue.unshift(...batch);
    this.consecutiveFailures += 1;
    // A waiting flush has its own deadline: retry it at the base pace, not the grown one.
    const grown = Math.min(this.retryBackoffMs * 2 ** (this.consecutiveFailures - 1), Math.max(this.retryBackoffMs, MAX_BACKOFF_MS));
    const delay = this.flushWaiters.size > 0 ? this.retryBackoffMs : grown;
    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = undefined;
      this.pump();
    }, delay);
    // Retries alone must not keep a process alive: `flush` and `close` are the guarantees.
    this.backoffTimer.unref();
  }

  private afterSend(): void {
    if (this.stopped) this.settleFlushes();
    else this.schedule();
  }

  /** Required mode: the deadline passed before the acknowledgement. */
  private expire(entry: Entry): void {
    const waiter = entry.waiter;
    if (!waiter) return;
    entry.waiter = undefined;
    const index = this.queue.indexOf(entry);
    // Still queued: it will not be sent at all. In flight: it may still land on the log.
    if (index >= 0) this.queue.splice(index, 1);
    waiter.reject(unavailable('timeout', { timeoutMs: this.deliveryTimeoutMs }));
    if (this.buffered === 0) this.settleFlushes();
  }

  private settle(entry: Entry): void {
    const waiter = entry.waiter;
    if (!waiter) return;
    entry.waiter = undefined;
    clearTimeout(waiter.timer);
    waiter.resolve();
  }

  /** Gives up on `entries`: required callers (and checkpoints) are rejected, best-effort decisions count as dropped. */
  private abandon(entries: readonly Entry[], reason: Failure): void {
    for (const entry of entries) {
      const waiter = entry.waiter;
      if (waiter) {
        entry.waiter = undefined;
        clearTimeout(waiter.timer);
        waiter.reject(unavailable(reason));
      } else if (this.mode === 'best-effort') {
        this.droppedTotal += 1;
      }
    }
  }

  /**
   * Queues a checkpoint first in line (it covers decisions already delivered) and resolves once
   * the broker has it; a checkpoint the sink could not deliver gives its decisions to the next.
   */
  private sendCheckpoint(checkpoint: AuditChainCheckpoint): Promise<void> {
    if (this.stopped) return Promise.reject(unavailable('closed'));
    return new Promise<void>((resolve, reject) => {
      const entry: Entry = { record: checkpoint, queuedAt: Date.now() };
      entry.waiter = { resolve, reject, timer: setTimeout(() => this.expire(entry), this.deliveryTimeoutMs) };
      this.queue.unshift(entry);
      this.schedule();
    });
  }

  private settleFlushes(): void {
    if (this.buffered > 0) return;
    for (const waiter of this.flushWaiters) {
      this.flushWaiters.delete(waiter);
      clearTimeout(waiter.timer);
      waiter.resolve();
    }
  }

  private rejectFlush(waiter: Waiter, error: GatehouseError): void {
    this.flushWaiters.delete(waiter);
    clearTimeout(waiter.timer);
    waiter.reject(error);
  }

  private clearTimers(): void {
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    if (this.backoffTimer) clearTimeout(this.backoffTimer);
    this.lingerTimer = undefined;
    this.backoffTimer = undefined;
  }

  /** The record with its chain link, and its digest (the successor's `prevHash`, the checkpoint's entry): computed once. */
  private link(record: DecisionRecorded): { record: DecisionRecorded; digest: string } {
    if (record.chain) return { record, digest: eventDigest(record) };
    this.seq += 1;
    const linked: DecisionRecorded = { ...record, chain: { producer: this.producer, seq: this.seq, prevHash: this.lastDigest } };
    const digest = eventDigest(linked);
    this.lastDigest = digest;
    return { record: linked, digest };
  }

  private dropReport(): DecisionRecorded {
    const report: AuditEvent = {
      id: randomUUID(),
      timestamp: new Date().toISOString(),
      boundary: this.firstDroppedBoundary ?? 'guardrail',
      action: 'audit.publish',
      resource: `topic:${TOPICS.audit.name}`,
      decision: 'error',
      code: EVENTS_DROPPED,
      reason: EVENTS_DROPPED_REASON,
      context: {},
      detail: { dropped: this.unreportedDrops },
    };
    return toDecisionEvent(report, { source: this.source, defaultTenant: this.defaultTenant });
  }
}

/**
 * Appends every audit event to `gatehouse.audit.v1`, batched: a batch goes out when
 * `maxBatch` events wait or `lingerMs` passed, one request at a time, in order. In
 * `required` mode a write rejects with `AUDIT.KAFKA_UNAVAILABLE` (retryable) when its batch
 * fails or is not acknowledged within `deliveryTimeoutMs`. In `best-effort` mode a write
 * resolves at once, failed batches are retried with back-off, events beyond `maxBuffered`
 * are dropped and counted, and after the next delivery an `AUDIT.EVENTS_DROPPED` event
 * (detail `{ dropped }`) puts the gap on the record. With `agentKey`, a checkpoint signed with it
 * covers the acknowledged decisions every `checkpointEvery` of them or `checkpointIntervalMs`
 * after the first, on `flush` and on `close`; a write never waits for one.
 */
export function kafkaAuditSink(options: KafkaAuditSinkOptions): KafkaAuditSink {
  return new BatchingKafkaAuditSink(options);
}
