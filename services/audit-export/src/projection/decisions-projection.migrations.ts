import { migrationSchema, unappliedRecordsTableSql } from '@gatehouse/service-runtime';
import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * The decisions projection: one row per DecisionRecorded, holding only the fields the query
 * API may return (see `DECISION_FIELDS`); `attributes` are never stored.
 */
export class CreateDecisionsProjection1765000000000 implements MigrationInterface {
  name = 'CreateDecisionsProjection1765000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const s = migrationSchema(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ${s}.decisions (
        event_id uuid PRIMARY KEY,
        decision_id uuid NOT NULL,
        tenant text NOT NULL,
        subject text NOT NULL,
        source text NOT NULL,
        event_time timestamptz NOT NULL,
        log_time timestamptz NOT NULL,
        partition integer NOT NULL,
        "offset" bigint NOT NULL,
        boundary text NOT NULL,
        outcome text NOT NULL,
        code text NOT NULL,
        reason text NOT NULL,
        actor_id text,
        actor_role text,
        actor_kind text,
        agent_id text,
        run_id text,
        tool_id text,
        policy_bundle text,
        policy_revision integer,
        policy_rule text,
        correlation_id text,
        causation_id text,
        entry_path text,
        thread_id text,
        redacted_paths jsonb NOT NULL DEFAULT '[]',
        duration_ms double precision,
        chain_producer text,
        chain_seq integer,
        chain_prev_hash text,
        UNIQUE (partition, "offset")
      )`);
    await queryRunner.query(`CREATE INDEX decisions_log_time ON ${s}.decisions (log_time DESC, event_id DESC)`);
    await queryRunner.query(`CREATE INDEX decisions_tenant_time ON ${s}.decisions (tenant, log_time DESC, event_id DESC)`);
    await queryRunner.query(`CREATE INDEX decisions_run ON ${s}.decisions (run_id, log_time, partition, "offset")`);
    await queryRunner.query(unappliedRecordsTableSql(s));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const s = migrationSchema(queryRunner);
    await queryRunner.query(`DROP TABLE ${s}.unapplied_records`);
    await queryRunner.query(`DROP TABLE ${s}.decisions`);
  }
}

/**
 * Positions are unique per topic, not per schema: one schema may project several topics
 * (namespaced environments), whose partition/offset pairs overlap. Without the topic in the
 * key a row from a second topic was silently dropped as a conflict.
 */
export class DecisionsPositionPerTopic1765100000000 implements MigrationInterface {
  name = 'DecisionsPositionPerTopic1765100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const s = migrationSchema(queryRunner);
    await queryRunner.query(`ALTER TABLE ${s}.decisions ADD COLUMN topic text NOT NULL DEFAULT ''`);
    await queryRunner.query(`ALTER TABLE ${s}.decisions DROP CONSTRAINT decisions_partition_offset_key`);
    await queryRunner.query(`ALTER TABLE ${s}.decisions ADD CONSTRAINT decisions_topic_partition_offset_key UNIQUE (topic, partition, "offset")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const s = migrationSchema(queryRunner);
    await queryRunner.query(`ALTER TABLE ${s}.decisions DROP CONSTRAINT decisions_topic_partition_offset_key`);
    await queryRunner.query(`ALTER TABLE ${s}.decisions ADD CONSTRAINT decisions_partition_offset_key UNIQUE (partition, "offset")`);
    await queryRunner.query(`ALTER TABLE ${s}.decisions DROP COLUMN topic`);
  }
}

/**
 * Anchors for decisions positions stored before anchors were kept (`ProjectionLogIdentity`): the
 * newest decision row of each topic and partition is a record the projection applied, with its
 * offset and log time, so an upgraded service can show that its rows are of the broker's log
 * (and adopt it) instead of refusing them as unverified.
 */
export class DecisionsLogAnchors1765300000000 implements MigrationInterface {
  name = 'DecisionsLogAnchors1765300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const s = migrationSchema(queryRunner);
    await queryRunner.query(`
      UPDATE ${s}.projection_offsets o
         SET anchor_offset = d."offset", anchor_time_ms = round(extract(epoch FROM d.log_time) * 1000)::bigint
        FROM (SELECT DISTINCT ON (topic, partition) topic, partition, "offset", log_time FROM ${s}.decisions ORDER BY topic, partition, "offset" DESC) d
       WHERE o.projection = 'decisions' AND o.topic = d.topic AND o.partition = d.partition AND o.anchor_offset IS NULL AND d."offset" < o.next_offset`);
  }

  async down(): Promise<void> {
    // The anchors are evidence, not structure: nothing to undo.
  }
}
