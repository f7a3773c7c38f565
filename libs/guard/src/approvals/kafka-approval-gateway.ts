import { randomUUID } from 'node:crypto';
import { type ApprovalEvent, type ApprovalLimits, approvalHorizon, DEFAULT_GRANT_TTL_MS, DEFAULT_SETTLED_RETAIN_MS, MAX_APPROVAL_WAIT_MS, MAX_GRANT_TTL_MS } from '@gatehouse/approvals';
import { type AgentKey, agentMayClaimFor, checkGrant, createEvent, type DecisionRecorded, DecisionRecordedV1, forbiddenClaimDecision, type GrantPosition, type Keyring, topicName, untrustedGrantDecision } from '@gatehouse/contracts';
import { applySpanName, AuditCheckpointer, EventProducer, offsetsAtTime, replayTopic, type TailHandle, tailTopic } from '@gatehouse/kafka';
import { type Admin, type Kafka } from 'kafkajs';
import { untrustedGrantIgnored } from '../telemetry/guard-telemetry.js';
import { type ApprovalLog, type ApprovalLogListener, ApprovalGatewayCore, validateTimeout } from './gateway-core.js';
import { ApprovalGatewayError } from './errors.js';
import { type ApprovalGateway } from './types.js';

export interface KafkaApprovalGatewayOptions {
  readonly kafka: Kafka;
  /**
   * The approval service's public keys (`keyringFromEnv()` reads GATEHOUSE_TRUSTED_KEYS_FILE): a
   * decision or expiry not signed by one of them never grants, and is reported on the audit topic.
   */
  readonly keyring: Keyring;
  /**
   * This agent's claim key (`agentKeyFromEnv()` reads GATEHOUSE_AGENT_KEY_FILE and the binding):
   * every request and withdrawal is signed with it, and names its agent as the requester. The
   * services trust its public half, bound to the agent id and tenants; a request for a tenant
   * the key is not bound to is refused with `APPROVAL.REQUEST_INVALID`.
   */
  readonly agentKey: AgentKey;
  /** Topic namespace (see `topicName`); omit in production. */
  readonly namespace?: string;
  /** Envelope source of appended events (default `guard:approvals-<random>`). */
  readonly source?: string;
  /** Default wait for a decision, ms (default 60,000); `awaitApproval` may pass its own. */
  readonly defaultTimeoutMs?: number;
  /**
   * The longest a request of this agent's stays pending, ms (default 86,400,000: a day; at most
   * 30 days): a request whose deadline is further away is refused with a TypeError (a connector's
   * `approvals.deadlineMs` must fit), and its fold holds any request pending at most this long.
   * With `grantTtlMs` it bounds the history the gateway reads at start.
   */
  readonly maxApprovalWaitMs?: number;
  /**
   * How long after its decision a grant stays usable, ms: the approval service's
   * GATEHOUSE_APPROVAL_GRANT_TTL_MS (default 900,000, its default). A decision whose use-by time
   * is later counts as this long (a shorter value than the service's loses grants, never adds one).
   */
  readonly grantTtlMs?: number;
  /**
   * Longest the start-up read may take, ms (default 30,000). Past it calls fail closed. The read
   * starts at the log time before which no request can still grant (`maxApprovalWaitMs` plus
   * `grantTtlMs` ago), not at offset 0: its cost follows the approvals of that window, not the
   * topic's history.
   */
  readonly replayTimeoutMs?: number;
  /** Longest a best-effort cancellation may take, ms (default 5,000). */
  readonly cancelTimeoutMs?: number;
  /** Longest a fetch of the tail waits for new records, ms (default 100): the decision latency bound. */
  readonly maxWaitTimeInMs?: number;
  /**
   * How long the fold remembers a settled approval, ms (default 604,800,000: 7 days, at least
   * 1,000): the approval service's GATEHOUSE_APPROVAL_RETAIN_MS. The fold forgets as the service's
   * does, so a process that runs for months holds the approvals of this window, not all it read.
   */
  readonly retainMs?: number;
}

