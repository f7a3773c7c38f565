#!/usr/bin/env node
// Rebuilds the ledger projection by replaying gatehouse.ledger.v1 from offset 0 into a separate
// schema and, with --compare, says whether it equals the live projection.
//   node services/idempotency-ledger/dist/cli/replay.js [--compare] [--schema ledger_replay]
// Reads the service's environment (GATEHOUSE_DATABASE_URL, GATEHOUSE_TOPIC_NAMESPACE, ...).
// Exit status: 0 rebuilt (and equal), 1 not equal, 2 failed.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { GatehouseError, topicName } from '@gatehouse/contracts';
import { createKafkaClient } from '@gatehouse/kafka';
import { ENV, ProjectionOffsets, serviceConfigFromEnv, SERVICES } from '@gatehouse/service-runtime';
import { DataSource } from 'typeorm';
import { PROJECTION_NAME } from '../projection/ledger-projection.js';
import { compareProjections, type ProjectionComparison, rebuildProjection } from '../projection/rebuild-projection.js';

const ATTEMPTS = 5;
const CATCH_UP_MS = 15_000;

function print(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function behind(live: Record<number, string>, rebuilt: Record<number, string>): boolean {
  return Object.entries(rebuilt).some(([p, o]) => BigInt(live[Number(p)] ?? '0') < BigInt(o));
}

async function main(): Promise<number> {
  let values: { compare: boolean; schema: string };
  try {
    ({ values } = parseArgs({
      options: { compare: { type: 'boolean', default: false }, schema: { type: 'string', default: 'ledger_replay' } },
      strict: true,
    }));
  } catch {
    throw new GatehouseError('LEDGER.REPLAY_USAGE', 'usage: replay.js [--compare] [--schema <name>]', { category: 'validation' });
  }
  const config = serviceConfigFromEnv(SERVICES['idempotency-ledger']);
  const target = values.schema;
  if (target === config.database.schema) {
    throw new GatehouseError('LEDGER.REPLAY_TARGET_IS_LIVE', 'refusing to rebuild into the live schema: stop the service, empty its projection tables and start it (it replays on start)', {
      category: 'validation',
    });
  }
  const passwordFile = process.env[ENV.databasePasswordFile];
  const kafka = createKafkaClient(config.kafka);
  const database = { url: config.database.url, passwordFile };
  const topic = topicName('ledger', config.topicNamespace);

  let live: DataSource | undefined;
  try {
    for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
      const report = await rebuildProjection({ kafka, namespace: config.topicNamespace, database, schema: target });
      if (!values.compare) {
        print({ rebuilt: target, records: report.records, unapplied: report.unapplied, nextOffsets: report.nextOffsets });
        return 0;
      }
      if (!live) {
        const password = passwordFile ? readFileSync(passwordFile, 'utf8').trim() : undefined;
        live = new DataSource({ type: 'postgres', url: config.database.url, ...(password === undefined ? {} : { password }), logging: ['error'] });
        await live.initialize();
      }
      // The live projection commits per batch: give it a moment to reach the rebuilt offsets.
      const offsets = new ProjectionOffsets(config.database.schema, PROJECTION_NAME);
      const deadline = Date.now() + CATCH_UP_MS;
      while (behind(await offsets.load(live.manager, topic), report.nextOffsets) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
      }
      const comparison: ProjectionComparison = await compareProjections(live.manager, { liveSchema: config.database.schema, rebuiltSchema: target, namespace: config.topicNamespace });
      if (!comparison.sameOffsets && attempt < ATTEMPTS) continue; // the live one moved on: rebuild to its new end
      print({
        equal: comparison.equal,
        summary: comparison.equal
          ? `the projection rebuilt by replay equals the live one (${comparison.rows.keys} keys, ${comparison.rows.budgets} budgets)`
          : comparison.sameOffsets
            ? `the projection rebuilt by replay differs from the live one in ${comparison.differences.length} row(s)`
            : 'the live projection kept moving; compare again when writes pause',
        live: config.database.schema,
        rebuilt: target,
        records: report.records,
        liveOffsets: comparison.liveOffsets,
        rebuiltOffsets: comparison.rebuiltOffsets,
        rows: comparison.rows,
        // Rows of projections at different offsets differ by design: list them only when comparable.
        differences: comparison.sameOffsets ? comparison.differences.slice(0, 50) : [],
      });
      return comparison.equal ? 0 : 1;
    }
    return 1;
  } finally {
    await live?.destroy();
  }
}

try {
  process.exitCode = await main();
} catch (error) {
  const code = error instanceof GatehouseError ? error.code : 'LEDGER.REPLAY_FAILED';
  const message = error instanceof GatehouseError ? error.message : 'replay failed';
  process.stderr.write(`${JSON.stringify({ level: 'error', code, message })}\n`);
  process.exitCode = 2;
}
