import { checkGrant, createEvent, DecisionRecordedV1, type GrantCheck, type Keyring, type TopicEvent, type TopicId, topicName, untrustedGrantDecision } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { EventProducer } from '../producer.js';
import { type DecodedRecord } from '../records.js';
import { replayTopic } from '../replay.js';
import { type TailHandle, tailTopic } from '../tail.js';
import { type Fold, type FoldLog } from './fold-engine.js';
import { applySpanName, countUntrustedGrant } from '../telemetry/kafka-telemetry.js';
import { activeTraceContext } from '../telemetry/trace-context.js';

/** Who reports grants a fold ignored, and which keys it trusts. */
export interface UntrustedReporting {
  readonly keyring: Keyring;
  /** Envelope source of the security events (`guard:<instance>`, `service:<name>`). */
  readonly source: string;
}

/** What appends a security report to the audit topic: an `EventProducer`, or a fold engine's checkpointed writer. */
export interface AuditAppender {
  publish(topicId: 'audit', event: TopicEvent<'audit'>): Promise<unknown>;
}

/**
 * Reports a live granting event `reporting.keyring` does not trust as `SECURITY.UNTRUSTED_GRANT`
 * on the audit topic, and logs it. Returns false when the event is trusted. Best effort: the fold
 * already ignored the event, so a lost report loses no protection.
 */
export function reportIfUntrusted<T extends TopicId>(
  record: DecodedRecord<T>,
  topicId: T,
  namespace: string | undefined,
  reporting: UntrustedReporting,
  producer: () => Promise<AuditAppender> | AuditAppender | undefined,
  log: FoldLog,
): boolean {
  const check: GrantCheck = checkGrant(record.event, reporting.keyring);
  if (check.trusted) return false;
  const at = { topic: topicName(topicId, namespace), partition: record.partition, offset: record.offset };
  countUntrustedGrant(at.topic, check.reason);
  log('warn', `ignored a ${record.event.type} without a valid signature`, { code: 'SECURITY.UNTRUSTED_GRANT', untrusted: check.reason, partition: record.partition, offset: record.offset });
  const { meta, payload } = untrustedGrantDecision({ source: reporting.source }, record.event, check, at);
  // The report joins the trace the record is applied in (none with the SDK off).
  const trace = activeTraceContext();
  Promise.resolve(producer())
    .then((p) => p?.publish('audit', createEvent(DecisionRecordedV1, { ...meta, ...(trace && { trace }) }, payload)))
    .catch(() => log('warn', 'could not report an untrusted grant', { code: 'SECURITY.REPORT_FAILED' }));
  return true;
}

export interface FoldReaderOptions<T extends TopicId, S, V> {
  readonly kafka: Kafka;
  readonly topicId: T;
  readonly fold: Fold<T, S, V>;
  readonly namespace?: string | undefined;
  /** Report live granting events the keyring does not trust (on the audit topic). */
  readonly untrusted?: UntrustedReporting;
  /** Every applied record with its verdict; `live` once the start-up replay is done. */
  readonly onApplied?: (record: DecodedRecord<T>, verdict: V, live: boolean) => void;
  /** The tail stopped for good: the state no longer follows the log. */
  readonly onFailed?: () => void;
  /** Deadline of the start-up replay, ms. Default 30,000. */
  readonly replayTimeoutMs?: number;
  readonly log?: FoldLog;
}

/**
 * A read-only follower of one topic: replays it from offset 0 into a fold, then tails it. What a
 * process that reads but never decides needs (a guard following policy bundles, say). Its state
 * is as of the log it has read; `phase` says whether it still follows.
 */
export class FoldReader<T extends TopicId, S, V> {
  private readonly foldState: S;
  private tail: TailHandle | undefined;
  private producer: Promise<EventProducer> | undefined;
  private currentPhase: 'starting' | 'following' | 'failed' | 'stopped' = 'starting';
  private readonly log: FoldLog;

  private constructor(private readonly options: FoldReaderOptions<T, S, V>) {
    this.foldState = options.fold.create();
    this.log = options.log ?? (() => undefined);
  }

  /** Resolves once the replay reached the end the topic had at the start; then follows it live. */
  static async start<T extends TopicId, S, V>(options: FoldReaderOptions<T, S, V>): Promise<FoldReader<T, S, V>> {
    const reader = new FoldReader(options);
    try {
      await reader.run();
    } catch (error) {
      await reader.stop();
      throw error;
    }
    return reader;
  }

  private async run(): Promise<void> {
    const { kafka, topicId, namespace } = this.options;
    const replayed = await replayTopic(kafka, topicId, { namespace, timeoutMs: this.options.replayTimeoutMs ?? 30_000, onRecord: (r) => this.ingest(r, false) });
    this.tail = await tailTopic(kafka, topicId, {
      namespace,
      fromOffsets: replayed.nextOffsets,
      recordSpan: applySpanName(topicId),
      onRecord: (r) => this.ingest(r, true),
      onCrash: () => {
        if (this.currentPhase === 'stopped') return;
        this.currentPhase = 'failed';
        this.log('error', `${topicId} reader stopped; its state no longer follows the log`, { code: 'FOLD.READER_FAILED' });
        this.options.onFailed?.();
      },
    });
    if (this.currentPhase === 'starting') this.currentPhase = 'following';
  }

  private ingest(record: DecodedRecord<T>, live: boolean): void {
    const verdict = this.options.fold.apply(this.foldState, record.event, record.logTime.getTime());
    const reporting = this.options.untrusted;
    if (live && reporting) reportIfUntrusted(record, this.options.topicId, this.options.namespace, reporting, () => this.reportProducer(), this.log);
    this.options.onApplied?.(record, verdict, live);
  }

  private reportProducer(): Promise<EventProducer> {
    this.producer ??= EventProducer.connect(this.options.kafka, { namespace: this.options.namespace });
    return this.producer;
  }

  /** The fold's state as read so far (read only). */
  get state(): S {
    return this.foldState;
  }

  get phase(): 'starting' | 'following' | 'failed' | 'stopped' {
    return this.currentPhase;
  }

  async stop(): Promise<void> {
    if (this.currentPhase === 'stopped') return;
    this.currentPhase = 'stopped';
    await this.tail?.stop().catch(() => undefined);
    const producer = await this.producer?.catch(() => undefined);
    await producer?.close().catch(() => undefined);
  }
}
