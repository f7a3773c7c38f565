import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';
import { CreateProjectionOffsets1764489600000, migrationSchema, openServiceDatabase } from '../database.js';
import { createTestDatabase, type TestDatabase } from '../testing/index.js';
import { FoldSnapshots1766400000000, ProjectionLogIdentity1765200000000 } from './projection-log.migration.js';
import { type ProjectionSpec } from './projection-spec.js';
import { ProjectionWriter } from './projection-writer.js';

class CreateCounters1700000000000 implements MigrationInterface {
  name = 'CreateCounters1700000000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE ${migrationSchema(runner)}.counters (name text PRIMARY KEY, value integer NOT NULL, partition integer NOT NULL, last_offset bigint NOT NULL)`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`DROP TABLE ${migrationSchema(runner)}.counters`);
  }
}

type State = Map<string, number>;

/** A projection of counters whose upsert notes the commit setting its transaction runs with. */
function counters(commitDurability: 'disk' | 'log' | undefined, seen: string[]): ProjectionSpec<'audit', State, void> {
  return {
    name: `counters-${commitDurability ?? 'default'}`,
    topicId: 'audit',
    fold: { create: () => new Map(), apply: () => undefined },
    migrations: [],
    ...(commitDurability && { commitDurability }),
    tables: [
      {
        table: 'counters',
        idSql: 't.name',
        touched: () => [],
        row: (state, key, touch) => ({ name: key, value: state.get(key) ?? 0, partition: touch.partition, last_offset: touch.offset.toString() }),
        upsert: async (manager, schemaSql, rows) => {
          const [{ setting }] = (await manager.query(`SELECT current_setting('synchronous_commit') AS setting`)) as [{ setting: string }];
          seen.push(setting);
          for (const row of rows as { name: string; value: number; partition: number; last_offset: string }[]) {
            await manager.query(
              `INSERT INTO ${schemaSql}.counters (name, value, partition, last_offset) VALUES ($1, $2, $3, $4)
               ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, partition = EXCLUDED.partition, last_offset = EXCLUDED.last_offset`,
              [row.name, row.value, row.partition, row.last_offset],
            );
          }
        },
      },
    ],
  };
}

let database: TestDatabase;
let dataSource: DataSource;

beforeAll(async () => {
  database = await createTestDatabase();
  dataSource = await openServiceDatabase({
    url: database.url,
    schema: 'svc',
    migrations: [CreateProjectionOffsets1764489600000, ProjectionLogIdentity1765200000000, FoldSnapshots1766400000000, CreateCounters1700000000000],
  });
});

afterAll(async () => {
  if (dataSource?.isInitialized) await dataSource.destroy();
  await database.drop();
});

describe('a projection flush', () => {
  it.each([
    ['waits for the disk by default', undefined, 'on'],
    ["does not wait for the disk when the projection's durability is the log's", 'log', 'off'],
    ['waits for the disk when asked to', 'disk', 'on'],
  ] as const)('%s, and writes the rows with their offsets in one transaction either way', async (_label, durability, expected) => {
    const seen: string[] = [];
    const writer = new ProjectionWriter(dataSource, counters(durability, seen), 'svc', `topic-${durability ?? 'default'}`);
    writer.seed(new Map([['counters', new Map([[`hits-${expected}-${durability ?? 'default'}`, { partition: 0, offset: 4n }]])]]), new Map());
    await writer.flush(new Map([[`hits-${expected}-${durability ?? 'default'}`, 7]]), new Map([[0, 5n]]));
    expect(seen).toEqual([expected]);
    expect(await writer.storedOffsets()).toEqual({ 0: '5' });
    const rows = (await dataSource.query(`SELECT value FROM svc.counters WHERE name = $1`, [`hits-${expected}-${durability ?? 'default'}`])) as { value: number }[];
    expect(rows).toEqual([{ value: 7 }]);
    // The setting was the transaction's own: the pooled connection is back to the server's default.
    const [{ setting }] = (await dataSource.query(`SELECT current_setting('synchronous_commit') AS setting`)) as [{ setting: string }];
    expect(setting).toBe('on');
  });
});
