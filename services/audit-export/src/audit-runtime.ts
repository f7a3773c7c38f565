import { GatehouseError, topicName } from '@gatehouse/contracts';
import { type PoisonRecord } from '@gatehouse/kafka';
import { type LogBinding, PartitionOwnerTable, type ProjectionLogs } from '@gatehouse/service-runtime';
import { type Admin, type Kafka } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { type ExportOptions, hasSinks } from './export-config.js';
import { ExportLease } from './export/export-lease.js';
import { type ExportLog, ExportPipeline, type ExportStatus } from './export/export-pipeline.js';
import { AuditError } from './errors.js';
import { decisionsLog, DecisionsProjection, type PartitionProgress, progressOf, PROJECTION_NAME, type ProjectionStart } from './projection/decisions-projection.js';
import { type AuditSink } from './sinks/audit-sink.js';
import { RotatingFileSink } from './sinks/file-sink.js';
import { HttpSink } from './sinks/http-sink.js';
import { KafkaTopicSink } from './sinks/kafka-sink.js';
import { ExportTelemetry } from './telemetry/export-telemetry.js';

export interface AuditRuntimeOptions {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly dataSource: DataSource;
  readonly schema: string;
  readonly namespace: string | undefined;
  readonly export: ExportOptions;
  readonly telemetry?: ExportTelemetry;
  readonly log?: ExportLog;
  /** Parks the audit records the projection cannot apply on the dead-letter topic. */
  readonly deadLetters?: (poison: readonly PoisonRecord[]) => Promise<void>;
  /** The service's projection logs: nothing is projected, exported or served before the audit log is bound. */
  readonly logs: ProjectionLogs;
  /**
   * Scale-out (issue 19, GATEHOUSE_SCALE_OUT=partitions): this replica's name and URL. The replicas
   * share the audit topic's partitions, for the projection and for the export alike (no lease:
   * every replica exports its own partitions at once).
   */
  readonly scaleOut?: { readonly replicaId: string; readonly url: string } | undefined;
}

/** `GET /v1/audit-status`: how far the projection and the export are behind the audit topic (offsets and counts only). */
export interface AuditStatus {
  readonly projection: {
    /** Null until the audit log is bound and the first read began. */
    readonly start: ProjectionStart | null;
    readonly partitions: readonly PartitionProgress[];
    /** Records on the topic not yet in the projection's committed rows. */
    readonly lag: number;
  };
  /** Null without a sink; `lag` null while this replica stands by. */
  readonly export: (ExportStatus & { readonly lag: number | null }) | null;
}

/** Builds the configured sinks. */
export async function createSinks(options: AuditRuntimeOptions): Promise<AuditSink[]> {
  const sinks: AuditSink[] = [];
  const { file, http, kafka } = options.export;
  if (file) sinks.push(new RotatingFileSink({ directory: file.directory, formats: file.formats, maxBytes: file.maxBytes }));
  if (http) sinks.push(new HttpSink({ url: http.url, format: http.format, maxAttempts: http.maxAttempts, timeoutMs: http.timeoutMs }));
  if (kafka) sinks.push(await KafkaTopicSink.start({ kafka: options.kafka, namespace: options.namespace, format: kafka.format, partitions: kafka.partitions }));
  return sinks;
}

/**
 * The service's background work: the decisions projection always; the export pipeline when a
 * sink is configured. Both start in the background and retry, so /health answers while the
 * broker or topic is not there yet. First the audit log is checked against the one the stored
 * rows and positions came from (`decisionsLog`): until it is, the query API refuses
 * (PROJECTION.LOG_UNVERIFIED); on another log nothing starts and nothing is served, and /health
 * says PROJECTION.LOG_CHANGED. The export runs only while this replica holds its lease
 * (`ExportLease`): replicas sharing the database and export name stand by.
 */
export class AuditRuntime {
  readonly projection: DecisionsProjection;
  private pipeline: ExportPipeline | undefined;
  private starting: Promise<void> | undefined;
  private binding: Promise<LogBinding | undefined> | undefined;
  private stopped = false;
  private readonly halting = new AbortController();
  private lease: ExportLease | undefined;
  private standingBy = false;
  private readonly log: ExportLog;

  constructor(private readonly options: AuditRuntimeOptions) {
    this.log = options.log ?? (() => undefined);
    this.projection = new DecisionsProjection(options.kafka, options.dataSource, options.schema, options.namespace, this.log, options.deadLetters, options.export.keyring, this.owners(PROJECTION_NAME));
  }

  /** Scaled out: who owns each partition of `projection` (the decisions, or an export's positions). */
  private owners(projection: string): PartitionOwnerTable | undefined {
    const self = this.options.scaleOut;
    if (!self) return undefined;
    return new PartitionOwnerTable(this.options.dataSource, this.options.schema, projection, topicName('audit', this.options.namespace), { owner: self.replicaId, url: self.url });
  }

  start(): void {
    if (!this.options.export.keyring) this.log('warn', 'no trusted keys configured: no audit record can be verified for its source', { code: 'AUDIT.SOURCES_UNVERIFIED' });
    const target = decisionsLog(topicName('audit', this.options.namespace));
    this.options.logs.expect(target);
    // A log found changed while running: stop reading it (a restart checks again and refuses).
    this.options.logs.onChange((projection) => {
      if (projection === PROJECTION_NAME) void this.stop();
    });
    this.binding = this.bindLog(target).then((binding) => {
      if (!binding || this.stopped) return undefined;
      this.projection.start(binding);
      if (hasSinks(this.options.export)) this.starting = this.startExport();
      return binding;
    });
  }

