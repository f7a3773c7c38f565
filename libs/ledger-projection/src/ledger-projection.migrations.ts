import { migrationSchema, unappliedRecordsTableSql } from '@gatehouse/service-runtime';
import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * The ledger projection: one row per idempotency key and per budget, each the fold's state
 * after the last record that touched it, plus the records the projection could not apply.
 * Offsets live in `projection_offsets`, written in the same transaction.
 */
export class CreateLedgerProjection1764576000000 implements MigrationInterface {
  name = 'CreateLedgerProjection1764576000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ${schema}.keys (
        key text PRIMARY KEY CHECK (key ~ '^[0-9a-f]{64}$'),
        status text NOT NULL CHECK (status IN ('pending', 'completed', 'ambiguous')),
        connector_id text NOT NULL,
        holder text,
        lease_token text,
        -- SQL NULL: no result recorded; JSON null: the result was null.
        result jsonb,
        ambiguous boolean NOT NULL,
        reserved_at timestamptz,
        pending_ttl_ms bigint,
        completed_at timestamptz,
        ambiguous_since timestamptz,
        partition integer NOT NULL,
        last_offset bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE INDEX keys_status_idx ON ${schema}.keys (status) WHERE status <> 'completed'`);
    await queryRunner.query(`
      CREATE TABLE ${schema}.budgets (
        budget_key text PRIMARY KEY CHECK (budget_key ~ '^[0-9a-f]{64}$'),
        algorithm text NOT NULL,
        count integer NOT NULL,
        window_ms bigint NOT NULL,
        window_start timestamptz,
        used integer,
        -- sliding window: the admission log times (epoch ms) still inside the window.
        admitted jsonb,
        partition integer NOT NULL,
        last_offset bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(unappliedRecordsTableSql(schema));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`DROP TABLE ${schema}.unapplied_records`);
    await queryRunner.query(`DROP TABLE ${schema}.budgets`);
    await queryRunner.query(`DROP TABLE ${schema}.keys`);
  }
}
