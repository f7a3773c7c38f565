// The cold-start benchmark every service with a fold runs (issue 17: start-up follows live state,
// not history): the built service as a process (Node, Nest, database, the fold) started against
// 0, 100,000 and 1,000,000 events of history on the broker `npm run bench` starts, each size in a
// namespace and database of its own.
//   1. each history is seeded, and the service's first start folds it all (printed, not a figure);
//   2. past `settleMs`, the live state is added and one start waits until it holds exactly the
//      live state (what settled is forgotten), then stops cleanly: the snapshot the measured
//      starts read on from;
//   3. `starts` rounds of one fresh start per size: median time to /health and resident memory,
//      each against the same start with no history;
//   4. at 100,000 events, once, the start of before: the snapshot deleted (or, for a service that
//      keeps no snapshot, a fresh database), the topic read from offset 0.
// A service that answers /health before it has caught up (`settled`) is timed to caught up.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { type BenchFigure } from '../../../../tools/bench-results.mjs';
import { freePort } from './http.js';
import { createTestDatabase, type TestDatabase } from './index.js';

/** One history size: its namespace and database. */
export interface ColdStartWorld {
  readonly size: number;
  readonly namespace: string;
  readonly database: TestDatabase;
}

/** What the service's status route says of its start. */
export interface ColdStartStatus {
  readonly start: { readonly from: string; readonly records: number };
  /** The state it holds, in `ColdStartBenchOptions.held` units. */
  readonly held: number;
}

export interface ColdStartBenchOptions {
  /** Its table in docs/benchmarks.md, e.g. `approval service cold start`. */
  readonly benchmark: string;
  /** The bench program's source, relative to the repository root. */
  readonly source: string;
  /** Short name in the printed lines, e.g. `approval`. */
  readonly name: string;
  /** The built service's entry point. */
  readonly main: string;
  /**
   * What the measured starts begin from (`ColdStartStatus.start.from`) and
   * what the start of before takes away: the `fold_snapshots` rows of `schema`, or (`fresh-database`)
   * everything, for a service whose start already read on from offsets stored with its rows.
   */
  readonly resumeFrom: { readonly from: 'snapshot'; readonly schema: string } | { readonly from: string; readonly before: 'fresh-database' };
  /** A service whose /health answers before it caught up: the start is timed until this holds (default: /health is enough). */
  readonly settled?: (status: ColdStartStatus) => boolean;
  /** The metric of the measured starts (default `start to /health, from the snapshot`). */
  readonly startMetric?: string;
  /** What the history is, e.g. `settled approval events`: the case reads `N <history> of history, <live>`. */
  readonly history: string;
  /** The live state every size holds, e.g. `50 live requests`. */
  readonly live: string;
  /** What `ColdStartStatus.held` counts, e.g. `approvals held`. */
  readonly held: string;
  /** How much the service holds once only the live state is left. */
  readonly heldLive: number;
  /** How long after the first starts everything seeded is settled past the service's retention, ms. */
  readonly settleMs: number;
  readonly sizes?: readonly number[];
  readonly starts?: number;
  /** The service's environment on `world` (port, namespace and database are set here). */
  env(world: ColdStartWorld): Record<string, string>;
  /** Creates the topics of `namespace` and appends `size` events of history to them. */
  seed(namespace: string, size: number): Promise<void>;
  /** Appends the live state (after the history has settled). */
  addLive(namespace: string): Promise<void>;
  /** Reads the status route at `base`. */
  status(base: string): Promise<ColdStartStatus>;
  /** Records one figure (`recordBenchFigure`). */
  record(figure: BenchFigure): void;
}

