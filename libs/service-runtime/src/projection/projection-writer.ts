import { type TopicId } from '@gatehouse/contracts';
import { type DecodedRecord, type FoldProjection, type FoldSnapshot, type PoisonRecord, type RowPosition, type StoredFoldSnapshot } from '@gatehouse/kafka';
import { type DataSource, type EntityManager } from 'typeorm';
import { jsonbParam, type LogAnchor, ProjectionOffsets } from '../database.js';
import { assertPartitionOwner } from './partition-owners.js';
import { type LogBinding, projectionLockKey } from './projection-log.js';
import { type ProjectionSpec, schemaIdent, type Touch } from './projection-spec.js';

const WRITE_TIMEOUT = '10s';

export interface ProjectionWriterOptions {
  /**
   * Called after a flush committed, with the unapplied records it stored for the first time
   * (e.g. to park them on the dead-letter topic). Must not throw; it is awaited.
   */
  readonly onUnapplied?: (poison: readonly PoisonRecord[]) => Promise<void>;
  /**
   * The log the rows belong to (`ProjectionLogs.bind`): every flush checks it inside its
   * transaction and writes nothing once the rows are another log's (PROJECTION.LOG_CHANGED).
   */
  readonly log?: LogBinding;
  /**
   * A scaled-out replica's writer of one partition it owns (`OwnedFoldEngine`): its snapshot row is
   * the partition's own, writers of other partitions commit beside it, and every flush first checks
   * that the partition's owner epoch is still `epoch` (a newer owner's claim fences it: FOLD.FENCED).
   */
  readonly owned?: { readonly partition: number; readonly epoch: number };
}


/**
 * Keeps a service's PostgreSQL projection of its fold. The fold marks what each record touched;
 * `flush` writes those rows (the fold's state now) together with the offsets they are valid for,
 * in one transaction. Rows touched below the stored offsets are skipped, so replaying a record
 * twice, or two replicas writing the same schema, changes nothing. With each partition's offset
 * goes its anchor, the last record applied (offset and log time): what ties the rows to their log.
 */
export class ProjectionWriter<T extends TopicId, S> implements FoldProjection<T, S> {
  private touched: Map<string, Touch>[];
  /** Rows a failed flush made (per table): written by the next flush unless touched again since (the fold may have let go of them). */
  private unwritten: Map<string, { touch: Touch; row: object | undefined }>[];
  private unapplied = new Map<string, PoisonRecord>();
  /** Per partition, the cut of a start from checkpoints: the next flush drops the rows older than it first. */
  private resets: ReadonlyMap<number, bigint> | undefined;
  private readonly anchors = new Map<number, LogAnchor>();
  private readonly offsets: ProjectionOffsets;
  private readonly schemaSql: string;
  /** The flush transaction's settings, sent as one statement list. */
  private readonly settingsSql: string;

  constructor(
    private readonly dataSource: DataSource,
    private readonly spec: ProjectionSpec<T, S, unknown>,
    readonly schema: string,
    /** The topic's full name (namespace included). */
    private readonly topic: string,
    private readonly options: ProjectionWriterOptions = {},
  ) {
    this.schemaSql = schemaIdent(schema);
    this.settingsSql = [
      `SET LOCAL lock_timeout = '${WRITE_TIMEOUT}'`,
      `SET LOCAL statement_timeout = '${WRITE_TIMEOUT}'`,
      ...(spec.commitDurability === 'log' ? ['SET LOCAL synchronous_commit = off'] : []),
    ].join('; ');
    this.offsets = new ProjectionOffsets(schema, spec.name);
    this.touched = spec.tables.map(() => new Map());
    this.unwritten = spec.tables.map(() => new Map());
  }

  /** Notes the rows `record` is about; they are written at the next flush. */
  touch(record: DecodedRecord<T>): void {
    const at = { partition: record.partition, offset: BigInt(record.offset) };
    if (at.offset >= (this.anchors.get(at.partition)?.offset ?? -1n)) this.anchors.set(at.partition, { offset: at.offset, timeMs: record.logTime.getTime() });
    this.spec.tables.forEach((table, i) => {
      for (const key of table.touched(record)) this.touched[i]?.set(key, at);
    });
  }

  /**
   * The fold started from checkpoints (`FoldProjection.seed`): the next flush writes every row of
   * `rows` and, on each partition whose stored rows are older than its cut, drops those first.
   */
  seed(rows: ReadonlyMap<string, ReadonlyMap<string, RowPosition>>, cuts: ReadonlyMap<number, bigint>): void {
    this.spec.tables.forEach((table, i) => {
      for (const [key, at] of rows.get(table.table) ?? []) this.touched[i]?.set(key, at);
    });
    this.resets = cuts;
  }

