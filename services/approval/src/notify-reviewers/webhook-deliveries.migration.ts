import { migrationSchema } from '@gatehouse/service-runtime';
import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Reviewer webhook deliveries: one row per (approval, event, target), inserted before the first
 * attempt. The primary key is the claim: whoever inserts it delivers, every other replica (or a
 * restarted one) finds it and sends nothing. A row left `sending` is a delivery a process died
 * during; it is never sent again (at most once).
 */
export class WebhookDeliveries1768000000000 implements MigrationInterface {
  name = 'WebhookDeliveries1768000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ${schema}.webhook_deliveries (
        event_id text NOT NULL,
        approval_id text NOT NULL,
        target text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('requested', 'decided', 'expired')),
        tenant text NOT NULL,
        status text NOT NULL CHECK (status IN ('sending', 'sent', 'failed')),
        attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        -- The last attempt's HTTP status, or why it had none (network, timeout), or why none was made.
        last_status integer,
        last_error text,
        first_at timestamptz NOT NULL DEFAULT now(),
        done_at timestamptz,
        PRIMARY KEY (approval_id, event_id, target)
      )`);
    await queryRunner.query(`CREATE INDEX webhook_deliveries_open_idx ON ${schema}.webhook_deliveries (first_at) WHERE status = 'sending'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE ${migrationSchema(queryRunner)}.webhook_deliveries`);
  }
}
