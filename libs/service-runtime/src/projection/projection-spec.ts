import { type TopicId } from '@gatehouse/contracts';
import { type DecodedRecord, type Fold, type FoldCheckpoints } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { type EntityManager } from 'typeorm';
import { type MigrationClass } from '../database.js';

/** Where a row was last touched: rows are written only past the stored offsets. */
export interface Touch {
  readonly partition: number;
  readonly offset: bigint;
}

/**
 * One table of a projection: a row per key, each the fold's state after the last record that touched it.
 * Every table keeps that record's position in `partition` (integer) and `last_offset` (bigint) columns:
 * the replay's compare uses them to tell a row whose records retention deleted from one no record built.
 */
export interface ProjectedTable<T extends TopicId, S> {
  /** Table name inside the service's schema (a lower-case identifier). */
  readonly table: string;
  /** SQL naming a row's primary key over the table alias `t`, as text (compared across schemas). */
  readonly idSql: string;
  /** The keys of this table `record` touches. */
  touched(record: DecodedRecord<T>): readonly string[];
  /** The row for `key` as `state` has it now; undefined: the row must not exist. */
  row(state: S, key: string, touch: Touch): object | undefined;
  /** Inserts or replaces `rows` (the values `row` made). */
  upsert(manager: EntityManager, schemaSql: string, rows: readonly object[]): Promise<void>;
  /** Deletes the rows of `keys`; without it, a key with no row is left alone. */
  remove?(manager: EntityManager, schemaSql: string, keys: readonly string[]): Promise<void>;
}

/**
 * Everything a service's PostgreSQL projection of one topic is: the fold, the tables it writes,
 * and the migrations that make them. The service, its rebuild and its replay CLI share it.
 * Every projection also has `projection_offsets` and `unapplied_records` in its schema.
 */
export interface ProjectionSpec<T extends TopicId, S, V> {
  /** The projection's name in `projection_offsets`. */
  readonly name: string;
  readonly topicId: T;
  readonly fold: Fold<T, S, V>;
  readonly tables: readonly ProjectedTable<T, S>[];
  readonly migrations: readonly MigrationClass[];
  /**
   * For a topic that deletes records the fold needs (the ledger's): the checkpoints in the log
   * that a start, and a rebuild, over a log whose beginning is gone begin from.
   */
  readonly checkpoints?: (kafka: Kafka, namespace: string | undefined) => FoldCheckpoints<S>;
  /**
   * `log`: a flush's commit does not wait for PostgreSQL to flush its WAL to disk
   * (`synchronous_commit = off` for that transaction), which takes a disk flush off every answer
   * that waits for the projection. Only for a projection whose rows are the fold of the log and
   * nothing else: a crash may then lose the last commits, rows and offsets together (never one
   * without the other), and the next start replays the log from the offsets that did reach disk,
   * so nothing is lost that the log holds. Not for a projection whose flush leads to effects
   * outside the database (a feed written, a message sent on the strength of a row). `disk` (the
   * default) waits for the flush.
   */
  readonly commitDurability?: 'disk' | 'log';
}

/** A checked schema name, quoted, safe to put in SQL. */
export function schemaIdent(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new TypeError('schema names are lower-case identifiers');
  return `"${schema}"`;
}
