// Cold start of the approval service (the built service as a process: Node, Nest, database, the
// fold) against 0, 100,000 and 1,000,000 approval events of settled history, on the broker
// bench.sh starts (issue 17: start-up follows live state, not history). History is approvals, each
// asked for by the agent and decided by the service (a signed request and a signed decision), up to
// 20,000 distinct ones and then their records over again, all settled before the measured starts;
// every size also holds the same 50 live requests.
// The service's first start on each history folds it all and stores its snapshot (printed, not the
// figure); each measured start is a fresh process reading on from that snapshot. Beside it, at
// 100,000 events, the start of before: the same service with its snapshot deleted, reading from
// offset 0. The fold keeps settled approvals for GATEHOUSE_APPROVAL_RETAIN_MS (2 s here, so the
// bench can wait past it; 7 days by default).
//   node services/approval/dist/bench/cold-start.bench.js   (broker and PostgreSQL running)
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { testRequest } from '@gatehouse/approvals/testing';
import { ApprovalDecidedV2, createEvent, signEvent, trustedEntryOf } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, testSigningKey } from '@gatehouse/contracts/testing';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv, provisionTopics } from '@gatehouse/kafka';
import { createTestDatabase, freePort } from '@gatehouse/service-runtime/testing';
import { appendRepeated } from '@gatehouse/kafka/testing';
import pg from 'pg';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { reviewersJson, testReviewer } from '../testing/approval-app.js';

const SIZES = (process.env['GATEHOUSE_BENCH_COLD_SIZES'] ?? '0,100000,1000000').split(',').map(Number);
const STARTS = Number(process.env['GATEHOUSE_BENCH_COLD_STARTS'] ?? 3);
const LIVE = 50;
const RETAIN_MS = 2_000;
/** Distinct approvals in a history; the rest of it repeats their records. */
const DISTINCT = 20_000;
const here = path.dirname(fileURLToPath(import.meta.url));
const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