const OPTION_FIELDS = new Set(['kafka', 'keyring', 'agentKey', 'namespace', 'source', 'defaultTimeoutMs', 'maxApprovalWaitMs', 'grantTtlMs', 'replayTimeoutMs', 'cancelTimeoutMs', 'maxWaitTimeInMs', 'retainMs']);

/** The default `maxApprovalWaitMs`: a day. */
const DEFAULT_MAX_APPROVAL_WAIT_MS = 24 * 60 * 60 * 1000;

/** Counters of the shared reader, for metrics and tests. */
export interface KafkaApprovalGatewayStats {
  /** Readers started (a crashed reader is replaced on the next call). */
  readonly readersStarted: number;
  /** Records the reader handed to the fold. */
  readonly records: number;
  /** Records that failed their contract and were skipped (never applied). */
  readonly poison: number;
  /** Live decisions or expiries ignored for their signature (each reported on the audit topic). */
  readonly untrusted: number;
  /** Live claims ignored because their author may not make them (each reported on the audit topic). */
  readonly forbidden: number;
  /** The log time (ISO) the last start-up read began at: nothing logged before it can still grant. */
  readonly readFrom?: string;
  /** Approvals the fold holds now (pending, and settled ones not yet forgotten): what its memory follows. */
  readonly approvalsHeld: number;
}

export interface KafkaApprovalGateway extends ApprovalGateway {
  /**
   * Starts the shared reader and waits until it has caught up with the topic, so the first
   * call does not pay for the replay. Optional: the first call starts it otherwise. Rejects
   * with `APPROVAL.UNAVAILABLE` when the log cannot be read within `replayTimeoutMs`.
   */
  start(): Promise<void>;
  stats(): KafkaApprovalGatewayStats;
}

interface Reader {
  readonly admin: Admin;
  readonly tail: TailHandle;
}

interface CatchUpWaiter {
  readonly ends: ReadonlyMap<number, bigint>;
  resolve(): void;
  reject(): void;
}

/** Rejects when `signal` aborts; `promise` keeps running (and is observed, so it never goes unhandled). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => undefined);
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error('log unavailable'));
      },
    );
  });
}

/**
 * The approvals topic as an `ApprovalLog`: ONE reader per gateway, started on first use,
 * reads the topic from the log time before which nothing can still grant (`approvalHorizon`) and
 * then tails it, handing every record to the fold. A
 * catch-up reads the topic's end offsets at that moment and waits until the tail's positions
 * pass them, so the fold includes everything that was on the log when the call began.
 */
class KafkaApprovalLog implements ApprovalLog {
  private reader: Promise<Reader> | undefined;
  private tail: TailHandle | undefined;
  private producer: Promise<EventProducer> | undefined;
  private readonly catchUps = new Set<CatchUpWaiter>();
  private closed = false;
  readonly counters: { readersStarted: number; records: number; poison: number; untrusted: number; forbidden: number; readFrom?: string } = { readersStarted: 0, records: 0, poison: 0, untrusted: 0, forbidden: 0 };
  /** Signs checkpoints over the security reports, with the agent's claim key (see `kafkaAuditSink`'s `agentKey`). */
  private readonly checkpoints: AuditCheckpointer | undefined;

  constructor(
    private readonly options: { kafka: Kafka; namespace: string | undefined; replayTimeoutMs: number; maxWaitTimeInMs: number; agentKey: AgentKey; source: string; limits: ApprovalLimits },
    private readonly listener: ApprovalLogListener,
  ) {
    // A checkpoint of a source other than guard:* would be refused by every verifier: write none then.
    // The last one is written at close, on the producer the reports used (a closed log connects no new one).
    this.checkpoints = options.source.startsWith('guard:')
      ? new AuditCheckpointer({ key: options.agentKey, source: options.source, append: async (checkpoint) => (await (this.producer ?? this.connectedProducer())).publish('audit', checkpoint) })
      : undefined;
  }

  private get topic(): string {
    return topicName('approvals', this.options.namespace);
  }

