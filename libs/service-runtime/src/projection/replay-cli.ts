import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { GatehouseError, topicName, type TopicId } from '@gatehouse/contracts';
import { createKafkaClient, logStarts } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { DataSource } from 'typeorm';
import { ENV, serviceConfigFromEnv } from '../config.js';
import { ProjectionOffsets } from '../database.js';
import { type ServiceDescriptor } from '../services.js';
import { type LogChange, type ProjectedLog, projectionLogChange, specLog } from './projection-log.js';
import { type ProjectionSpec } from './projection-spec.js';
import { compareProjections, type ProjectionComparison, type ProjectionDifference, rebuildProjection } from './rebuild.js';
import { checkStoredSnapshot } from './snapshot-check.js';

const ATTEMPTS = 5;
const CATCH_UP_MS = 15_000;

async function openLive(url: string, passwordFile: string | undefined): Promise<DataSource> {
  const password = passwordFile ? readFileSync(passwordFile, 'utf8').trim() : undefined;
  const live = new DataSource({ type: 'postgres', url, ...(password === undefined ? {} : { password }), logging: ['error'] });
  await live.initialize();
  return live;
}

function printOtherLog(print: ReplayCliOptions['print'], schema: string, change: LogChange): number {
  const summary = `the live projection was built from another log than the broker has now (${change}); restart the service, which rebuilds it from offset 0`;
  print({ equal: false, summary, live: schema, logChange: change });
  return 1;
}

async function liveLogChange(kafka: Kafka, live: DataSource, schema: string, target: ProjectedLog): Promise<LogChange | undefined> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await projectionLogChange(live.manager, admin, schema, target);
  } finally {
    await admin.disconnect();
  }
}

/**
 * A live row the replay did not rebuild is aged out only when the last record that touched it,
 * by the row's own position, lies below what its partition still holds: those records are gone,
 * so nothing can rebuild the row. Any other missing row stays a difference: a row whose records
 * are still there and that the replay did not build is one no record made.
 */
function agedOutRow(difference: ProjectionDifference, starts: ReadonlyMap<number, bigint>): boolean {
  if (difference.issue !== 'missing-in-rebuilt' || difference.at === undefined) return false;
  const start = starts.get(difference.at.partition);
  return start !== undefined && /^\d+$/.test(difference.at.offset) && BigInt(difference.at.offset) < start;
}

function behind(live: Record<number, string>, rebuilt: Record<number, string>): boolean {
  return Object.entries(rebuilt).some(([p, o]) => BigInt(live[Number(p)] ?? '0') < BigInt(o));
}

