import { readFileSync } from 'node:fs';
import { Logger } from '@nestjs/common';
import { GatehouseError } from '@gatehouse/contracts';
import { DataSource, type EntityManager, type Logger as TypeOrmLogger, type MigrationInterface, type QueryRunner } from 'typeorm';

export type MigrationClass = new () => MigrationInterface;

export interface ServiceDatabaseOptions {
  readonly url: string;
  readonly schema: string;
  readonly migrations: readonly MigrationClass[];
  /** File holding the password, when it is not in the URL (mounted secrets). */
  readonly passwordFile?: string | undefined;
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) {
    throw new GatehouseError('DATABASE.INVALID_IDENTIFIER', 'schema names are lower-case identifiers', { category: 'validation' });
  }
  return `"${name}"`;
}

/**
 * TypeORM's logger for the services. TypeORM's own logs a failed query with its parameters, and
 * PostgreSQL's message can quote the data: both may hold record content (tool arguments, event
 * payloads). A failed query is logged by its SQLSTATE and the SQL's first words only.
 */
export class ContentFreeQueryLogger implements TypeOrmLogger {
  private readonly logger = new Logger('database');

  logQuery(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}

  logQueryError(error: string | Error, query: string, _parameters?: unknown): void {
    const code = typeof error === 'object' && error !== null ? ((error as { code?: unknown }).code ?? 'unknown') : 'unknown';
    this.logger.error(`query failed (SQLSTATE ${String(code)}): ${query.trim().split(/\s+/).slice(0, 3).join(' ')} ...`);
  }

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(typeof message === 'string' ? message : 'TypeORM warning');
  }
}

/**
 * Opens the service's database, creates its schema when missing and runs its TypeORM
 * migrations (each in its own transaction). `synchronize` is never used.
 */
export async function openServiceDatabase(options: ServiceDatabaseOptions): Promise<DataSource> {
  const password = options.passwordFile ? readFileSync(options.passwordFile, 'utf8').trim() : undefined;
  const dataSource = new DataSource({
    type: 'postgres',
    url: options.url,
    ...(password === undefined ? {} : { password }),
    schema: options.schema,
    migrations: [...options.migrations],
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    logging: ['error', 'warn'],
    logger: new ContentFreeQueryLogger(),
    extra: { max: 10, connectionTimeoutMillis: 5_000, application_name: `gatehouse-${options.schema}` },
  });
  try {
    await dataSource.initialize();
  } catch (cause) {
    throw new GatehouseError('DATABASE.UNAVAILABLE', 'cannot connect to PostgreSQL', { category: 'unavailable', retryable: true, cause });
  }
  try {
    // CREATE SCHEMA checks the database privilege before IF NOT EXISTS: look first, so a
    // role that owns an existing schema but may not create schemas still starts.
    const rows: unknown[] = await dataSource.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [options.schema]);
    if (rows.length === 0) await dataSource.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(options.schema)}`);
    await dataSource.runMigrations({ transaction: 'each' });
  } catch (cause) {
    await dataSource.destroy();
    if (cause instanceof GatehouseError) throw cause;
    throw new GatehouseError('DATABASE.MIGRATION_FAILED', 'database migrations failed', { category: 'internal', cause });
  }
  return dataSource;
}

/**
 * `value` as JSON text for a `$n::jsonb` parameter. JSON may carry U+0000, PostgreSQL's jsonb and
 * text may not: a record holding one (an agent may write any string the contract allows) would
 * make its projection's write fail on every retry and stall the fold behind it. It is stored as
 * U+FFFD instead; the log keeps the original.
 */
export function jsonbParam(value: unknown): string {
  // JSON escapes NUL as \u0000; after an odd number of backslashes the same letters are literal text, left alone.
  return JSON.stringify(value).replace(/(?<!\\)((?:\\\\)*)\\u0000/g, '$1\\ufffd');
}

/** The schema a migration runs in (the DataSource's configured schema). */
export function migrationSchema(queryRunner: QueryRunner): string {
  const schema = (queryRunner.connection.options as { schema?: string }).schema;
  return quoteIdent(schema ?? 'public');
}

/**
 * DDL of `unapplied_records` in `schema` (already quoted): the records a projection could not
 * apply (they fail their contract), kept with the reason. Every projection has one; the
 * projection writer fills it.
 */
export function unappliedRecordsTableSql(schema: string): string {
  return `
      CREATE TABLE IF NOT EXISTS ${schema}.unapplied_records (
        topic text NOT NULL,
        partition integer NOT NULL,
        "offset" bigint NOT NULL,
        code text NOT NULL,
        reason text NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (topic, partition, "offset")
      )`;
}

/**
 * The first migration of every service: where projections keep the next offset to
 * read per partition, written in the same transaction as the rows they change.
 */
export class CreateProjectionOffsets1764489600000 implements MigrationInterface {
  name = 'CreateProjectionOffsets1764489600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ${schema}.projection_offsets (
        projection text NOT NULL,
        topic text NOT NULL,
        partition integer NOT NULL CHECK (partition >= 0),
        next_offset bigint NOT NULL CHECK (next_offset >= 0),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (projection, topic, partition)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE ${migrationSchema(queryRunner)}.projection_offsets`);
  }
}

