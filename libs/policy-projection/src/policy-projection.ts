import { type Keyring } from '@gatehouse/contracts';
import { applyPolicyEvent, createPolicyBundlesState, type PolicyBundlesState, type PolicyVerdict, versionKey } from '@gatehouse/policies';
import { mapStateCodec } from '@gatehouse/kafka';
import { CreateProjectionOffsets1764489600000, FoldSnapshots1766400000000, jsonbParam, migrationSchema, PartitionOwners1767100000000, PartitionSnapshots1767100000001, ProjectionLogIdentity1765200000000, type ProjectionSpec, unappliedRecordsTableSql } from '@gatehouse/service-runtime';
import { type EntityManager, type MigrationInterface, type QueryRunner } from 'typeorm';

/** One row per trusted version of every policy set; versions are immutable once published. */
export class CreatePolicyProjection1764748800000 implements MigrationInterface {
  name = 'CreatePolicyProjection1764748800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ${schema}.policy_versions (
        version_key text PRIMARY KEY,
        policy_set_id text NOT NULL,
        revision integer NOT NULL CHECK (revision >= 1),
        digest text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
        published_by text NOT NULL,
        bundle jsonb NOT NULL,
        key_id text NOT NULL,
        published_at timestamptz NOT NULL,
        partition integer NOT NULL,
        last_offset bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (policy_set_id, revision)
      )`);
    await queryRunner.query(unappliedRecordsTableSql(schema));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const schema = migrationSchema(queryRunner);
    await queryRunner.query(`DROP TABLE ${schema}.unapplied_records`);
    await queryRunner.query(`DROP TABLE ${schema}.policy_versions`);
  }
}

export const POLICY_MIGRATIONS = [CreateProjectionOffsets1764489600000, CreatePolicyProjection1764748800000, ProjectionLogIdentity1765200000000, FoldSnapshots1766400000000, PartitionOwners1767100000000, PartitionSnapshots1767100000001] as const;

/** The policy fold's snapshot version: change it with any change to the fold's rules or state. */
export const POLICIES_SNAPSHOT_VERSION = 'policies@1';

// A version's content never changes; its position is the last record that touched it (a replayed
// publication of the same revision too), so the row does not depend on where batches ended.
async function upsertVersions(manager: EntityManager, schemaSql: string, rows: readonly object[]): Promise<void> {
  await manager.query(
    `INSERT INTO ${schemaSql}.policy_versions
       (version_key, policy_set_id, revision, digest, published_by, bundle, key_id, published_at, partition, last_offset, updated_at)
     SELECT r.version_key, r.policy_set_id, r.revision, r.digest, r.published_by, r.bundle, r.key_id,
            to_timestamp(r.published_at / 1000.0), r.partition, r.last_offset, now()
       FROM jsonb_to_recordset($1::jsonb) AS r(version_key text, policy_set_id text, revision integer, digest text,
            published_by text, bundle jsonb, key_id text, published_at bigint, partition integer, last_offset bigint)
     ON CONFLICT (version_key) DO UPDATE SET partition = EXCLUDED.partition, last_offset = EXCLUDED.last_offset, updated_at = now()`,
    [jsonbParam(rows)],
  );
}

/** The policy service's projection of `gatehouse.policies.v1`: every version the fold trusts. */
export const policyProjection = (keyring: Keyring): ProjectionSpec<'policies', PolicyBundlesState, PolicyVerdict> => ({
  name: 'policies',
  topicId: 'policies',
  fold: {
    create: () => createPolicyBundlesState(keyring),
    apply: applyPolicyEvent,
    snapshot: mapStateCodec({ version: POLICIES_SNAPSHOT_VERSION, create: () => createPolicyBundlesState(keyring), maps: ['current', 'versions'], counters: ['untrusted'] }),
  },
  migrations: POLICY_MIGRATIONS,
  tables: [
    {
      table: 'policy_versions',
      idSql: 'version_key',
      touched: ({ event }) => [versionKey(event.payload.policySetId, event.payload.revision)],
      row: (state, key, touch) => {
        const v = state.versions.get(key);
        return v === undefined
          ? undefined
          : { version_key: key, policy_set_id: v.policySetId, revision: v.revision, digest: v.digest, published_by: v.publishedBy, bundle: v.bundle, key_id: v.keyId, published_at: v.publishedAt, partition: touch.partition, last_offset: touch.offset.toString() };
      },
      upsert: upsertVersions,
    },
  ],
});
