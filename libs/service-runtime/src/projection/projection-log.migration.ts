import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { migrationSchema } from '../database.js';

/**
 * What ties a projection to the log it was built from (issue 15, attack 8): `projection_logs`
 * names the cluster and topic of each projection's rows and the generation the rows belong to
 * (a new one per rebuild), and each stored offset gets the anchor of the last record applied
 * before it (its offset and log append time). Every service runs it after `CreateProjectionOffsets1764489600000`.
 */
export class ProjectionLogIdentity1765200000000 implements MigrationInterface {
  name = 'ProjectionLogIdentity1765200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`ALTER TABLE ${schema}.projection_offsets ADD COLUMN anchor_offset bigint, ADD COLUMN anchor_time_ms bigint`);
    await queryRunner.query(`
      CREATE TABLE ${schema}.projection_logs (
        projection text NOT NULL,
        topic text NOT NULL,
        cluster_id text NOT NULL,
        generation uuid NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (projection, topic)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`DROP TABLE ${schema}.projection_logs`);
    await queryRunner.query(`ALTER TABLE ${schema}.projection_offsets DROP COLUMN anchor_time_ms, DROP COLUMN anchor_offset`);
  }
}

/**
 * Where a fold service keeps a snapshot of its fold (issue 17: a start reads on from it, not from
 * offset 0): one row per projection and topic, the fold's state as of `offsets` (the next offset
 * to read, per partition), written in the same transaction as the projection rows of those
 * offsets, and dropped with them when the log changes. Every fold service runs it after
 * `ProjectionLogIdentity1765200000000`.
 */
export class FoldSnapshots1766400000000 implements MigrationInterface {
  name = 'FoldSnapshots1766400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ${schema}.fold_snapshots (
        projection text NOT NULL,
        topic text NOT NULL,
        fold text NOT NULL,
        offsets jsonb NOT NULL,
        state text NOT NULL,
        bytes integer NOT NULL,
        written_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (projection, topic)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE ${migrationSchema(queryRunner)}.fold_snapshots`);
  }
}

/**
 * The replica that owns each partition of a scaled-out projection (issue 19): `partition_owners`,
 * with its fencing epoch (a claim raises it; a projection write of another epoch is refused) and
 * the URL requests for the partition's keys are forwarded to. Every service runs it.
 */
export class PartitionOwners1767100000000 implements MigrationInterface {
  name = 'PartitionOwners1767100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE ${migrationSchema(queryRunner)}.partition_owners (
        projection text NOT NULL,
        topic text NOT NULL,
        partition integer NOT NULL,
        epoch bigint NOT NULL,
        owner text NOT NULL,
        url text,
        claimed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (projection, topic, partition)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE ${migrationSchema(queryRunner)}.partition_owners`);
  }
}

/**
 * A snapshot per partition for a scaled-out fold service (issue 19): `part`, -1 for a snapshot of
 * every partition (as one replica keeps it). Every fold service runs it after `FoldSnapshots1766400000000`.
 */
export class PartitionSnapshots1767100000001 implements MigrationInterface {
  name = 'PartitionSnapshots1767100000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`ALTER TABLE ${schema}.fold_snapshots ADD COLUMN part integer NOT NULL DEFAULT -1`);
    await queryRunner.query(`ALTER TABLE ${schema}.fold_snapshots DROP CONSTRAINT fold_snapshots_pkey, ADD PRIMARY KEY (projection, topic, part)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`DELETE FROM ${schema}.fold_snapshots WHERE part <> -1`);
    await queryRunner.query(`ALTER TABLE ${schema}.fold_snapshots DROP CONSTRAINT fold_snapshots_pkey, ADD PRIMARY KEY (projection, topic)`);
    await queryRunner.query(`ALTER TABLE ${schema}.fold_snapshots DROP COLUMN part`);
  }
}