  private ensureReader(): Promise<Reader> {
    if (this.closed) return Promise.reject(new Error('closed'));
    if (!this.reader) {
      const started = this.startReader();
      this.reader = started;
      started.catch(() => {
        // A reader that never started is forgotten, so the next call tries again.
        if (this.reader === started) this.reader = undefined;
      });
    }
    return this.reader;
  }

  private async startReader(): Promise<Reader> {
    const { kafka, namespace } = this.options;
    this.counters.readersStarted += 1;
    this.listener.reset();
    const admin = kafka.admin();
    let tail: TailHandle | undefined;
    try {
      await admin.connect();
      const onRecord = ({ event, logTime, partition }: { event: ApprovalEvent; logTime: Date; partition: number }) => {
        this.counters.records += 1;
        this.listener.record(event, logTime.getTime(), undefined, partition);
      };
      // Live records carry where they were read, so a forged grant can be reported (the replay's are old news).
      const onLiveRecord = ({ event, logTime, partition, offset }: { event: ApprovalEvent; logTime: Date; partition: number; offset: string }) => {
        this.counters.records += 1;
        this.listener.record(event, logTime.getTime(), { topic: this.topic, partition, offset }, partition);
      };
      const onPoison = () => {
        this.counters.poison += 1;
      };
      // Bounded by live state: a request logged before the horizon is past its wait and its grant's
      // use-by time (the fold caps both by `limits`), so nothing before it can grant any more.
      const horizon = new Date(approvalHorizon(this.options.limits, Date.now()));
      const fromOffsets = await offsetsAtTime(admin, this.topic, horizon);
      this.counters.readFrom = horizon.toISOString();
      const replayed = await replayTopic(kafka, 'approvals', { namespace, fromOffsets, onRecord, onPoison, timeoutMs: this.options.replayTimeoutMs });
      if (this.closed) throw new Error('closed');
      tail = await tailTopic(kafka, 'approvals', {
        namespace,
        fromOffsets: replayed.nextOffsets,
        onRecord: onLiveRecord,
        onPoison,
        maxWaitTimeInMs: this.options.maxWaitTimeInMs,
        // A decision is applied in a span of the trace the approval service appended it in (the request's).
        recordSpan: applySpanName('approvals'),
        onBatchEnd: () => this.checkCatchUps(),
        onCrash: () => void this.readerFailed(),
      });
      if (this.closed) throw new Error('closed');
      this.tail = tail;
      return { admin, tail };
    } catch (error) {
      await tail?.stop().catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
      throw error;
    }
  }

  /** The tail stopped for good: every waiter fails closed, and the next call starts over (from the horizon of then). */
  private async readerFailed(): Promise<void> {
    const reader = this.reader;
    this.reader = undefined;
    this.tail = undefined;
    this.listener.failed();
    for (const waiter of [...this.catchUps]) waiter.reject();
    this.catchUps.clear();
    const resolved = await reader?.catch(() => undefined);
    await resolved?.tail.stop().catch(() => undefined);
    await resolved?.admin.disconnect().catch(() => undefined);
  }

  private reached(ends: ReadonlyMap<number, bigint>): boolean {
    const positions = this.tail?.positions() ?? {};
    for (const [partition, end] of ends) {
      const position = positions[partition];
      if (end > 0n && (position === undefined || BigInt(position) < end)) return false;
    }
    return true;
  }

  private checkCatchUps(): void {
    for (const waiter of [...this.catchUps]) {
      if (this.reached(waiter.ends)) {
        this.catchUps.delete(waiter);
        waiter.resolve();
      }
    }
  }

