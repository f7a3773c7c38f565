import { topicName } from '@gatehouse/contracts';
import { replayTopic } from '@gatehouse/kafka';
import { applyLedgerEvent, createLedgerState } from '@gatehouse/ledger';
import { openServiceDatabase, ProjectionOffsets } from '@gatehouse/service-runtime';
import { type Kafka } from 'kafkajs';
import { type EntityManager } from 'typeorm';
import { LEDGER_MIGRATIONS } from './ledger-migrations.js';
import { LedgerProjection, PROJECTION_NAME, schemaIdent } from './ledger-projection.js';

export interface RebuildOptions {
  readonly kafka: Kafka;
  readonly namespace?: string | undefined;
  readonly database: { readonly url: string; readonly passwordFile?: string | undefined };
  /** The schema to rebuild into; its projection tables are emptied first. */
  readonly schema: string;
  /** Records per transaction. Default 1,000. */
  readonly batchSize?: number;
  readonly timeoutMs?: number;
}

export interface RebuildReport {
  readonly schema: string;
  readonly records: number;
  readonly unapplied: number;
  /** Per partition, the next offset the rebuilt projection is valid up to. */
  readonly nextOffsets: Record<number, string>;
}

/**
 * Replays `gatehouse.ledger.v1` from offset 0 into a fresh projection in `schema` (created and
 * migrated when missing, emptied when present), through the same fold and projection writer
 * the service uses. The live service does the same on start for whatever its schema lacks.
 */
export async function rebuildProjection(options: RebuildOptions): Promise<RebuildReport> {
  const topic = topicName('ledger', options.namespace);
  const dataSource = await openServiceDatabase({
    url: options.database.url,
    passwordFile: options.database.passwordFile,
    schema: options.schema,
    migrations: LEDGER_MIGRATIONS,
  });
  try {
    const schema = schemaIdent(options.schema);
    await dataSource.transaction(async (manager) => {
      await manager.query(`TRUNCATE ${schema}.keys, ${schema}.budgets, ${schema}.unapplied_records`);
      await manager.query(`DELETE FROM ${schema}.projection_offsets WHERE projection = $1 AND topic = $2`, [PROJECTION_NAME, topic]);
    });
    const state = createLedgerState();
    const projection = new LedgerProjection(dataSource, options.schema, topic);
    const applied = new Map<number, bigint>();
    const batchSize = options.batchSize ?? 1_000;
    let sinceFlush = 0;
    const replay = await replayTopic(options.kafka, 'ledger', {
      namespace: options.namespace,
      timeoutMs: options.timeoutMs ?? 120_000,
      onRecord: async (record) => {
        applyLedgerEvent(state, record.event, record.logTime.getTime());
        projection.touch(record);
        applied.set(record.partition, BigInt(record.offset) + 1n);
        sinceFlush += 1;
        if (sinceFlush >= batchSize) {
          sinceFlush = 0;
          await projection.flush(state, new Map(applied));
        }
      },
      onPoison: (poison) => {
        projection.unappliable(poison);
        applied.set(poison.partition, BigInt(poison.offset) + 1n);
      },
    });
    for (const [partition, next] of Object.entries(replay.nextOffsets)) applied.set(Number(partition), BigInt(next));
    await projection.flush(state, applied);
    return { schema: options.schema, records: replay.records, unapplied: replay.poison, nextOffsets: replay.nextOffsets };
  } finally {
    await dataSource.destroy();
  }
}

export interface ProjectionDifference {
  readonly table: 'keys' | 'budgets' | 'unapplied_records' | 'projection_offsets';
  /** The row's primary key (a ledger key is an opaque hash; no value is shown). */
  readonly id: string;
  readonly issue: 'missing-in-live' | 'missing-in-rebuilt' | 'different';
}

export interface ProjectionComparison {
  readonly equal: boolean;
  /** False when the two were not at the same offsets: compare again once they are. */
  readonly sameOffsets: boolean;
  readonly liveOffsets: Record<number, string>;
  readonly rebuiltOffsets: Record<number, string>;
  readonly rows: { readonly keys: number; readonly budgets: number; readonly unappliedRecords: number };
  readonly differences: readonly ProjectionDifference[];
}

const TABLES = [
  { table: 'keys', id: 'key' },
  { table: 'budgets', id: 'budget_key' },
  { table: 'unapplied_records', id: `partition || '/' || "offset"` },
] as const;

async function rowsOf(manager: EntityManager, schema: string, table: string, id: string): Promise<Map<string, string>> {
  // Every column but the write time, as canonical jsonb text.
  const rows: { id: string; row: string }[] = await manager.query(
    `SELECT ${id} AS id, (to_jsonb(t) - 'updated_at' - 'recorded_at')::text AS row FROM ${schemaIdent(schema)}.${table} t ORDER BY 1`,
  );
  return new Map(rows.map((r) => [r.id, r.row]));
}

/**
 * Compares two ledger projections row by row (write times aside) inside one snapshot, with the
 * offsets they are valid for. Call it once both are at the same offsets.
 */
export async function compareProjections(manager: EntityManager, options: { liveSchema: string; rebuiltSchema: string; namespace?: string | undefined }): Promise<ProjectionComparison> {
  const topic = topicName('ledger', options.namespace);
  return manager.transaction('REPEATABLE READ', async (tx) => {
    const liveOffsets = await new ProjectionOffsets(options.liveSchema, PROJECTION_NAME).load(tx, topic);
    const rebuiltOffsets = await new ProjectionOffsets(options.rebuiltSchema, PROJECTION_NAME).load(tx, topic);
    const differences: ProjectionDifference[] = [];
    const partitions = new Set([...Object.keys(liveOffsets), ...Object.keys(rebuiltOffsets)]);
    for (const p of partitions) {
      const live = liveOffsets[Number(p)] ?? '0';
      const rebuilt = rebuiltOffsets[Number(p)] ?? '0';
      if (live !== rebuilt) differences.push({ table: 'projection_offsets', id: p, issue: 'different' });
    }
    const sameOffsets = differences.length === 0;
    const counts: Record<string, number> = {};
    for (const { table, id } of TABLES) {
      const live = await rowsOf(tx, options.liveSchema, table, id);
      const rebuilt = await rowsOf(tx, options.rebuiltSchema, table, id);
      counts[table] = live.size;
      for (const [rowId, row] of live) {
        const other = rebuilt.get(rowId);
        if (other === undefined) differences.push({ table, id: rowId, issue: 'missing-in-rebuilt' });
        else if (other !== row) differences.push({ table, id: rowId, issue: 'different' });
      }
      for (const rowId of rebuilt.keys()) if (!live.has(rowId)) differences.push({ table, id: rowId, issue: 'missing-in-live' });
    }
    return {
      equal: differences.length === 0,
      sameOffsets,
      liveOffsets,
      rebuiltOffsets,
      rows: { keys: counts['keys'] ?? 0, budgets: counts['budgets'] ?? 0, unappliedRecords: counts['unapplied_records'] ?? 0 },
      differences,
    };
  });
}
