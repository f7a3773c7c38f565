import { type DecodedRecord, type PoisonRecord } from '@gatehouse/kafka';
import { type BudgetState, type KeyState, type LedgerState } from '@gatehouse/ledger';
import { ProjectionOffsets } from '@gatehouse/service-runtime';
import { type DataSource, type EntityManager } from 'typeorm';

/** The projection's name in `projection_offsets`. */
export const PROJECTION_NAME = 'ledger';

const WRITE_TIMEOUT = '10s';

/** Where a key or budget was last touched: rows are written only past the stored offsets. */
interface Touch {
  readonly partition: number;
  readonly offset: bigint;
}

/** A checked schema name, safe to put in SQL. */
export function schemaIdent(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new TypeError('schema names are lower-case identifiers');
  return `"${schema}"`;
}

function keyRow(key: string, state: KeyState, touch: Touch) {
  const base = { key, partition: touch.partition, last_offset: touch.offset.toString() };
  switch (state.status) {
    case 'pending':
      return {
        ...base,
        status: state.status,
        connector_id: state.connectorId,
        holder: state.holder,
        lease_token: state.leaseToken,
        result_box: null,
        ambiguous: state.ambiguous,
        reserved_at: state.reservedAt,
        pending_ttl_ms: state.pendingTtlMs,
        completed_at: null,
        ambiguous_since: null,
      };
    case 'completed':
      return {
        ...base,
        status: state.status,
        connector_id: state.connectorId,
        holder: null,
        lease_token: state.leaseToken,
        // Boxed, so that a recorded `null` stays JSON null and "no result" stays SQL NULL.
        result_box: state.result === undefined ? null : { v: state.result },
        ambiguous: false,
        reserved_at: null,
        pending_ttl_ms: null,
        completed_at: state.completedAt,
        ambiguous_since: null,
      };
    case 'ambiguous':
      return {
        ...base,
        status: state.status,
        connector_id: state.connectorId,
        holder: null,
        lease_token: null,
        result_box: null,
        ambiguous: true,
        reserved_at: null,
        pending_ttl_ms: null,
        completed_at: null,
        ambiguous_since: state.since,
      };
    default: {
      const exhaustive: never = state;
      return exhaustive;
    }
  }
}

function budgetRow(budgetKey: string, state: BudgetState, touch: Touch) {
  const base = { budget_key: budgetKey, algorithm: state.algorithm, count: state.count, window_ms: state.windowMs, partition: touch.partition, last_offset: touch.offset.toString() };
  switch (state.algorithm) {
    case 'fixed-window':
      return { ...base, window_start: state.windowStart, used: state.used, admitted: null };
    case 'sliding-window':
      return { ...base, window_start: null, used: null, admitted: [...state.admitted] };
    default: {
      const exhaustive: never = state;
      return exhaustive;
    }
  }
}

type KeyRow = ReturnType<typeof keyRow>;
type BudgetRow = ReturnType<typeof budgetRow>;

/**
 * Keeps the PostgreSQL projection of the ledger fold. The fold marks what each record touched;
 * `flush` writes those rows (the fold's state now) together with the offsets they are valid
 * for, in one transaction. Rows touched below the stored offsets are skipped, so replaying a
 * record twice, or two replicas writing the same schema, changes nothing.
 */
export class LedgerProjection {
  private keys = new Map<string, Touch>();
  private budgets = new Map<string, Touch>();
  private unapplied = new Map<string, PoisonRecord>();
  private readonly offsets: ProjectionOffsets;
  private readonly schemaSql: string;

  constructor(
    private readonly dataSource: DataSource,
    readonly schema: string,
    private readonly topic: string,
  ) {
    this.schemaSql = schemaIdent(schema);
    this.offsets = new ProjectionOffsets(schema, PROJECTION_NAME);
  }

