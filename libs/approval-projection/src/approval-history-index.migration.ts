import { migrationSchema } from '@gatehouse/service-runtime';
import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * The reviewers' history (`GET /v1/approvals?order=settled`, the inbox's decided list) pages by
 * (settled_at, approval_id), newest first: this index serves each page without sorting every
 * settled row (the listing index above orders by request time).
 */
export class ApprovalHistoryIndex1767300000000 implements MigrationInterface {
  name = 'ApprovalHistoryIndex1767300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`CREATE INDEX approvals_settled_idx ON ${schema}.approvals (settled_at DESC, approval_id DESC) WHERE settled_at IS NOT NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`DROP INDEX ${schema}.approvals_settled_idx`);
  }
}
