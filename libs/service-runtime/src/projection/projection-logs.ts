import { GatehouseError, type TopicId } from '@gatehouse/contracts';
import { type FoldLog } from '@gatehouse/kafka';
import { type Admin } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { bindingChange, bindProjectionLog, type LogBinding, type LogChange, logChangedError, type ProjectedLog, specLog } from './projection-log.js';
import { type ProjectionSpec } from './projection-spec.js';
import { ProjectionWriter, type ProjectionWriterOptions } from './projection-writer.js';

export interface ProjectionLogsOptions {
  readonly dataSource: DataSource;
  readonly admin: Admin;
  /** The service's schema. */
  readonly schema: string;
  readonly log?: FoldLog;
  /** How often a running service checks its projections' logs again, ms. Default 10,000. */
  readonly watchMs?: number;
}

type Entry =
  | { readonly target: ProjectedLog; readonly state: 'verifying' }
  | { readonly target: ProjectedLog; readonly state: 'bound'; readonly binding: LogBinding }
  | { readonly target: ProjectedLog; readonly state: 'changed'; readonly change: LogChange };

/** The projection check of /health. */
export interface ProjectionLogHealth {
  readonly status: 'up' | 'down';
  /** PROJECTION.LOG_CHANGED: a projection's log is not its rows' log; PROJECTION.LOG_UNVERIFIED: not checked yet. */
  readonly code?: 'PROJECTION.LOG_CHANGED' | 'PROJECTION.LOG_UNVERIFIED';
  readonly projections: readonly { readonly projection: string; readonly state: Entry['state']; readonly change?: LogChange }[];
}

/**
 * The service's projections and the logs they are bound to. A projection is served only while
 * bound: until its log is checked, and after it was found to be another log, every route but
 * /health refuses (`refusal`), and /health says why. While the service runs it checks again
 * every `watchMs` (a broker replaced, a topic deleted and recreated under it): a change there
 * cannot be rebuilt in place (the fold in memory is the old log's too), so the service refuses
 * until restarted, and a start rebuilds or refuses as the projection says.
 */