  /** Notes a record the fold could not apply (it failed its contract); it is kept with its reason. */
  unappliable(poison: PoisonRecord): void {
    this.unapplied.set(`${poison.partition}/${poison.offset}`, poison);
  }

  /** Rows waiting for the next flush. */
  pending(): number {
    return this.touched.reduce((n, m) => n + m.size, 0) + this.unwritten.reduce((n, m) => n + m.size, 0) + this.unapplied.size;
  }

  /** The next offsets the stored projection is valid up to (empty: nothing stored). */
  storedOffsets(manager: EntityManager = this.dataSource.manager): Promise<Record<number, string>> {
    return this.offsets.load(manager, this.topic);
  }

  /**
   * Writes every touched row as `state` has it now, and `through` (per partition, the next
   * offset `state` has applied) as the projection's offsets, in one transaction. The rows are
   * read from `state` before the first await. On failure nothing is written and the rows, as
   * they were read, are kept for the next flush (the fold may let go of settled state meanwhile).
   */
  async flush(state: S, through: ReadonlyMap<number, bigint>, snapshot?: FoldSnapshot): Promise<void> {
    const touched = this.touched;
    const unapplied = this.unapplied;
    const unwritten = this.unwritten;
    const resets = this.resets;
    this.resets = undefined;
    this.touched = this.spec.tables.map(() => new Map());
    this.unapplied = new Map();
    this.unwritten = this.spec.tables.map(() => new Map());
    const rows = this.spec.tables.map((table, i) => {
      const fresh = touched[i] ?? new Map<string, Touch>();
      const made = [...fresh].map(([key, touch]) => ({ key, touch, row: table.row(state, key, touch) }));
      for (const [key, saved] of unwritten[i] ?? []) if (!fresh.has(key)) made.push({ key, ...saved });
      return made;
    });
    const positions = [...through];
    const anchors = new Map(this.anchors);
    let newlyUnapplied: PoisonRecord[] = [];
    try {
      await this.dataSource.transaction(async (manager) => {
        // A stuck lock becomes a failed write that is retried, never a flush that hangs. One round
        // trip for all the settings: an answer waiting on this flush pays for each.
        await manager.query(this.settingsSql);
        // Replicas sharing the schema take turns; each skips what another already wrote. Owners of
        // different partitions write side by side (a rebuild still excludes them all).
        await this.lock(manager);
        // Rows of another log are never written (the log changed under this process, or another replica rebuilt them).
        await this.options.log?.assertCurrent(manager);
        const stored = await this.offsets.load(manager, this.topic);
        const fresh = (touch: Touch) => touch.offset >= BigInt(stored[touch.partition] ?? '0');
        for (const [partition, cut] of resets ?? []) {
          if (BigInt(stored[partition] ?? '0') >= cut) continue;
          for (const table of this.spec.tables) await manager.query(`DELETE FROM ${this.schemaSql}.${table.table} WHERE partition = $1 AND last_offset < $2`, [partition, cut.toString()]);
        }
        for (const [i, table] of this.spec.tables.entries()) {
          const current = (rows[i] ?? []).filter((r) => fresh(r.touch));
          const upserts = current.flatMap((r) => (r.row === undefined ? [] : [r.row]));
          const deletes = current.filter((r) => r.row === undefined).map((r) => r.key);
          if (upserts.length > 0) await table.upsert(manager, this.schemaSql, upserts);
          if (deletes.length > 0 && table.remove) await table.remove(manager, this.schemaSql, deletes);
        }
        const poison = [...unapplied.values()].filter((p) => fresh({ partition: p.partition, offset: BigInt(p.offset) }));
        newlyUnapplied = poison.length > 0 ? await this.insertUnapplied(manager, poison) : [];
        for (const [partition, next] of positions) {
          const anchor = anchors.get(partition);
          await this.offsets.save(manager, this.topic, partition, next.toString(), anchor && anchor.offset < next ? anchor : undefined);
        }
        if (snapshot) await this.saveSnapshot(manager, snapshot);
      });
    } catch (error) {
      // Keep the rows as they were made; a newer touch of the same row wins.
      rows.forEach((made, i) => {
        const keep = this.unwritten[i];
        if (keep) for (const { key, touch, row } of made) keep.set(key, { touch, row });
      });
      for (const [id, poison] of unapplied) if (!this.unapplied.has(id)) this.unapplied.set(id, poison);
      this.resets ??= resets;
      throw error;
    }
    if (newlyUnapplied.length > 0 && this.options.onUnapplied) await this.options.onUnapplied(newlyUnapplied);
  }