  async catchUp(signal: AbortSignal): Promise<void> {
    const reader = await untilAborted(this.ensureReader(), signal);
    const offsets = await untilAborted(reader.admin.fetchTopicOffsets(this.topic), signal);
    const ends = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
    if (this.reached(ends)) return;
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.catchUps.delete(waiter);
        reject(new Error('aborted'));
      };
      const waiter: CatchUpWaiter = {
        ends,
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: () => {
          signal.removeEventListener('abort', onAbort);
          reject(new Error('reader failed'));
        },
      };
      this.catchUps.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
      // The tail may have passed the ends between the check above and now.
      this.checkCatchUps();
    });
  }

  async append(event: ApprovalEvent): Promise<void> {
    const producer = await this.connectedProducer();
    await producer.publish('approvals', event);
  }

  /** Reports a live claim the fold ignored because its author may not make it, as a security event on the audit topic. */
  reportForbidden(event: ApprovalEvent, reason: string, at: GrantPosition, source: string): void {
    this.counters.forbidden += 1;
    const { meta, payload } = forbiddenClaimDecision({ source }, event, reason, at);
    this.report(createEvent(DecisionRecordedV1, meta, payload));
  }

  /** Reports a live decision or expiry the fold ignored for its signature, as a security event on the audit topic. */
  reportUntrusted(event: ApprovalEvent, at: GrantPosition, source: string, keyring: Keyring): void {
    const check = checkGrant(event, keyring);
    if (check.trusted) return;
    this.counters.untrusted += 1;
    untrustedGrantIgnored(check.reason);
    const { meta, payload } = untrustedGrantDecision({ source }, event, check, at);
    this.report(createEvent(DecisionRecordedV1, meta, payload));
  }

  /**
   * Best effort: the fold already ignored the event; a lost report loses no protection. The next
   * checkpoint covers a report in a tenant the agent's key is bound to; one of another tenant (the
   * agent read it on the shared topic) stays unverified, as this key cannot vouch for it there.
   */
  private report(decision: DecisionRecorded): void {
    void this.connectedProducer()
      .then((producer) => producer.publish('audit', decision))
      .then(() => {
        if (agentMayClaimFor(this.options.agentKey, decision.tenant)) this.checkpoints?.covered(decision);
      })
      .catch(() => undefined);
  }

  private async connectedProducer(): Promise<EventProducer> {
    if (this.closed) throw new Error('closed');
    if (!this.producer) {
      const connecting = EventProducer.connect(this.options.kafka, { namespace: this.options.namespace });
      this.producer = connecting;
      connecting.catch(() => {
        if (this.producer === connecting) this.producer = undefined;
      });
    }
    return this.producer;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of [...this.catchUps]) waiter.reject();
    this.catchUps.clear();
    // The last checkpoint over the reports, while the producer is still there.
    await this.checkpoints?.close().catch(() => undefined);
    const reader = this.reader;
    const producer = this.producer;
    this.reader = undefined;
    this.producer = undefined;
    const started = await reader?.catch(() => undefined);
    await started?.tail.stop().catch(() => undefined);
    await started?.admin.disconnect().catch(() => undefined);
    const connected = await producer?.catch(() => undefined);
    await connected?.close().catch(() => undefined);
  }
}

/**
 * The approvals client of an agent process: asks reviewers through `gatehouse.approvals.v1`
 * and waits for their decision, replayed and folded by the shared fold. One reader per
 * gateway serves every waiting call; create one gateway per process and share it.
 */