interface Started {
  readonly child: ChildProcess;
  readonly base: string;
  readonly startMs: number;
  readonly rssMb: number;
  readonly status: ColdStartStatus;
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the benchmark (see the file's head) and records its figures. */
export async function runColdStartBench(options: ColdStartBenchOptions): Promise<void> {
  const sizes = options.sizes ?? (process.env['GATEHOUSE_BENCH_COLD_SIZES'] ?? '0,100000,1000000').split(',').map(Number);
  const starts = options.starts ?? Number(process.env['GATEHOUSE_BENCH_COLD_STARTS'] ?? 3);
  const say = (line: string) => console.log(`${options.name} cold start: ${line}`);
  const resume = options.resumeFrom;
  const startMetric = options.startMetric ?? 'start to /health, from the snapshot';

  const start = async (world: ColdStartWorld): Promise<Started> => {
    const settled = options.settled ?? (() => true);
    const port = await freePort();
    const began = process.hrtime.bigint();
    const child = spawn(process.execPath, [options.main], {
      env: { ...process.env, ...options.env(world), GATEHOUSE_PORT: String(port), GATEHOUSE_TOPIC_NAMESPACE: world.namespace, GATEHOUSE_DATABASE_URL: world.database.url },
      stdio: 'ignore',
    });
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i += 1) {
      try {
        if ((await fetch(`${base}/health`)).status === 200) break;
      } catch {
        // starting
      }
      // The first start on a long history folds all of it: minutes at a million events.
      if (child.exitCode !== null || i > 60_000) throw new Error(`${options.name} service did not start`);
      await sleep(20);
    }
    let status = await options.status(base);
    for (let i = 0; !settled(status); i += 1) {
      if (child.exitCode !== null || i > 60_000) throw new Error(`${options.name} service did not catch up`);
      await sleep(20);
      status = await options.status(base);
    }
    const startMs = Number(process.hrtime.bigint() - began) / 1e6;
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
    return { child, base, startMs, rssMb: rssKb / 1024, status };
  };
  /** SIGTERM and wait: a clean stop stores the snapshot the next start reads on from. */
  const stop = async (started: Started): Promise<void> => {
    const exited = new Promise<void>((resolve) => started.child.once('exit', () => resolve()));
    started.child.kill('SIGTERM');
    await exited;
  };

  const worlds: ColdStartWorld[] = [];
  try {
    for (const size of sizes) {
      const namespace = `bench-${randomBytes(4).toString('hex')}`;
      const world = { size, namespace, database: await createTestDatabase('gh_bench_cold') };
      worlds.push(world);
      const seeding = Date.now();
      await options.seed(namespace, size);
      const seeded = Date.now() - seeding;
      const first = await start(world);
      await stop(first);
      say(`${size.toLocaleString('en')} events seeded in ${(seeded / 1000).toFixed(1)} s; the first start folded them in ${(first.startMs / 1000).toFixed(1)} s (${first.status.start.records} records)`);
    }
    await sleep(options.settleMs);
    for (const world of worlds) {
      await options.addLive(world.namespace);
      // This start forgets what settled and reads the live state; its clean stop stores the snapshot.
      const started = await start(world);
      for (let waited = 0; (await options.status(started.base)).held !== options.heldLive; waited += 100) {
        if (waited > 300_000) throw new Error(`${options.name}: the service at ${world.size} events did not come to hold only the live state`);
        await sleep(100);
      }
      await stop(started);
    }
    const runs = new Map<number, Started[]>();
    for (let round = 0; round < starts; round += 1) {
      for (const world of worlds) {
        const started = await start(world);
        await stop(started);
        runs.set(world.size, [...(runs.get(world.size) ?? []), started]);
      }
    }
    const figure = (size: number) => {
      const all = runs.get(size) ?? [];
      return {
        startMs: median(all.map((r) => r.startMs)),
        rssMb: median(all.map((r) => r.rssMb)),
        records: median(all.map((r) => r.status.start.records)),
        held: median(all.map((r) => r.status.held)),
        from: all[0]?.status.start.from ?? '?',
      };
    };
    const empty = figure(sizes[0] ?? 0);
    const caseOf = (size: number) => `${size.toLocaleString('en')} ${options.history} of history, ${options.live}`;
    for (const size of sizes) {
      const f = figure(size);
      say(`${size.toLocaleString('en')} events: start ${f.startMs.toFixed(0)} ms (from ${f.from}, ${f.records} records read, ${f.held} ${options.held}), rss ${f.rssMb.toFixed(0)} MB`);
      if (f.from !== resume.from || f.held !== options.heldLive) throw new Error(`${options.name}: a measured start at ${size} events began from ${f.from} holding ${f.held}, not from ${resume.from} holding ${options.heldLive}`);
      const base = { benchmark: options.benchmark, source: options.source, case: caseOf(size) };
      options.record({
        ...base,
        metric: startMetric,
        unit: 'ms',
        value: f.startMs,
        baseline: 'the same start with no history (0 events)',
        baselineValue: empty.startMs,
        target: { on: 'ratio', atMost: 2, source: 'issue 17: no start at 1,000,000 events more than 2x its start at 0' },
        note: `median of ${starts} starts, each a fresh process; ${f.records} records read after the ${resume.from}, ${f.held} ${options.held}`,
      });
      options.record({
        ...base,
        metric: 'resident memory after start',
        unit: 'MB',
        value: f.rssMb,
        baseline: 'the same process after a start with no history (0 events)',
        baselineValue: empty.rssMb,
        target: { on: 'ratio', atMost: 1.5, source: 'issue 17: memory after 1,000,000 settled events within 1.5x of an empty start' },
      });
    }
    // The start of before, once, at the middle size: no snapshot, the topic read from offset 0.
    const middle = worlds.find((w) => w.size === 100_000);
    if (middle) {
      let before = middle;
      if ('schema' in resume) {
        const client = new pg.Client({ connectionString: middle.database.url });
        await client.connect();
        try {
          await client.query(`DELETE FROM "${resume.schema}".fold_snapshots`);
        } finally {
          await client.end();
        }
      } else {
        before = { ...middle, database: await createTestDatabase('gh_bench_cold') };
        worlds.push(before);
      }
      const full = await start(before);
      await stop(full);
      const f = figure(100_000);
      const without = 'schema' in resume ? 'snapshot deleted' : 'a fresh database';
      say(`100,000 events from offset 0 (${without}): ${full.startMs.toFixed(0)} ms (${full.status.start.records} records read)`);
      options.record({
        benchmark: options.benchmark,
        source: options.source,
        case: caseOf(100_000),
        metric: startMetric,
        unit: 'ms',
        value: f.startMs,
        baseline: 'schema' in resume ? 'the start of before: the same service without its snapshot, reading from offset 0' : 'a rebuild: the same service on a fresh database, reading from offset 0',
        baselineValue: full.startMs,
        note: `${full.status.start.records} records read from offset 0, ${f.records} after the ${resume.from}`,
      });
    }
  } finally {
    for (const world of worlds) await world.database.drop().catch(() => undefined);
  }
}
