import { AUDIT_EVENT_LIMITS, decisionTooLarge, eventDigest, GatehouseError, isDecisionRecorded, type Keyring, topicName } from '@gatehouse/contracts';
import { type DecodedRecord, type OwnedPartition, OwnedTail, type PartitionOwners, type PoisonRecord, tailTopic } from '@gatehouse/kafka';
import { assertPartitionOwner, jsonbParam, type LogBinding, type ProjectedLog, ProjectionOffsets } from '@gatehouse/service-runtime';
import { type Admin, type Kafka } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { type ExportLog } from '../export/export-pipeline.js';
import { type AuditRecord, type RecordVerification } from '../feeds/export-line.js';
import { type CheckpointRow, checkpointRow, type ForbiddenVerdict, judgeDigests, storeCheckpoints, verdictsOf } from './source-verification.js';

export const PROJECTION_NAME = 'decisions';

/**
 * The decisions projection as the log check sees it. Its rows carry their topic (one schema may
 * project several namespaces), and on another log it refuses instead of rebuilding: the rows are
 * the audit trail, and may be the only copy left of decisions the broker lost or expired. An
 * operator keeps them (moves the schema aside) and starts the service on a fresh one.
 */
export function decisionsLog(topic: string): ProjectedLog {
  return { projection: PROJECTION_NAME, topic, scope: 'per-topic', onChange: 'refuse' };
}

/** A checked schema name, safe to put in SQL. */
export function schemaIdent(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new TypeError('schema names are lower-case identifiers');
  return `"${schema}"`;
}

/** The row of one decision: allowlisted fields only. */
export function decisionRow(record: AuditRecord) {
  const { event } = record;
  const p = event.payload;
  return {
    event_id: event.id,
    decision_id: p.decisionId,
    tenant: event.tenant,
    subject: event.subject,
    source: event.source,
    event_time: event.time,
    log_time: record.logTime.toISOString(),
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    boundary: p.boundary,
    outcome: p.outcome,
    code: p.code,
    reason: p.reason,
    actor_id: p.actor?.id ?? null,
    actor_role: p.actor?.role ?? null,
    actor_kind: p.actor?.kind ?? null,
    agent_id: p.agentId ?? null,
    run_id: p.runId ?? null,
    tool_id: p.toolId ?? null,
    policy_bundle: p.policy?.bundleId ?? null,
    policy_revision: p.policy?.revision ?? null,
    policy_rule: p.policy?.ruleId ?? null,
    correlation_id: event.correlationId ?? null,
    causation_id: event.causationId ?? null,
    entry_path: p.entryPath ?? null,
    thread_id: p.threadId ?? null,
    redacted_paths: p.redactedPaths,
    duration_ms: p.durationMs ?? null,
    chain_producer: event.chain?.producer ?? null,
    chain_seq: event.chain?.seq ?? null,
    chain_prev_hash: event.chain?.prevHash ?? null,
    // Unverified until a checkpoint that lists this digest is read (`source-verification.ts`).
    digest: eventDigest(event),
    verification: 'unverified',
    verification_reason: null,
    verified_by: null,
    verification_checkpoint: null,
  };
}

type DecisionRow = ReturnType<typeof decisionRow>;

/** One partition's progress: the next offset to read, the topic's end, and the records between. */
export interface PartitionProgress {
  readonly partition: number;
  readonly next: string;
  readonly end: string;
  readonly lag: number;
}

/** A topic's partitions as the broker states them (`admin.fetchTopicOffsets`): first remaining and next offset. */
export type TopicEnds = Awaited<ReturnType<Admin['fetchTopicOffsets']>>;

/**
 * How far `positions` (per partition, the next offset to read) are behind `ends`; a partition
 * without a position reads from its first remaining record.
 */
export function progressOf(ends: TopicEnds, positions: Readonly<Record<number, string>>): { partitions: PartitionProgress[]; lag: number } {
  const partitions = ends
    .map(({ partition, high, low }) => {
      const stored = positions[partition];
      const next = stored === undefined || BigInt(stored) < BigInt(low) ? low : stored;
      return { partition, next, end: high, lag: Math.max(0, Number(BigInt(high) - BigInt(next))) };
    })
    .sort((a, b) => a.partition - b.partition);
  return { partitions, lag: partitions.reduce((sum, p) => sum + p.lag, 0) };
}

/** Where this process's projection began: from the offsets stored with the rows, or (none stored) from the first record. */
export interface ProjectionStart {
  readonly from: 'stored-offsets' | 'offset-0';
  /** Records applied since this process started. */
  readonly records: number;
}

/**
 * Keeps `decisions` in step with the audit topic: per fetched partition batch, the rows and the
 * partition's next offset are written in one transaction (exactly-once by offset); a record
 * already stored (same event id) is skipped. Records that fail their contract are kept in
 * `unapplied_records` with the reason, never silently dropped.
 */
