import { type DataSource, type QueryRunner } from 'typeorm';

/**
 * The right to run one export: a PostgreSQL session-level advisory lock on
 * `audit-export:<schema>:<name>`, held on a connection of its own for as long as the export
 * runs. Replicas that share the database and the export name wait as standbys; when the holder
 * stops or dies its session ends, the lock is released, and one standby takes over from the
 * positions the holder stored. Two replicas never export the same records at once.
 */
export class ExportLease {
  private runner: QueryRunner | undefined;
  private watch: NodeJS.Timeout | undefined;

  private constructor(
    private readonly dataSource: DataSource,
    private readonly key: string,
  ) {}

  /** The lock's key text for an export (hashed by PostgreSQL's `hashtext`). */
  static keyOf(schema: string, name: string): string {
    return `audit-export:${schema}:${name}`;
  }

  /**
   * Takes the lease, waiting `retryMs` between attempts while another replica holds it, until
   * `signal` aborts (then undefined). `onLost` is called once if the lease's connection fails
   * later (the database restarted: the lock may be someone else's now).
   */
  static async acquire(
    dataSource: DataSource,
    schema: string,
    name: string,
    options: { readonly retryMs: number; readonly signal: AbortSignal; readonly onWaiting?: () => void; readonly onLost: () => void },
  ): Promise<ExportLease | undefined> {
    const lease = new ExportLease(dataSource, ExportLease.keyOf(schema, name));
    let waiting = false;
    while (!options.signal.aborted) {
      if (await lease.tryLock()) {
        lease.watchConnection(options.retryMs, options.onLost);
        return lease;
      }
      if (!waiting) options.onWaiting?.();
      waiting = true;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.retryMs);
        options.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        }, { once: true });
      });
    }
    return undefined;
  }

  private async tryLock(): Promise<boolean> {
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      const rows = (await runner.query('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [this.key])) as { locked: boolean }[];
      if (rows[0]?.locked === true) {
        this.runner = runner;
        return true;
      }
    } catch {
      // the database is not there (yet): not ours this time
    }
    await runner.release().catch(() => undefined);
    return false;
  }

  // The lock lives as long as its session: a connection that fails means it may be gone.
  private watchConnection(intervalMs: number, onLost: () => void): void {
    this.watch = setInterval(() => {
      const runner = this.runner;
      if (!runner) return;
      runner.query('SELECT 1').catch(() => {
        this.stopWatching();
        onLost();
      });
    }, Math.max(1_000, intervalMs));
    this.watch.unref();
  }

  private stopWatching(): void {
    if (this.watch) clearInterval(this.watch);
    this.watch = undefined;
  }

  /** Gives the lease up (the lock, then the connection). */
  async release(): Promise<void> {
    this.stopWatching();
    const runner = this.runner;
    this.runner = undefined;
    if (!runner) return;
    await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [this.key]).catch(() => undefined);
    await runner.release().catch(() => undefined);
  }
}
