import { type Kafka } from 'kafkajs';
import pg from 'pg';
import { schemaIdent } from '../projection/projection-spec.js';

// How far a service got through a topic, read from outside it as a benchmark or a system test
// does: the topic's end offsets from the broker, and the positions and partition owners the
// service stored in its schema (`projection_offsets`, `partition_owners`) from PostgreSQL.

/** Per partition, the end offset of `topic` (its full name) now: with no writer left, everything a reader will ever see. */
export async function topicEnds(kafka: Kafka, topic: string): Promise<Map<number, bigint>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
  } finally {
    await admin.disconnect();
  }
}

/** Whether `positions` (per partition, the next offset to read) are at or past every end of `ends`. */
export function reached(positions: Readonly<Record<string, string>>, ends: ReadonlyMap<number, bigint>): boolean {
  return [...ends].every(([partition, end]) => BigInt(positions[String(partition)] ?? '0') >= end);
}

/** The sum of `ends`: how many records (and transaction markers) the topic holds. */
export function sumOfEnds(ends: ReadonlyMap<number, bigint>): bigint {
  return [...ends.values()].reduce((sum, end) => sum + end, 0n);
}

/**
 * Reads what a service stored in its schema of the database at `databaseUrl`, over one connection
 * (polled many times a second while a benchmark measures, so not a connection a read). `close` it.
 */
export class StoredProgress {
  private readonly pool: pg.Pool;
  private readonly s: string;

  constructor(databaseUrl: string, schema: string) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    this.s = schemaIdent(schema);
  }

  /** Per partition, the next offset `projection` stored for `topic`; none before the service created its schema. */
  async positions(projection: string, topic: string): Promise<Record<string, string>> {
    try {
      const { rows } = await this.pool.query<{ partition: number; next_offset: string }>(`SELECT partition, next_offset::text FROM ${this.s}.projection_offsets WHERE projection = $1 AND topic = $2`, [projection, topic]);
      return Object.fromEntries(rows.map((r) => [String(r.partition), r.next_offset]));
    } catch {
      return {}; // not migrated yet
    }
  }

  /** Per replica name, how many partitions of `topic` it last claimed for `projection` (scale-out); none before any claim. */
  async owners(projection: string, topic: string): Promise<Map<string, number>> {
    try {
      const { rows } = await this.pool.query<{ owner: string; held: number }>(`SELECT owner, count(*)::int AS held FROM ${this.s}.partition_owners WHERE projection = $1 AND topic = $2 GROUP BY owner`, [projection, topic]);
      return new Map(rows.map((r) => [r.owner, r.held]));
    } catch {
      return new Map(); // not migrated yet
    }
  }

  /** Runs `sql` against the service's database (a count to check what it stored). */
  async query<T extends pg.QueryResultRow>(sql: string, values: readonly unknown[] = []): Promise<T[]> {
    return (await this.pool.query<T>(sql, [...values])).rows;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
