import { migrationSchema, unappliedRecordsTableSql } from '@gatehouse/service-runtime';
import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * The approval projection: one row per requested approval, the fold's state after the last
 * record about it (its full history included), plus the records the projection could not
 * apply. Offsets live in `projection_offsets`, written in the same transaction.
 */
export class CreateApprovalProjection1764662400000 implements MigrationInterface {
  name = 'CreateApprovalProjection1764662400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ${schema}.approvals (
        approval_id text PRIMARY KEY CHECK (approval_id ~ '^appr_[0-9a-f]{64}$'),
        status text NOT NULL CHECK (status IN ('pending', 'approved', 'approved-with-edits', 'denied', 'expired', 'cancelled')),
        tenant text NOT NULL,
        connector_id text NOT NULL,
        execution_id text NOT NULL,
        arguments_hash text NOT NULL,
        requester_id text NOT NULL,
        requester jsonb NOT NULL,
        reason text NOT NULL,
        arguments jsonb NOT NULL,
        redacted_paths jsonb NOT NULL,
        input_schema jsonb,
        tool_description text,
        -- SQL NULL: no preview; JSON null: the preview was null.
        dry_run_preview jsonb,
        requested_at timestamptz NOT NULL,
        deadline timestamptz NOT NULL,
        settled_at timestamptz,
        -- The reviewer of a decision, or who withdrew a cancelled request.
        settled_by jsonb,
        comment text,
        edited_arguments jsonb,
        expiry_cause text,
        -- Under a quorum: its rule, and the approvals counted so far.
        quorum jsonb,
        votes jsonb NOT NULL,
        history jsonb NOT NULL,
        partition integer NOT NULL,
        last_offset bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE INDEX approvals_pending_idx ON ${schema}.approvals (requested_at, approval_id) WHERE status = 'pending'`);
    await queryRunner.query(`CREATE INDEX approvals_listing_idx ON ${schema}.approvals (tenant, connector_id, status, requested_at)`);
    await queryRunner.query(unappliedRecordsTableSql(schema));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`DROP TABLE ${schema}.unapplied_records`);
    await queryRunner.query(`DROP TABLE ${schema}.approvals`);
  }
}