export function createKafkaApprovalGateway(options: KafkaApprovalGatewayOptions): KafkaApprovalGateway {
  const where = 'createKafkaApprovalGateway';
  if (options === null || typeof options !== 'object') throw new TypeError(`${where}: options are required`);
  const unknown = Object.keys(options).filter((k) => !OPTION_FIELDS.has(k));
  if (unknown.length > 0) throw new TypeError(`${where}: unknown option ${unknown.map((k) => `"${k}"`).join(', ')}`);
  if (options.kafka === null || typeof options.kafka !== 'object' || typeof (options.kafka as { admin?: unknown }).admin !== 'function') throw new TypeError(`${where}: kafka must be a kafkajs client`);
  if (options.namespace !== undefined && (typeof options.namespace !== 'string' || options.namespace.length === 0)) throw new TypeError(`${where}: namespace must be a non-empty string`);
  if (options.source !== undefined && (typeof options.source !== 'string' || options.source.length === 0 || options.source.length > 256)) throw new TypeError(`${where}: source must be a non-empty string`);
  const defaultTimeoutMs = options.defaultTimeoutMs === undefined ? 60_000 : validateTimeout(options.defaultTimeoutMs, 'defaultTimeoutMs', where);
  const replayTimeoutMs = options.replayTimeoutMs === undefined ? 30_000 : validateTimeout(options.replayTimeoutMs, 'replayTimeoutMs', where);
  const cancelTimeoutMs = options.cancelTimeoutMs === undefined ? 5_000 : validateTimeout(options.cancelTimeoutMs, 'cancelTimeoutMs', where);
  const maxWaitTimeInMs = options.maxWaitTimeInMs === undefined ? 100 : validateTimeout(options.maxWaitTimeInMs, 'maxWaitTimeInMs', where);
  const maxApprovalWaitMs = options.maxApprovalWaitMs === undefined ? DEFAULT_MAX_APPROVAL_WAIT_MS : options.maxApprovalWaitMs;
  if (!Number.isSafeInteger(maxApprovalWaitMs) || maxApprovalWaitMs < 1 || maxApprovalWaitMs > MAX_APPROVAL_WAIT_MS) throw new TypeError(`${where}: maxApprovalWaitMs must be a positive integer (ms) of at most ${MAX_APPROVAL_WAIT_MS} (30 days)`);
  const grantTtlMs = options.grantTtlMs === undefined ? DEFAULT_GRANT_TTL_MS : options.grantTtlMs;
  if (!Number.isSafeInteger(grantTtlMs) || grantTtlMs < 1 || grantTtlMs > MAX_GRANT_TTL_MS) throw new TypeError(`${where}: grantTtlMs must be a positive integer (ms) of at most ${MAX_GRANT_TTL_MS} (7 days)`);
  const limits: ApprovalLimits = Object.freeze({ maxWaitMs: maxApprovalWaitMs, maxGrantTtlMs: grantTtlMs });
  const retainMs = options.retainMs === undefined ? DEFAULT_SETTLED_RETAIN_MS : options.retainMs;
  if (!Number.isSafeInteger(retainMs) || retainMs < 1_000) throw new TypeError(`${where}: retainMs must be an integer number of ms, at least 1000`);
  const keyring = options.keyring;
  if (keyring === null || typeof keyring !== 'object' || !(keyring.keys instanceof Map)) throw new TypeError(`${where}: keyring must be a Keyring (createKeyring / keyringFromEnv)`);
  const agentKey = options.agentKey;
  if (agentKey === null || typeof agentKey !== 'object' || agentKey.signer !== 'agent' || !Array.isArray(agentKey.agent?.tenants)) throw new TypeError(`${where}: agentKey must be an AgentKey (agentKeyFromEnv / agentKeyFromPem)`);
  const source = options.source ?? `guard:approvals-${randomUUID().slice(0, 8)}`;
  let log: KafkaApprovalLog | undefined;
  const core = new ApprovalGatewayCore(
    (listener) => (log = new KafkaApprovalLog({ kafka: options.kafka, namespace: options.namespace, replayTimeoutMs, maxWaitTimeInMs, agentKey, source, limits }, listener)),
    {
      source,
      limits,
      retainMs,
      defaultTimeoutMs,
      cancelTimeoutMs,
      keyring,
      claimKey: (tenant) => (agentMayClaimFor(agentKey, tenant) ? agentKey : undefined),
      onUntrusted: (event, at) => log?.reportUntrusted(event, at, source, keyring),
      onForbidden: (event, reason, at) => log?.reportForbidden(event, reason, at, source),
    },
  );
  const reader = log as unknown as KafkaApprovalLog;
  return Object.freeze({
    awaitApproval: core.awaitApproval.bind(core),
    describe: core.describe.bind(core),
    useGrant: core.useGrant.bind(core),
    close: core.close.bind(core),
    async start() {
      try {
        await reader.catchUp(AbortSignal.timeout(replayTimeoutMs));
      } catch {
        throw new ApprovalGatewayError('APPROVAL.UNAVAILABLE');
      }
    },
    stats: () => ({ ...reader.counters, approvalsHeld: core.fold.approvals.size }),
  });
}