export class DecisionsProjection {
  private readonly offsets: ProjectionOffsets;
  private readonly topic: string;
  private readonly s: string;
  private readonly rows = new Map<number, DecisionRow[]>();
  private readonly checkpoints = new Map<number, CheckpointRow[]>();
  private readonly poison = new Map<number, PoisonRecord[]>();
  private tail: { stop(): Promise<void> } | undefined;
  private binding: LogBinding | undefined;
  /** Scaled out: the fencing epoch of each partition this replica owns. */
  private readonly epochs = new Map<number, number>();
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private startedFrom: ProjectionStart['from'] | undefined;
  private applied = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly dataSource: DataSource,
    private readonly schema: string,
    private readonly namespace: string | undefined,
    private readonly log: ExportLog = () => undefined,
    /** Called after a write committed with the unapplied records it stored for the first time (the dead-letter feed). */
    private readonly onUnapplied: (poison: readonly PoisonRecord[]) => Promise<void> = async () => undefined,
    /** The keys checkpoints are checked against; none: no record's source is ever verified. */
    private readonly keyring?: Keyring,
    /**
     * Scale-out (issue 19): the replicas share the audit topic's partitions through a consumer group
     * and each projects only its own, its writes fenced by the claim `owners` hands out.
     */
    private readonly owners?: PartitionOwners,
  ) {
    this.topic = topicName('audit', namespace);
    this.offsets = new ProjectionOffsets(schema, PROJECTION_NAME);
    this.s = schemaIdent(schema);
  }

  /**
   * Starts tailing from the stored offsets, once bound to the audit log (`binding`): each write
   * checks it, so nothing of another log is written. Retries in the background until the topic answers.
   */
  start(binding?: LogBinding): void {
    this.binding = binding;
    void this.run();
  }

  /** Where this process began reading (undefined until it has), and how many records it applied since. */
  startReport(): ProjectionStart | undefined {
    return this.startedFrom ? { from: this.startedFrom, records: this.applied } : undefined;
  }

  storedOffsets(): Promise<Record<number, string>> {
    return this.offsets.load(this.dataSource.manager, this.topic);
  }

  /** The verdicts on the sources of `eventIds` of `topic`, as projected so far (what the export waits for). */
  verdicts(topic: string, eventIds: readonly string[]): Promise<Map<string, RecordVerification>> {
    return verdictsOf(this.dataSource.manager, this.s, topic, eventIds);
  }

  private async run(): Promise<void> {
    if (this.stopped) return;
    try {
      this.rows.clear();
      this.checkpoints.clear();
      this.poison.clear();
      const from = await this.storedOffsets();
      this.startedFrom ??= Object.keys(from).length > 0 ? 'stored-offsets' : 'offset-0';
      this.tail = this.owners
        ? await OwnedTail.start({ kafka: this.kafka, topicId: 'audit', namespace: this.namespace, group: 'audit-decisions', take: (partition) => this.take(partition), onCrash: () => this.retry() })
        : await tailTopic(this.kafka, 'audit', {
            namespace: this.namespace,
            fromOffsets: from,
            onRecord: (record) => this.buffer(record),
            onPoison: (poison) => this.bufferPoison(poison),
            onBatchEnd: (partition, next) => this.flush(partition, next),
            onCrash: () => this.retry(),
          });
      if (this.stopped) await this.tail.stop();
    } catch {
      this.retry();
    }
  }

  /** Scaled out: the group gave this replica `partition`; it is claimed and read from its stored offset. */
  private async take(partition: number): Promise<OwnedPartition<'audit'>> {
    const epoch = await (this.owners as PartitionOwners).claim(partition);
    const stored = await this.storedOffsets();
    this.epochs.set(partition, epoch);
    for (const buffers of [this.rows, this.checkpoints, this.poison] as Map<number, unknown[]>[]) buffers.set(partition, []);
    return {
      from: BigInt(stored[partition] ?? '0'),
      record: (record) => this.buffer(record),
      poison: (poison) => this.bufferPoison(poison),
      batchEnd: (next) => this.flush(partition, next.toString()),
      stop: async () => {
        // Nothing it holds is written now: the new owner reads on from the last commit.
        if (this.epochs.get(partition) === epoch) this.epochs.delete(partition);
        for (const buffers of [this.rows, this.checkpoints, this.poison] as Map<number, unknown[]>[]) buffers.delete(partition);
      },
    };
  }

  private buffer(record: DecodedRecord<'audit'>): void {
    const { event } = record;
    if (isDecisionRecorded(event) && decisionTooLarge(event)) {
      // Agents write here too: a record past the bounds is parked (and dead-lettered), never projected or exported.
      this.bufferPoison({ topic: this.topic, partition: record.partition, offset: record.offset, key: record.key, value: null, code: 'AUDIT.EVENT_TOO_LARGE', reason: `a decision record past ${AUDIT_EVENT_LIMITS.eventBytes} bytes` });
    } else if (isDecisionRecorded(event)) {
      const list = this.rows.get(record.partition) ?? [];
      list.push(decisionRow({ ...record, event }));
      this.rows.set(record.partition, list);
    } else {
      const list = this.checkpoints.get(record.partition) ?? [];
      list.push(checkpointRow({ ...record, event }, this.keyring));
      this.checkpoints.set(record.partition, list);
    }
  }

  private bufferPoison(poison: PoisonRecord): void {
    const list = this.poison.get(poison.partition) ?? [];
    list.push(poison);
    this.poison.set(poison.partition, list);
  }

  private retry(): void {
    if (this.stopped) return;
    this.log('warn', 'decisions projection cannot tail the audit topic yet; retrying', { topic: this.topic });
    const tail = this.tail;
    this.tail = undefined;
    this.retryTimer = setTimeout(() => {
      void (async () => {
        await tail?.stop().catch(() => undefined);
        await this.run();
      })();
    }, 2_000);
    this.retryTimer.unref();
  }

  private async flush(partition: number, next: string): Promise<void> {
    const rows = this.rows.get(partition) ?? [];
    const checkpoints = this.checkpoints.get(partition) ?? [];
    const poison = this.poison.get(partition) ?? [];
    let stored: PoisonRecord[] = [];
    let forbidden: ForbiddenVerdict[] = [];
    for (let attempt = 1; ; attempt += 1) {
      try {
        const epoch = this.epochs.get(partition);
        if (this.owners && epoch === undefined) return; // the partition moved while the batch was read
        await this.dataSource.transaction(async (manager) => {
          await this.binding?.assertCurrent(manager);
          if (epoch !== undefined) await assertPartitionOwner(manager, this.schema, { projection: PROJECTION_NAME, topic: this.topic, partition, epoch });
          if (rows.length > 0) {
            await manager.query(
              `INSERT INTO ${this.s}.decisions
                 SELECT * FROM jsonb_populate_recordset(NULL::${this.s}.decisions, $1::jsonb)
               ON CONFLICT DO NOTHING`,
              [jsonbParam(rows)],
            );
          }
          await storeCheckpoints(manager, this.s, checkpoints);
          // Each record meets the checkpoints stored before it, each checkpoint the records: either order.
          forbidden = await judgeDigests(manager, this.s, this.topic, [...rows.map((r) => r.digest), ...checkpoints.flatMap((c) => c.digests)], this.keyring);
          stored = [];
          if (poison.length > 0) {
            const inserted = (await manager.query(
              `INSERT INTO ${this.s}.unapplied_records (topic, partition, "offset", code, reason)
               SELECT r.topic, r.partition, r."offset", r.code, r.reason
                 FROM jsonb_to_recordset($1::jsonb) AS r(topic text, partition integer, "offset" bigint, code text, reason text)
               ON CONFLICT DO NOTHING
               RETURNING "offset"::text AS "offset"`,
              [jsonbParam(poison.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.offset, code: p.code, reason: p.reason })))],
            )) as { offset: string }[];
            const fresh = new Set(inserted.map((r) => r.offset));
            stored = poison.filter((p) => fresh.has(p.offset));
          }
          // The newest record applied is the anchor: the record that ties the positions to this log.
          const lastRow = rows.at(-1);
          const lastCheckpoint = checkpoints.at(-1);
          const last = lastCheckpoint && (!lastRow || BigInt(lastCheckpoint.offset) > BigInt(lastRow.offset)) ? lastCheckpoint : lastRow;
          await this.offsets.save(manager, this.topic, partition, next, last ? { offset: BigInt(last.offset), timeMs: Date.parse(last.log_time) } : undefined);
        });
        break;
      } catch (error) {
        // Another log's rows are never written (the runtime stops the projection), nor rows of a partition another replica owns now.
        if (this.stopped || (error instanceof GatehouseError && (error.code === 'PROJECTION.LOG_CHANGED' || error.code === 'FOLD.FENCED'))) return;
        if (attempt === 1) this.log('warn', 'decisions projection write failed; retrying', { partition });
        await new Promise((r) => setTimeout(r, Math.min(5_000, 200 * 2 ** attempt)));
      }
    }
    this.applied += rows.length + checkpoints.length + poison.length;
    this.rows.set(partition, []);
    this.checkpoints.set(partition, []);
    this.poison.set(partition, []);
    // The service's own security decision on a record whose source its checkpoint may not claim: logged (no
    // payload), marked in the API and followed by a SECURITY.FORBIDDEN_AUDIT_SOURCE line in the feeds.
    // A key the keyring does not hold (retired, or none configured) proves nothing either way: not reported.
    for (const c of checkpoints.filter((row) => !row.trusted && row.untrusted_reason !== 'unknown-key')) {
      this.log('warn', 'an audit checkpoint without a trusted signature vouches for nothing', { code: 'SECURITY.UNTRUSTED_AUDIT_CHECKPOINT', eventId: c.event_id, untrusted: c.untrusted_reason ?? 'unsigned', partition: c.partition, offset: c.offset });
    }
    for (const f of forbidden) this.log('warn', 'an audit record is vouched for only by a checkpoint that may not claim it', { code: 'SECURITY.FORBIDDEN_AUDIT_SOURCE', eventId: f.eventId, reason: f.reason, partition: f.partition, offset: f.offset });
    if (stored.length > 0) await this.onUnapplied(stored);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.tail?.stop().catch(() => undefined);
  }
}