  /**
   * The snapshot stored for this projection and topic, if any (its shape is checked by the engine
   * that loads it), and whether the stored rows fall short of its offsets on some partition.
   */
  async loadSnapshot(): Promise<StoredFoldSnapshot | undefined> {
    return this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      const snapshot = await this.storedSnapshot(manager);
      if (!snapshot) return undefined;
      const positions = await this.offsets.positions(manager, this.topic);
      const projected = new Map(positions.map((p) => [p.partition, p.nextOffset]));
      const aheadOfProjection = Object.entries(snapshot.offsets).some(([p, o]) => BigInt(o) > (projected.get(Number(p)) ?? 0n));
      const partitionTimes = Object.fromEntries(positions.flatMap((p) => (p.anchor ? [[p.partition, p.anchor.timeMs]] : [])));
      return { snapshot, aheadOfProjection, partitionTimes };
    });
  }

  private async storedSnapshot(manager: EntityManager): Promise<FoldSnapshot | undefined> {
    const rows: { fold: string; offsets: Record<string, string>; state: string }[] = await manager.query(
      `SELECT fold, offsets, state FROM ${this.schemaSql}.fold_snapshots WHERE projection = $1 AND topic = $2 AND part = $3`,
      [this.spec.name, this.topic, this.snapshotPart],
    );
    const row = rows[0];
    return row ? { fold: row.fold, offsets: row.offsets, state: row.state } : undefined;
  }

  /**
   * Stores `snapshot` in the flush's transaction, unless the stored one is later on some partition
   * (another replica's, or this process's before a slower write): a snapshot never moves back. One
   * of another fold version is replaced.
   */
  private async saveSnapshot(manager: EntityManager, snapshot: FoldSnapshot): Promise<void> {
    const stored = await this.storedSnapshot(manager);
    if (stored && stored.fold === snapshot.fold && Object.entries(stored.offsets).some(([p, o]) => BigInt(o) > BigInt(snapshot.offsets[Number(p)] ?? '0'))) return;
    await manager.query(
      `INSERT INTO ${this.schemaSql}.fold_snapshots (projection, topic, part, fold, offsets, state, bytes)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
       ON CONFLICT (projection, topic, part) DO UPDATE SET fold = EXCLUDED.fold, offsets = EXCLUDED.offsets, state = EXCLUDED.state, bytes = EXCLUDED.bytes, written_at = now()`,
      [this.spec.name, this.topic, this.snapshotPart, snapshot.fold, jsonbParam(snapshot.offsets), snapshot.state, Buffer.byteLength(snapshot.state, 'utf8')],
    );
  }

  /** The snapshot row this writer keeps: its partition's, or -1 (every partition, one replica). */
  private get snapshotPart(): number {
    return this.options.owned?.partition ?? -1;
  }

  /**
   * The projection's write lock: whole for a writer of every partition; shared, plus its
   * partition's own, for an owner of one, which then checks its epoch is still the partition's.
   */
  private async lock(manager: EntityManager): Promise<void> {
    const key = projectionLockKey(this.schema, this.spec.name, this.topic);
    const owned = this.options.owned;
    if (!owned) {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [key]);
      return;
    }
    await manager.query('SELECT pg_advisory_xact_lock_shared(hashtext($1))', [key]);
    await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${key}#${owned.partition}`]);
    await assertPartitionOwner(manager, this.schema, { projection: this.spec.name, topic: this.topic, ...owned });
  }

  /** Stores `poison`; returns the records that were not stored before (another replica, an earlier flush). */
  private async insertUnapplied(manager: EntityManager, poison: PoisonRecord[]): Promise<PoisonRecord[]> {
    const rows = poison.map((p) => ({ topic: this.topic, partition: p.partition, offset: p.offset, code: p.code, reason: p.reason }));
    const inserted = (await manager.query(
      `INSERT INTO ${this.schemaSql}.unapplied_records (topic, partition, "offset", code, reason)
       SELECT r.topic, r.partition, r."offset", r.code, r.reason
         FROM jsonb_to_recordset($1::jsonb) AS r(topic text, partition integer, "offset" bigint, code text, reason text)
       ON CONFLICT DO NOTHING
       RETURNING partition, "offset"::text AS "offset"`,
      [jsonbParam(rows)],
    )) as { partition: number; offset: string }[];
    const fresh = new Set(inserted.map((r) => `${r.partition}/${r.offset}`));
    return poison.filter((p) => fresh.has(`${p.partition}/${p.offset}`));
  }
}