/**
 * The last record a projection applied on a partition: its offset and its log append time (ms).
 * Stored beside the offset it precedes, it is the evidence that a log still is the one the rows
 * came from (see `projection/projection-log.ts`).
 */
export interface LogAnchor {
  readonly offset: bigint;
  readonly timeMs: number;
}

/** A partition's stored offset with its anchor (none: no record with a log time applied, or an export's position). */
export interface StoredPosition {
  readonly partition: number;
  readonly nextOffset: bigint;
  readonly anchor?: LogAnchor;
}

/** Reads and writes projection offsets; call `save` inside the projection's transaction. */
export class ProjectionOffsets {
  constructor(
    private readonly schema: string,
    private readonly projection: string,
  ) {
    quoteIdent(schema);
  }

  /** Next offset to read, per partition, for `topic` (empty: replay from offset 0). */
  async load(manager: EntityManager, topic: string): Promise<Record<number, string>> {
    const rows: { partition: number; next_offset: string }[] = await manager.query(
      `SELECT partition, next_offset FROM ${quoteIdent(this.schema)}.projection_offsets WHERE projection = $1 AND topic = $2`,
      [this.projection, topic],
    );
    return Object.fromEntries(rows.map((r) => [r.partition, String(r.next_offset)]));
  }

  /** The stored positions of `topic`, with their anchors. */
  async positions(manager: EntityManager, topic: string): Promise<StoredPosition[]> {
    const rows: { partition: number; next_offset: string; anchor_offset: string | null; anchor_time_ms: string | null }[] = await manager.query(
      `SELECT partition, next_offset::text AS next_offset, anchor_offset::text AS anchor_offset, anchor_time_ms::text AS anchor_time_ms
         FROM ${quoteIdent(this.schema)}.projection_offsets WHERE projection = $1 AND topic = $2 ORDER BY partition`,
      [this.projection, topic],
    );
    return rows.map((r) => ({
      partition: r.partition,
      nextOffset: BigInt(r.next_offset),
      ...(r.anchor_offset === null || r.anchor_time_ms === null ? {} : { anchor: { offset: BigInt(r.anchor_offset), timeMs: Number(r.anchor_time_ms) } }),
    }));
  }

  /**
   * Records that everything before `nextOffset` is applied, and `anchor` as the last record
   * applied on the partition. Neither ever moves backwards.
   */
  async save(manager: EntityManager, topic: string, partition: number, nextOffset: string, anchor?: LogAnchor): Promise<void> {
    await manager.query(
      `INSERT INTO ${quoteIdent(this.schema)}.projection_offsets AS o (projection, topic, partition, next_offset, anchor_offset, anchor_time_ms)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (projection, topic, partition)
       DO UPDATE SET next_offset = GREATEST(o.next_offset, EXCLUDED.next_offset), updated_at = now(),
         anchor_offset = CASE WHEN EXCLUDED.anchor_offset > COALESCE(o.anchor_offset, -1) THEN EXCLUDED.anchor_offset ELSE o.anchor_offset END,
         anchor_time_ms = CASE WHEN EXCLUDED.anchor_offset > COALESCE(o.anchor_offset, -1) THEN EXCLUDED.anchor_time_ms ELSE o.anchor_time_ms END`,
      [this.projection, topic, partition, nextOffset, anchor?.offset.toString() ?? null, anchor?.timeMs ?? null],
    );
  }
}
