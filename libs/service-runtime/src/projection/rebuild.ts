import { topicName, type TopicId } from '@gatehouse/contracts';
import { behindLogStart, logStarts, replayTopic, restoreFromCheckpoints } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { type EntityManager } from 'typeorm';
import { openServiceDatabase, ProjectionOffsets } from '../database.js';
import { LogBinding, specLog, writeLogIdentity } from './projection-log.js';
import { type ProjectionSpec, schemaIdent } from './projection-spec.js';
import { ProjectionWriter } from './projection-writer.js';

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

/** The cluster id of the broker `kafka` talks to. */
export async function brokerClusterId(kafka: Kafka): Promise<string> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return (await admin.describeCluster()).clusterId ?? '';
  } finally {
    await admin.disconnect();
  }
}

/**
 * Replays the spec's topic from offset 0 (or, where its beginning was deleted, from the spec's
 * checkpoints) into a fresh projection in `schema` (created and
 * migrated when missing, emptied when present), through the same fold and writer the service
 * uses, and binds it to that log. The live service does the same on start for whatever its
 * schema lacks, and all of it when its rows are of another log.
 */
export async function rebuildProjection<T extends TopicId, S, V>(spec: ProjectionSpec<T, S, V>, options: RebuildOptions): Promise<RebuildReport> {
  const topic = topicName(spec.topicId, options.namespace);
  const dataSource = await openServiceDatabase({ url: options.database.url, passwordFile: options.database.passwordFile, schema: options.schema, migrations: spec.migrations });
  try {
    // The rebuilt rows are bound to the log they are replayed from, like a live service's.
    const target = specLog(spec, topic);
    const clusterId = await brokerClusterId(options.kafka);
    const generation = await dataSource.transaction((manager) => writeLogIdentity(manager, options.schema, target, clusterId, true));
    let state = spec.fold.create();
    const writer = new ProjectionWriter(dataSource, spec, options.schema, topic, { log: new LogBinding(spec.name, topic, options.schema, generation) });
    const applied = new Map<number, bigint>();
    // A log whose beginning was deleted is read as the service reads it: from its checkpoints on.
    let fromOffsets: Record<number, string> | undefined;
    const starts = spec.checkpoints ? await logStarts(options.kafka, topic) : undefined;
    if (spec.checkpoints && starts && behindLogStart(starts, undefined)) {
      const found = await restoreFromCheckpoints(spec.checkpoints(options.kafka, options.namespace), topic, starts);
      state = found.state;
      writer.seed(found.rows, found.offsets);
      for (const [partition, cut] of found.offsets) applied.set(partition, cut);
      fromOffsets = found.fromOffsets;
    }
    const batchSize = options.batchSize ?? 1_000;
    let sinceFlush = 0;
    const replay = await replayTopic(options.kafka, spec.topicId, {
      namespace: options.namespace,
      timeoutMs: options.timeoutMs ?? 120_000,
      ...(fromOffsets && { fromOffsets }),
      onRecord: async (record) => {
        spec.fold.apply(state, record.event, record.logTime.getTime());
        writer.touch(record);
        applied.set(record.partition, BigInt(record.offset) + 1n);
        sinceFlush += 1;
        if (sinceFlush >= batchSize) {
          sinceFlush = 0;
          await writer.flush(state, new Map(applied));
        }
      },
      onPoison: (poison) => {
        writer.unappliable(poison);
        applied.set(poison.partition, BigInt(poison.offset) + 1n);
      },
    });
    for (const [partition, next] of Object.entries(replay.nextOffsets)) applied.set(Number(partition), BigInt(next));
    await writer.flush(state, applied);
    return { schema: options.schema, records: replay.records, unapplied: replay.poison, nextOffsets: replay.nextOffsets };
  } finally {
    await dataSource.destroy();
  }
}

export interface ProjectionDifference {
  readonly table: string;
  /** The row's primary key (keys are ids or hashes; no value is shown). */
  readonly id: string;
  readonly issue: 'missing-in-live' | 'missing-in-rebuilt' | 'different';
  /** Where the live row says the last record that touched it is (missing-in-rebuilt rows only). */
  readonly at?: { readonly partition: number; readonly offset: string };
}