  /** Notes the key or budget `record` is about; its row is written at the next flush. */
  touch(record: DecodedRecord<'ledger'>): void {
    const touch = { partition: record.partition, offset: BigInt(record.offset) };
    const { event } = record;
    if (event.type === 'LedgerRateConsumed') this.budgets.set(event.payload.budgetKey, touch);
    else this.keys.set(event.payload.key, touch);
  }

  /** Notes a record the fold could not apply (it failed its contract); it is kept with its reason. */
  unappliable(poison: PoisonRecord): void {
    this.unapplied.set(`${poison.partition}/${poison.offset}`, poison);
  }

  /** Rows waiting for the next flush. */
  pending(): number {
    return this.keys.size + this.budgets.size + this.unapplied.size;
  }

  /** The next offsets the stored projection is valid up to (empty: nothing stored). */
  storedOffsets(manager: EntityManager = this.dataSource.manager): Promise<Record<number, string>> {
    return this.offsets.load(manager, this.topic);
  }

  /**
   * Writes every touched row as `state` has it now, and `through` (per partition, the next
   * offset `state` has applied) as the projection's offsets, in one transaction. Call it
   * synchronously after taking `through`: the rows are read from `state` before the first await.
   * On failure nothing is written and the touched rows are kept for the next flush.
   */
  async flush(state: LedgerState, through: ReadonlyMap<number, bigint>): Promise<void> {
    const keys = this.keys;
    const budgets = this.budgets;
    const unapplied = this.unapplied;
    this.keys = new Map();
    this.budgets = new Map();
    this.unapplied = new Map();
    const keyRows: { key: string; touch: Touch; row: KeyRow | undefined }[] = [];
    for (const [key, touch] of keys) {
      const current = state.keys.get(key);
      keyRows.push({ key, touch, row: current === undefined ? undefined : keyRow(key, current, touch) });
    }
    const budgetRows: { touch: Touch; row: BudgetRow }[] = [];
    for (const [budgetKey, touch] of budgets) {
      const current = state.budgets.get(budgetKey);
      if (current) budgetRows.push({ touch, row: budgetRow(budgetKey, current, touch) });
    }
    const positions = [...through];
    try {
      await this.dataSource.transaction(async (manager) => {
        // A stuck lock becomes a failed write that is retried, never a flush that hangs.
        await manager.query(`SET LOCAL lock_timeout = '${WRITE_TIMEOUT}'`);
        await manager.query(`SET LOCAL statement_timeout = '${WRITE_TIMEOUT}'`);
        // Replicas sharing the schema take turns; each skips what another already wrote.
        await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.schema}/${PROJECTION_NAME}/${this.topic}`]);
        const stored = await this.offsets.load(manager, this.topic);
        const fresh = (touch: Touch) => touch.offset >= BigInt(stored[touch.partition] ?? '0');
        const upserts = keyRows.filter((k) => k.row !== undefined && fresh(k.touch)).map((k) => k.row as KeyRow);
        const deletes = keyRows.filter((k) => k.row === undefined && fresh(k.touch)).map((k) => k.key);
        if (upserts.length > 0) await this.upsertKeys(manager, upserts);
        if (deletes.length > 0) await manager.query(`DELETE FROM ${this.schemaSql}.keys WHERE key = ANY($1::text[])`, [deletes]);
        const budgetUpserts = budgetRows.filter((b) => fresh(b.touch)).map((b) => b.row);
        if (budgetUpserts.length > 0) await this.upsertBudgets(manager, budgetUpserts);
        const poison = [...unapplied.values()].filter((p) => fresh({ partition: p.partition, offset: BigInt(p.offset) }));
        if (poison.length > 0) await this.insertUnapplied(manager, poison);
        for (const [partition, next] of positions) await this.offsets.save(manager, this.topic, partition, next.toString());
      });
    } catch (error) {
      // Keep what was touched; a newer touch of the same row wins.
      for (const [key, touch] of keys) if (!this.keys.has(key)) this.keys.set(key, touch);
      for (const [key, touch] of budgets) if (!this.budgets.has(key)) this.budgets.set(key, touch);
      for (const [id, poison] of unapplied) if (!this.unapplied.has(id)) this.unapplied.set(id, poison);
      throw error;
    }
  }

  private async upsertKeys(manager: EntityManager, rows: KeyRow[]): Promise<void> {
    await manager.query(
      `INSERT INTO ${this.schemaSql}.keys
         (key, status, connector_id, holder, lease_token, result, ambiguous, reserved_at, pending_ttl_ms, completed_at, ambiguous_since, partition, last_offset, updated_at)
       SELECT r.key, r.status, r.connector_id, r.holder, r.lease_token, r.result_box -> 'v', r.ambiguous,
              to_timestamp(r.reserved_at / 1000.0), r.pending_ttl_ms, to_timestamp(r.completed_at / 1000.0),
              to_timestamp(r.ambiguous_since / 1000.0), r.partition, r.last_offset, now()
         FROM jsonb_to_recordset($1::jsonb) AS r(key text, status text, connector_id text, holder text, lease_token text,
              result_box jsonb, ambiguous boolean, reserved_at bigint, pending_ttl_ms bigint, completed_at bigint,
              ambiguous_since bigint, partition integer, last_offset bigint)
       ON CONFLICT (key) DO UPDATE SET
         status = EXCLUDED.status, connector_id = EXCLUDED.connector_id, holder = EXCLUDED.holder,
         lease_token = EXCLUDED.lease_token, result = EXCLUDED.result, ambiguous = EXCLUDED.ambiguous,
         reserved_at = EXCLUDED.reserved_at, pending_ttl_ms = EXCLUDED.pending_ttl_ms, completed_at = EXCLUDED.completed_at,
         ambiguous_since = EXCLUDED.ambiguous_since, partition = EXCLUDED.partition, last_offset = EXCLUDED.last_offset,
         updated_at = now()`,
      [JSON.stringify(rows)],
    );
  }

  private async upsertBudgets(manager: EntityManager, rows: BudgetRow[]): Promise<void> {
    await manager.query(
      `INSERT INTO ${this.schemaSql}.budgets
         (budget_key, algorithm, count, window_ms, window_start, used, admitted, partition, last_offset, updated_at)
       SELECT r.budget_key, r.algorithm, r.count, r.window_ms, to_timestamp(r.window_start / 1000.0), r.used, r.admitted,
              r.partition, r.last_offset, now()
         FROM jsonb_to_recordset($1::jsonb) AS r(budget_key text, algorithm text, count integer, window_ms bigint,
              window_start bigint, used integer, admitted jsonb, partition integer, last_offset bigint)
       ON CONFLICT (budget_key) DO UPDATE SET
         algorithm = EXCLUDED.algorithm, count = EXCLUDED.count, window_ms = EXCLUDED.window_ms,
         window_start = EXCLUDED.window_start, used = EXCLUDED.used, admitted = EXCLUDED.admitted,
         partition = EXCLUDED.partition, last_offset = EXCLUDED.last_offset, updated_at = now()`,
      [JSON.stringify(rows)],
    );
  }

  private async insertUnapplied(manager: EntityManager, poison: PoisonRecord[]): Promise<void> {
    const rows = poison.map((p) => ({ topic: this.topic, partition: p.partition, offset: p.offset, code: p.code, reason: p.reason }));
    await manager.query(
      `INSERT INTO ${this.schemaSql}.unapplied_records (topic, partition, "offset", code, reason)
       SELECT r.topic, r.partition, r."offset", r.code, r.reason
         FROM jsonb_to_recordset($1::jsonb) AS r(topic text, partition integer, "offset" bigint, code text, reason text)
       ON CONFLICT DO NOTHING`,
      [JSON.stringify(rows)],
    );
  }
}