export interface ReplayCliOptions {
  readonly argv: readonly string[];
  /** Where each result line (one JSON object) goes. */
  readonly print: (line: Record<string, unknown>) => void;
  /** The service's environment (GATEHOUSE_DATABASE_URL, GATEHOUSE_TOPIC_NAMESPACE, ...). */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * `replay [--compare] [--schema <name>]`: rebuilds a service's projection by replaying its topic
 * from offset 0 into a separate schema and, with --compare, says whether it equals the live one
 * (never equal when the live rows were built from another log than the broker has now), and that
 * the fold snapshot the service stored is the fold of the log up to its offsets.
 * Resolves to the exit status: 0 rebuilt (and equal), 1 not equal; throws GatehouseError on misuse.
 */
export async function runReplayCli<T extends TopicId, S, V>(service: ServiceDescriptor, spec: ProjectionSpec<T, S, V>, options: ReplayCliOptions): Promise<number> {
  const prefix = spec.name.toUpperCase().replace(/[^A-Z]/g, '_');
  let values: { compare: boolean; schema: string };
  try {
    ({ values } = parseArgs({
      args: [...options.argv],
      options: { compare: { type: 'boolean', default: false }, schema: { type: 'string', default: `${service.schema}_replay` } },
      strict: true,
    }));
  } catch {
    throw new GatehouseError(`${prefix}.REPLAY_USAGE`, 'usage: replay [--compare] [--schema <name>]', { category: 'validation' });
  }
  const env = options.env ?? process.env;
  const config = serviceConfigFromEnv(service, env);
  const target = values.schema;
  if (target === config.database.schema) {
    throw new GatehouseError(`${prefix}.REPLAY_TARGET_IS_LIVE`, 'refusing to rebuild into the live schema: stop the service, empty its projection tables and start it (it replays on start)', {
      category: 'validation',
    });
  }
  const passwordFile = env[ENV.databasePasswordFile];
  const kafka = createKafkaClient(config.kafka);
  const database = { url: config.database.url, passwordFile };
  const topic = topicName(spec.topicId, config.topicNamespace);

  let live: DataSource | undefined;
  try {
    if (values.compare) {
      live = await openLive(config.database.url, passwordFile);
      // Rows of another log are not compared with this one's: the service rebuilds them on start.
      const change = await liveLogChange(kafka, live, config.database.schema, specLog(spec, topic));
      if (change) return printOtherLog(options.print, config.database.schema, change);
    }
    for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
      const report = await rebuildProjection(spec, { kafka, namespace: config.topicNamespace, database, schema: target });
      if (!values.compare || !live) {
        options.print({ rebuilt: target, records: report.records, unapplied: report.unapplied, nextOffsets: report.nextOffsets });
        return 0;
      }
      // The live projection commits per batch: give it a moment to reach the rebuilt offsets.
      const offsets = new ProjectionOffsets(config.database.schema, spec.name);
      const deadline = Date.now() + CATCH_UP_MS;
      while (behind(await offsets.load(live.manager, topic), report.nextOffsets) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
      }
      const comparison: ProjectionComparison = await compareProjections(spec, live.manager, { liveSchema: config.database.schema, rebuiltSchema: target, namespace: config.topicNamespace });
      if (!comparison.sameOffsets && attempt < ATTEMPTS) continue; // the live one moved on: rebuild to its new end
      // Once retention has deleted the oldest records, the live rows only they built (settled long
      // ago) have nothing left to rebuild them from: counted as aged out, not as differences (and
      // listed, so an operator sees which). Every row the replay did build must still equal the live one.
      const starts = await logStarts(kafka, topic);
      const aged = comparison.differences.filter((d) => agedOutRow(d, starts));
      const agedOut = aged.length;
      const differences = comparison.differences.filter((d) => !agedOutRow(d, starts));
      // The state a restart begins from: the snapshot must be the fold of the log up to its offsets.
      const snapshot = await checkStoredSnapshot(spec, live.manager, { kafka, schema: config.database.schema, namespace: config.topicNamespace });
      const equal = differences.length === 0 && snapshot.status !== 'different';
      const counts = Object.entries(comparison.rows).map(([table, n]) => `${n} ${table}`).join(', ');
      options.print({
        equal,
        summary: equal
          ? `the projection rebuilt by replay equals the live one (${counts}${agedOut > 0 ? `; ${agedOut} live row(s) older than what the topic still holds` : ''}; stored snapshot: ${snapshot.status})`
          : differences.length === 0 && comparison.sameOffsets
            ? "the stored fold snapshot is not the fold of the log up to its offsets: a restart would begin from it (delete its fold_snapshots row and restart the service, which replays from offset 0)"
            : comparison.sameOffsets
              ? `the projection rebuilt by replay differs from the live one in ${differences.length} row(s)`
              : 'the live projection kept moving; compare again when writes pause',
        live: config.database.schema,
        rebuilt: target,
        records: report.records,
        liveOffsets: comparison.liveOffsets,
        rebuiltOffsets: comparison.rebuiltOffsets,
        rows: comparison.rows,
        agedOut,
        agedOutRows: aged.slice(0, 50).map(({ table, id, at }) => ({ table, id, at })),
        snapshot,
        // Rows of projections at different offsets differ by design: list them only when comparable.
        differences: comparison.sameOffsets ? differences.slice(0, 50) : [],
      });
      return equal ? 0 : 1;
    }
    return 1;
  } finally {
    await live?.destroy();
  }
}

/** Runs `runReplayCli` as a process's main: prints lines to stdout, a coded error to stderr, sets the exit code (2 on failure). */
export async function replayCliMain<T extends TopicId, S, V>(service: ServiceDescriptor, spec: ProjectionSpec<T, S, V>, argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const prefix = spec.name.toUpperCase().replace(/[^A-Z]/g, '_');
  try {
    process.exitCode = await runReplayCli(service, spec, { argv, print: (line) => process.stdout.write(`${JSON.stringify(line)}\n`) });
  } catch (error) {
    const code = error instanceof GatehouseError ? error.code : `${prefix}.REPLAY_FAILED`;
    const message = error instanceof GatehouseError ? error.message : 'replay failed';
    process.stderr.write(`${JSON.stringify({ level: 'error', code, message })}\n`);
    process.exitCode = 2;
  }
}