const kafka = createKafkaClient(kafkaConfigFromEnv('approval-cold-start-bench'), () => undefined);
const serviceKey = testSigningKey('approval', 'approval-cold-bench');
const secrets = mkdtempSync(path.join(tmpdir(), 'gatehouse-bench-'));
const keyFile = path.join(secrets, 'approval.key');
writeFileSync(keyFile, serviceKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
const reviewer = testReviewer('user:bench');

interface World {
  readonly size: number;
  readonly namespace: string;
  readonly database: { readonly url: string; drop(): Promise<void> };
}

/**
 * `count` events of settled history: distinct requests and the service's decisions on them (up to
 * `DISTINCT` approvals), then those records over again (duplicates the fold reads and refuses).
 */
async function seed(namespace: string, count: number): Promise<void> {
  const pairs = Array.from({ length: Math.min(DISTINCT, count / 2) }, () => testRequest({ inputSchema: {} }).event).flatMap((request) => [
    request,
    signEvent(
      createEvent(
        ApprovalDecidedV2,
        { source: 'service:approval', tenant: 'acme', subject: request.payload.approvalId, causationId: request.id },
        { approvalId: request.payload.approvalId, verdict: 'deny', reviewer: { id: 'user:bench', role: 'approver', kind: 'human' } },
      ),
      serviceKey,
    ),
  ]);
  await appendRepeated(kafka, 'approvals', namespace, pairs, count);
}

interface Started {
  readonly child: ChildProcess;
  readonly startMs: number;
  readonly rssMb: number;
  readonly start: { from: string; records: number };
  readonly approvals: number;
}

/** Starts the built service on `world`, until it answers /health; its resident memory and how it started. */
async function startService(world: World): Promise<Started> {
  const port = await freePort();
  const began = process.hrtime.bigint();
  const child = spawn(process.execPath, [path.resolve(here, '../main.js')], {
    env: {
      ...process.env,
      GATEHOUSE_PORT: String(port),
      GATEHOUSE_TOPIC_NAMESPACE: world.namespace,
      GATEHOUSE_DATABASE_URL: world.database.url,
      GATEHOUSE_APPROVAL_REVIEWERS: reviewersJson([reviewer]),
      GATEHOUSE_SIGNING_KEY_FILE: keyFile,
      GATEHOUSE_SIGNING_KEY_ID: serviceKey.keyId,
      GATEHOUSE_TRUSTED_KEYS: JSON.stringify([trustedEntryOf(serviceKey), trustedEntryOf(TEST_AGENT_KEY)]),
      GATEHOUSE_APPROVAL_RETAIN_MS: String(RETAIN_MS),
    },
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
    if (child.exitCode !== null || i > 60_000) throw new Error('approval service did not start');
    await new Promise((r) => setTimeout(r, 20));
  }
  const startMs = Number(process.hrtime.bigint() - began) / 1e6;
  const status = (await (await fetch(`${base}/v1/approvals-status`)).json()) as { start: { from: string; records: number }; approvals: number };
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
  return { child, startMs, rssMb: rssKb / 1024, start: status.start, approvals: status.approvals };
}

/** SIGTERM and wait: a clean stop stores the snapshot the next start reads on from. */
async function stopService(started: Started): Promise<void> {
  const exited = new Promise<void>((resolve) => started.child.once('exit', () => resolve()));
  started.child.kill('SIGTERM');
  await exited;
}

async function dropSnapshot(world: World): Promise<void> {
  const client = new pg.Client({ connectionString: world.database.url });
  await client.connect();
  try {
    await client.query('DELETE FROM approval.fold_snapshots');
  } finally {
    await client.end();
  }
}

const worlds: World[] = [];
try {
  for (const size of SIZES) {
    const namespace = `bench-${randomBytes(4).toString('hex')}`;
    await provisionTopics(kafka, { namespace });
    const world = { size, namespace, database: await createTestDatabase('gh_bench_cold') };
    worlds.push(world);
    const seeding = Date.now();
    await seed(namespace, size);
    const seeded = Date.now() - seeding;
    // The first start folds the whole history once and stores its snapshot.
    const first = await startService(world);
    await stopService(first);
    console.log(`approval cold start: ${size.toLocaleString('en')} events seeded in ${(seeded / 1000).toFixed(1)} s; the first start folded them in ${(first.startMs / 1000).toFixed(1)} s (${first.start.records} records)`);
  }
  // Past the retention of every settled approval, then the live requests on every history.
  await new Promise((r) => setTimeout(r, RETAIN_MS + 500));
  for (const world of worlds) {
    const producer = await EventProducer.connect(kafka, { namespace: world.namespace });
    await producer.publishMany('approvals', Array.from({ length: LIVE }, () => testRequest({ inputSchema: {}, deadlineMs: 3_600_000 }).event));
    await producer.close();
    // One start reads the live requests and stores a snapshot with them: the measured starts begin there.
    await stopService(await startService(world));
  }
  const runs = new Map<number, Started[]>();
  for (let round = 0; round < STARTS; round += 1) {
    for (const world of worlds) {
      const started = await startService(world);
      await stopService(started);
      runs.set(world.size, [...(runs.get(world.size) ?? []), started]);
    }
  }
  const figure = (size: number) => {
    const all = runs.get(size) ?? [];
    return { startMs: median(all.map((r) => r.startMs)), rssMb: median(all.map((r) => r.rssMb)), records: median(all.map((r) => r.start.records)), approvals: median(all.map((r) => r.approvals)), from: all[0]?.start.from ?? '?' };
  };
  const empty = figure(SIZES[0] ?? 0);
  const source = 'services/approval/src/bench/cold-start.bench.ts';
  for (const size of SIZES) {
    const f = figure(size);
    console.log(`approval cold start: ${size.toLocaleString('en')} events: start ${f.startMs.toFixed(0)} ms (from ${f.from}, ${f.records} records read, ${f.approvals} approvals held), rss ${f.rssMb.toFixed(0)} MB`);
    const base = { benchmark: 'approval service cold start', source, case: `${size.toLocaleString('en')} settled approval events of history, ${LIVE} live requests` };
    recordBenchFigure({
      ...base,
      metric: 'start to /health, from the snapshot',
      unit: 'ms',
      value: f.startMs,
      baseline: 'the same start with no history (0 events)',
      baselineValue: empty.startMs,
      target: { on: 'ratio', atMost: 2, source: 'issue 17: no start at 1,000,000 events more than 2x its start at 0' },
      note: `median of ${STARTS} starts, each a fresh process; ${f.records} records read after the snapshot, ${f.approvals} approvals held`,
    });
    recordBenchFigure({
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
    await dropSnapshot(middle);
    const full = await startService(middle);
    await stopService(full);
    const f = figure(100_000);
    console.log(`approval cold start: 100,000 events from offset 0 (snapshot deleted): ${full.startMs.toFixed(0)} ms (${full.start.records} records read)`);
    recordBenchFigure({
      benchmark: 'approval service cold start',
      source,
      case: `100,000 settled approval events of history, ${LIVE} live requests`,
      metric: 'start to /health, from the snapshot',
      unit: 'ms',
      value: f.startMs,
      baseline: 'the start of before: the same service without its snapshot, reading from offset 0',
      baselineValue: full.startMs,
      note: `${full.start.records} records read from offset 0, ${f.records} after the snapshot`,
    });
  }
} finally {
  for (const world of worlds) await world.database.drop().catch(() => undefined);
}
