import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type DataSource } from 'typeorm';
import { CreateProjectionOffsets1764489600000, openServiceDatabase, ProjectionOffsets } from './database.js';
import { ProjectionLogIdentity1765200000000 } from './projection/projection-log.migration.js';

const MIGRATIONS = [CreateProjectionOffsets1764489600000, ProjectionLogIdentity1765200000000];

// One throwaway database per spec file, created and dropped by the superuser.
const adminUrl = process.env['GATEHOUSE_TEST_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `gh_it_${randomBytes(5).toString('hex')}`;
const url = (() => {
  const u = new URL(adminUrl);
  u.pathname = `/${database}`;
  return u.toString();
})();

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

let dataSource: DataSource;

beforeAll(async () => {
  await admin(`CREATE DATABASE ${database}`);
  dataSource = await openServiceDatabase({ url, schema: 'svc', migrations: MIGRATIONS });
});

afterAll(async () => {
  if (dataSource?.isInitialized) await dataSource.destroy();
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
});

describe('service database', () => {
  it('creates the schema and runs the TypeORM migrations on open', async () => {
    const tables: { table_name: string }[] = await dataSource.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'svc' ORDER BY table_name`,
    );
    expect(tables.map((t) => t.table_name)).toEqual(['projection_logs', 'projection_offsets', 'typeorm_migrations']);
    const applied: { name: string }[] = await dataSource.query('SELECT name FROM svc.typeorm_migrations');
    expect(applied.map((m) => m.name)).toEqual(['CreateProjectionOffsets1764489600000', 'ProjectionLogIdentity1765200000000']);
  });

  it('does not run a migration twice when the service restarts', async () => {
    const again = await openServiceDatabase({ url, schema: 'svc', migrations: MIGRATIONS });
    try {
      const applied: { n: string }[] = await again.query('SELECT count(*) AS n FROM svc.typeorm_migrations');
      expect(Number(applied[0]?.n)).toBe(2);
    } finally {
      await again.destroy();
    }
  });

  it('stores projection offsets with the rows in one transaction and never moves them back', async () => {
    const offsets = new ProjectionOffsets('svc', 'approvals-projection');
    await dataSource.transaction(async (manager) => {
      await offsets.save(manager, 'gatehouse.approvals.v1', 0, '42');
      await offsets.save(manager, 'gatehouse.approvals.v1', 2, '7');
    });
    await dataSource.transaction((manager) => offsets.save(manager, 'gatehouse.approvals.v1', 0, '40'));
    expect(await offsets.load(dataSource.manager, 'gatehouse.approvals.v1')).toEqual({ 0: '42', 2: '7' });
  });

  it('keeps the anchor of the newest record applied beside the offset, never moving it back', async () => {
    const offsets = new ProjectionOffsets('svc', 'anchored-projection');
    await dataSource.transaction((manager) => offsets.save(manager, 'gatehouse.ledger.v1', 1, '8', { offset: 7n, timeMs: 1_750_000_000_123 }));
    await dataSource.transaction((manager) => offsets.save(manager, 'gatehouse.ledger.v1', 1, '8', { offset: 3n, timeMs: 1_750_000_000_001 }));
    await dataSource.transaction((manager) => offsets.save(manager, 'gatehouse.ledger.v1', 1, '9'));
    expect(await offsets.positions(dataSource.manager, 'gatehouse.ledger.v1')).toEqual([{ partition: 1, nextOffset: 9n, anchor: { offset: 7n, timeMs: 1_750_000_000_123 } }]);
  });

  it('rolls the offset back with the transaction that failed', async () => {
    const offsets = new ProjectionOffsets('svc', 'rollback-projection');
    await expect(
      dataSource.transaction(async (manager) => {
        await offsets.save(manager, 'gatehouse.audit.v1', 0, '5');
        throw new Error('row write failed');
      }),
    ).rejects.toThrow('row write failed');
    expect(await offsets.load(dataSource.manager, 'gatehouse.audit.v1')).toEqual({});
  });

  it('fails with a typed error when the database cannot be reached', async () => {
    await expect(
      openServiceDatabase({ url: 'postgres://nobody@127.0.0.1:1/none', schema: 'svc', migrations: [] }),
    ).rejects.toMatchObject({ code: 'DATABASE.UNAVAILABLE', retryable: true });
  });
});
