import { migrationSchema } from '@gatehouse/service-runtime';
import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Audit you can verify per source (issue 15, attack 6): each decision keeps its digest and its
 * verdict (`verified`, `unverified`, `forbidden`: see `audit-sources.ts` in contracts), and the
 * checkpoints read so far are kept with the digests they list, so a record and its checkpoint
 * meet whichever is read first. Rows projected before this migration have no digest: no
 * checkpoint can cover them, and they stay `unverified` (their log predates checkpoints).
 */
export class DecisionsSourceVerification1765400000000 implements MigrationInterface {
  name = 'DecisionsSourceVerification1765400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const s = migrationSchema(queryRunner);
    await queryRunner.query(`ALTER TABLE ${s}.decisions
      ADD COLUMN digest text,
      ADD COLUMN verification text NOT NULL DEFAULT 'unverified',
      ADD COLUMN verification_reason text,
      ADD COLUMN verified_by text,
      ADD COLUMN verification_checkpoint uuid`);
    await queryRunner.query(`CREATE INDEX decisions_digest ON ${s}.decisions (topic, digest)`);
    await queryRunner.query(`
      CREATE TABLE ${s}.audit_checkpoints (
        event_id uuid PRIMARY KEY,
        topic text NOT NULL,
        partition integer NOT NULL,
        "offset" bigint NOT NULL,
        log_time timestamptz NOT NULL,
        producer text NOT NULL,
        source text NOT NULL,
        -- The signature as checked when the checkpoint was projected; key_id names the key.
        trusted boolean NOT NULL,
        untrusted_reason text,
        key_id text
      )`);
    await queryRunner.query(`
      CREATE TABLE ${s}.audit_checkpoint_digests (
        topic text NOT NULL,
        digest text NOT NULL,
        checkpoint_id uuid NOT NULL REFERENCES ${s}.audit_checkpoints (event_id),
        PRIMARY KEY (topic, digest, checkpoint_id)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const s = migrationSchema(queryRunner);
    await queryRunner.query(`DROP TABLE ${s}.audit_checkpoint_digests`);
    await queryRunner.query(`DROP TABLE ${s}.audit_checkpoints`);
    await queryRunner.query(`DROP INDEX ${s}.decisions_digest`);
    await queryRunner.query(`ALTER TABLE ${s}.decisions DROP COLUMN digest, DROP COLUMN verification, DROP COLUMN verification_reason, DROP COLUMN verified_by, DROP COLUMN verification_checkpoint`);
  }
}