  /** Resolves once the audit log is checked: true when bound (the projection runs), false when refused or stopped. */
  async bound(): Promise<boolean> {
    return (await this.binding) !== undefined;
  }

  private async bindLog(target: ReturnType<typeof decisionsLog>): Promise<LogBinding | undefined> {
    for (let attempt = 1; !this.stopped; attempt += 1) {
      try {
        return await this.options.logs.bind(target);
      } catch (error) {
        // Refused: the rows are another log's; bind logged it and /health says so.
        if (error instanceof GatehouseError && error.code === 'PROJECTION.LOG_CHANGED') return undefined;
        this.log('warn', 'the audit log cannot be checked yet; retrying', { attempt });
        await new Promise((r) => setTimeout(r, Math.min(10_000, 500 * attempt)).unref());
      }
    }
    return undefined;
  }

  /** The running export, once started; undefined when no sink is configured. */
  exportPipeline(): ExportPipeline | undefined {
    return this.pipeline;
  }

  /** The export's status: running (or starting), standing by for another replica, or none. */
  exportStatus(): ExportStatus | undefined {
    if (this.pipeline) return this.pipeline.status();
    if (!this.standingBy) return undefined;
    return { name: this.options.export.name, phase: 'standby', paused: false, positions: {}, sinks: [], exported: 0, sinkFailures: 0, skipped: 0 };
  }

  /** The projection's and the export's progress against the ends of the audit topic; AUDIT.UNAVAILABLE when the broker or database does not answer. */
  async status(): Promise<AuditStatus> {
    const topic = topicName('audit', this.options.namespace);
    try {
      // One read of the ends for both, so the two lags are measured against the same offsets.
      const [ends, stored] = await Promise.all([this.options.admin.fetchTopicOffsets(topic), this.projection.storedOffsets()]);
      const projection = progressOf(ends, stored);
      const exported = this.exportStatus();
      const exportLag = exported && exported.phase !== 'standby' ? progressOf(ends, exported.positions).lag : null;
      return { projection: { start: this.projection.startReport() ?? null, ...projection }, export: exported ? { ...exported, lag: exportLag } : null };
    } catch {
      throw new AuditError('AUDIT.UNAVAILABLE');
    }
  }

  /** Resolves once the export runs (immediately when there is none, or the audit log was refused). */
  async ready(): Promise<ExportPipeline | undefined> {
    await this.binding;
    await this.starting;
    return this.pipeline;
  }

  private async startExport(): Promise<void> {
    const name = this.options.export.name;
    // Scaled out, the replicas split the partitions: each exports its own, no lease to wait for.
    if (this.options.scaleOut) return this.runExport(this.owners(`export:${name}`));
    const lease = await ExportLease.acquire(this.options.dataSource, this.options.schema, name, {
      retryMs: this.options.export.leaseRetryMs ?? 2_000,
      signal: this.halting.signal,
      onWaiting: () => {
        this.standingBy = true;
        this.log('info', 'another replica runs this export; standing by', { export: name });
      },
      onLost: () => void this.loseLease(),
    });
    if (!lease) return;
    this.lease = lease;
    this.standingBy = false;
    await this.runExport(undefined);
  }

  /** Starts the export pipeline, retrying until it runs or the runtime stops. */
  private async runExport(owners: PartitionOwnerTable | undefined): Promise<void> {
    if (this.stopped) return;
    for (let attempt = 1; !this.stopped; attempt += 1) {
      let sinks: AuditSink[] = [];
      try {
        sinks = await createSinks(this.options);
        this.pipeline = await ExportPipeline.start({
          name: this.options.export.name,
          kafka: this.options.kafka,
          admin: this.options.admin,
          namespace: this.options.namespace,
          dataSource: this.options.dataSource,
          schema: this.options.schema,
          sinks,
          from: this.options.export.from,
          telemetry: this.options.telemetry ?? new ExportTelemetry(),
          log: this.log,
          verdicts: (topic, ids) => this.projection.verdicts(topic, ids),
          ...(owners && { owners }),
          ...(this.options.export.verifyWaitMs === undefined ? {} : { verifyWaitMs: this.options.export.verifyWaitMs }),
          ...(this.options.export.retryBaseMs === undefined ? {} : { retryBaseMs: this.options.export.retryBaseMs }),
          ...(this.options.export.retryMaxMs === undefined ? {} : { retryMaxMs: this.options.export.retryMaxMs }),
        });
        if (this.stopped) await this.pipeline.stop();
        return;
      } catch {
        for (const sink of sinks) await sink.close().catch(() => undefined);
        this.log('warn', 'export cannot start yet; retrying', { export: this.options.export.name, attempt });
        await new Promise((r) => setTimeout(r, Math.min(10_000, 500 * attempt)));
      }
    }
  }

  // The lease's connection failed: the lock may be another replica's now, so this one stops
  // exporting and queues for the lease again.
  private async loseLease(): Promise<void> {
    this.log('error', 'export lease lost; stopping the export', { export: this.options.export.name });
    const pipeline = this.pipeline;
    this.pipeline = undefined;
    await pipeline?.stop().catch(() => undefined);
    await this.lease?.release();
    this.lease = undefined;
    if (!this.stopped) this.starting = this.startExport();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.halting.abort();
    await this.pipeline?.stop();
    await this.lease?.release();
    this.lease = undefined;
    await this.projection.stop();
  }
}