export interface ProjectionComparison {
  readonly equal: boolean;
  /** False when the two were not at the same offsets: compare again once they are. */
  readonly sameOffsets: boolean;
  readonly liveOffsets: Record<number, string>;
  readonly rebuiltOffsets: Record<number, string>;
  /** Rows per table of the live projection (`unapplied_records` included). */
  readonly rows: Readonly<Record<string, number>>;
  readonly differences: readonly ProjectionDifference[];
}

interface ComparedRow {
  readonly row: string;
  readonly partition: number;
  readonly offset: string;
}

async function rowsOf(manager: EntityManager, schema: string, table: ComparedTable): Promise<Map<string, ComparedRow>> {
  // Every column but the write times and the position, as canonical jsonb text, and the row's own log
  // position apart: a row restored from a checkpoint stands at the checkpoint's cut, its own last
  // record deleted, and says the same as a row the full log built.
  const rows: { id: string; row: string; partition: number; offset: string }[] = await manager.query(
    `SELECT (${table.id})::text AS id, (to_jsonb(t) - 'updated_at' - 'recorded_at' - 'last_offset')::text AS row, t.partition AS partition, (t.${table.offsetColumn})::text AS offset
       FROM ${schemaIdent(schema)}.${table.table} t ORDER BY 1`,
  );
  return new Map(rows.map((r) => [r.id, { row: r.row, partition: r.partition, offset: r.offset }]));
}

interface ComparedTable {
  readonly table: string;
  readonly id: string;
  /** The column holding the offset of the last record that touched the row (its partition is in `partition`). */
  readonly offsetColumn: string;
}

/**
 * Compares two projections of the same spec row by row (write times aside) inside one
 * snapshot, with the offsets they are valid for. Call it once both are at the same offsets.
 */
export async function compareProjections<T extends TopicId, S, V>(
  spec: ProjectionSpec<T, S, V>,
  manager: EntityManager,
  options: { liveSchema: string; rebuiltSchema: string; namespace?: string | undefined },
): Promise<ProjectionComparison> {
  const topic = topicName(spec.topicId, options.namespace);
  const tables: ComparedTable[] = [
    ...spec.tables.map((t) => ({ table: t.table, id: t.idSql, offsetColumn: 'last_offset' })),
    { table: 'unapplied_records', id: `partition || '/' || "offset"`, offsetColumn: '"offset"' },
  ];
  return manager.transaction('REPEATABLE READ', async (tx) => {
    const liveOffsets = await new ProjectionOffsets(options.liveSchema, spec.name).load(tx, topic);
    const rebuiltOffsets = await new ProjectionOffsets(options.rebuiltSchema, spec.name).load(tx, topic);
    const differences: ProjectionDifference[] = [];
    for (const p of new Set([...Object.keys(liveOffsets), ...Object.keys(rebuiltOffsets)])) {
      if ((liveOffsets[Number(p)] ?? '0') !== (rebuiltOffsets[Number(p)] ?? '0')) differences.push({ table: 'projection_offsets', id: p, issue: 'different' });
    }
    const sameOffsets = differences.length === 0;
    const rows: Record<string, number> = {};
    for (const compared of tables) {
      const { table } = compared;
      const live = await rowsOf(tx, options.liveSchema, compared);
      const rebuilt = await rowsOf(tx, options.rebuiltSchema, compared);
      rows[table] = live.size;
      for (const [rowId, row] of live) {
        const other = rebuilt.get(rowId);
        if (other === undefined) differences.push({ table, id: rowId, issue: 'missing-in-rebuilt', at: { partition: row.partition, offset: row.offset } });
        else if (other.row !== row.row) differences.push({ table, id: rowId, issue: 'different' });
      }
      for (const rowId of rebuilt.keys()) if (!live.has(rowId)) differences.push({ table, id: rowId, issue: 'missing-in-live' });
    }
    return { equal: differences.length === 0, sameOffsets, liveOffsets, rebuiltOffsets, rows, differences };
  });
}