export class ProjectionLogs {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners: ((projection: string, change: LogChange) => void)[] = [];
  private readonly log: FoldLog;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: ProjectionLogsOptions) {
    this.log = options.log ?? (() => undefined);
  }

  /** Notes that `target` is to be bound (a start in the background): routes refuse until it is. */
  expect(target: ProjectedLog): void {
    const entry = this.entries.get(key(target));
    if (!entry || entry.state === 'verifying') this.entries.set(key(target), { target, state: 'verifying' });
  }

  /**
   * Checks `target`'s log, rebuilds or refuses as it says (see `bindProjectionLog`), and watches it
   * from then on. Throws PROJECTION.LOG_CHANGED when it refuses; a broker or database that does
   * not answer throws their error and leaves the projection unverified.
   */
  async bind(target: ProjectedLog): Promise<LogBinding> {
    this.expect(target);
    try {
      const binding = await bindProjectionLog({ dataSource: this.options.dataSource, admin: this.options.admin, schema: this.options.schema, target, log: this.log });
      this.entries.set(key(target), { target, state: 'bound', binding });
      this.watch();
      return binding;
    } catch (error) {
      const change = error instanceof GatehouseError && error.code === 'PROJECTION.LOG_CHANGED' ? (error.details['change'] as LogChange) : undefined;
      if (change) this.entries.set(key(target), { target, state: 'changed', change });
      throw error;
    }
  }

  /**
   * Binds `spec`'s projection to the log of `topic` (its full name) and returns its writer, bound
   * too. Rows of another log are dropped first: the fold service's start-up replay writes them
   * again from this log, before the service answers anything.
   */
  async projectionWriter<T extends TopicId, S>(spec: ProjectionSpec<T, S, unknown>, topic: string, options: Omit<ProjectionWriterOptions, 'log'> = {}): Promise<ProjectionWriter<T, S>> {
    const log = await this.bind(specLog(spec, topic));
    return new ProjectionWriter(this.options.dataSource, spec, this.options.schema, topic, { ...options, log });
  }

  /**
   * For a scaled-out replica (`OwnedFoldEngine`): binds the projection to its log once, and returns
   * the writer of each partition the replica comes to own, fenced by the epoch of its claim.
   */
  async ownedProjectionWriters<T extends TopicId, S>(
    spec: ProjectionSpec<T, S, unknown>,
    topic: string,
    options: Omit<ProjectionWriterOptions, 'log' | 'owned'> = {},
  ): Promise<(partition: number, epoch: number) => ProjectionWriter<T, S>> {
    const log = await this.bind(specLog(spec, topic));
    return (partition, epoch) => new ProjectionWriter(this.options.dataSource, spec, this.options.schema, topic, { ...options, log, owned: { partition, epoch } });
  }

  /**
   * Stops `engine` once a projection's log is found changed while running (its fold in memory is
   * the old log's: nothing may be decided or swept on it), and returns it.
   */
  stopOnChange<E extends { stop(): Promise<void> }>(engine: E): E {
    this.onChange(() => void engine.stop().catch(() => undefined));
    return engine;
  }

  /** Called once per projection found on another log while the service runs (stop what reads it). */
  onChange(listener: (projection: string, change: LogChange) => void): void {
    this.listeners.push(listener);
  }

  /** The error every route but /health answers with while a projection is not bound; undefined when all are. */
  refusal(): GatehouseError | undefined {
    for (const entry of this.entries.values()) {
      if (entry.state === 'changed') return logChangedError(entry.target.projection, entry.change);
      if (entry.state === 'verifying') {
        return new GatehouseError('PROJECTION.LOG_UNVERIFIED', 'the projection has not been checked against the log yet', {
          category: 'unavailable',
          retryable: true,
          details: { projection: entry.target.projection },
        });
      }
    }
    return undefined;
  }

  health(): ProjectionLogHealth {
    const projections = [...this.entries.values()].map((e) => ({ projection: e.target.projection, state: e.state, ...(e.state === 'changed' ? { change: e.change } : {}) }));
    const code = projections.some((p) => p.state === 'changed') ? 'PROJECTION.LOG_CHANGED' : projections.some((p) => p.state === 'verifying') ? 'PROJECTION.LOG_UNVERIFIED' : undefined;
    return { status: code ? 'down' : 'up', ...(code ? { code } : {}), projections };
  }

  /** Checks every bound projection's log now (what the timer does); resolves when done. */
  check(): Promise<void> {
    this.checking ??= this.checkAll().finally(() => (this.checking = undefined));
    return this.checking;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.checking?.catch(() => undefined);
  }

  private watch(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.check(), this.options.watchMs ?? 10_000);
    this.timer.unref();
  }

  private async checkAll(): Promise<void> {
    for (const entry of [...this.entries.values()]) {
      if (entry.state !== 'bound' || this.closed) continue;
      const change = await this.changeOf(entry.binding, entry.target);
      // A second look confirms it: a broker restarting may answer oddly once.
      if (!change || (await this.changeOf(entry.binding, entry.target)) !== change || this.closed) continue;
      entry.binding.markChanged(change);
      this.entries.set(key(entry.target), { target: entry.target, state: 'changed', change });
      this.log('error', 'the log under a running projection is not its rows\' log any more; refusing until restarted (a start rebuilds or refuses)', {
        code: 'PROJECTION.LOG_CHANGED',
        projection: entry.target.projection,
        change,
      });
      for (const listener of this.listeners) {
        try {
          listener(entry.target.projection, change);
        } catch {
          this.log('warn', 'a projection log listener failed', { code: 'PROJECTION.LISTENER_FAILED' });
        }
      }
    }
  }

  /** The binding's change, or undefined when it holds or the broker or database cannot say now. */
  private async changeOf(binding: LogBinding, target: ProjectedLog): Promise<LogChange | undefined> {
    if (binding.change) return binding.change;
    try {
      return await bindingChange(this.options.dataSource, this.options.admin, binding, target);
    } catch {
      return undefined;
    }
  }
}

function key(target: ProjectedLog): string {
  return `${target.projection}\u0000${target.topic}`;
}
