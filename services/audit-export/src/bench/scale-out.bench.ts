// Benchmark (issue 19): the audit export's throughput with two replicas sharing the audit topic's
// partitions next to one replica alone, measured in one run on the same broker or cluster (bench.sh
// runs it on the three-node cluster of infra/kafka/cluster.sh), as built processes doing the same
// work: a backlog of decisions, each covered by a checkpoint its agent signed (so the projection
// judges every record's source, as it does in production), projected into PostgreSQL and exported
// to the OCSF file feed. Each setup starts on a fresh database and an empty feed directory over the
// same backlog, and is timed from the processes' start until the projection and the export both
// stored positions at the end of every partition: decisions/s = decisions / that time (the replicas
// start one after another, each once the one before answers /health). The time the replicas took to
// claim every partition is printed beside it, with the rate after that, so the start-up in the
// figure is visible. A run whose feed does not hold every decision once is refused.
//   node services/audit-export/dist/bench/scale-out.bench.js   (broker or cluster running; npm run bench)
//   GATEHOUSE_BENCH_AUDIT_EVENTS (decisions in the backlog, default 40,000)
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createEvent, DecisionRecordedV1, SIGNING_ENV, topicName, trustedEntryOf } from '@gatehouse/contracts';
import { testAgentKey } from '@gatehouse/contracts/testing';
import { AuditCheckpointer, createKafkaClient, DEFAULT_KAFKA_PRINCIPALS, EventProducer, kafkaConfigFromEnv, provisionAcls, provisionTopics } from '@gatehouse/kafka';
import { kafkaUserEnv } from '@gatehouse/kafka/testing';
import {
  createTestDatabase,
  duplicateIds,
  ocsfFileIds,
  positiveIntegerEnv,
  reached,
  type ServiceReplica,
  startReplica,
  stopProcesses,
  StoredProgress,
  sumOfEnds,
  topicEnds,
  untilHealthy,
  untilPartitionsHeld,
} from '@gatehouse/service-runtime/testing';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { PROJECTION_NAME } from '../projection/decisions-projection.js';

const EVENTS = positiveIntegerEnv('GATEHOUSE_BENCH_AUDIT_EVENTS', 40_000);
/** Agent sinks writing the backlog, each its own chain and checkpoints (as many guard processes would). */
const STREAMS = 50;
/** Runs the decisions belong to: the record key, so enough of them spread evenly over the partitions. */
const RUNS = 1_000;
const EXPORT_NAME = 'bench';
const SCHEMA = 'audit_export';
const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../main.js');
const kafka = createKafkaClient(kafkaConfigFromEnv('audit-scale-bench'), () => undefined);
const agentKey = testAgentKey('agent:bench', ['bench']);
const SOURCE = 'guard:bench';

/** Appends `EVENTS` decisions to the audit topic of `namespace`, and the checkpoints their streams sign over them. */
async function writeBacklog(namespace: string): Promise<void> {
  const producer = await EventProducer.connect(kafka, { namespace });
  const streams = Array.from(
    { length: STREAMS },
    (_, s) => new AuditCheckpointer({ key: agentKey, source: SOURCE, producer: `${SOURCE}/${s}`, append: (checkpoint) => producer.publish('audit', checkpoint) }),
  );
  try {
    for (let start = 0; start < EVENTS; start += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, EVENTS - start) }, (_, i) => {
        const n = start + i;
        const run = `run-${n % RUNS}`;
        return createEvent(
          DecisionRecordedV1,
          { source: SOURCE, tenant: 'bench', subject: run, chain: { producer: `${SOURCE}/${n % STREAMS}`, seq: Math.floor(n / STREAMS) + 1, prevHash: null } },
          { decisionId: randomUUID(), boundary: 'tool', outcome: n % 4 === 0 ? 'denied' : 'allowed', code: 'TOOL.CHECKED', reason: 'tool call checked', runId: run, toolId: 'http.fetch', redactedPaths: [] },
        );
      });
      await producer.publishMany('audit', batch);
      // Covered once acknowledged, as a guard's sink does: every 100 records a stream signs a checkpoint.
      batch.forEach((event, i) => (streams[(start + i) % STREAMS] as AuditCheckpointer).covered(event));
    }
    for (const stream of streams) await stream.close();
  } finally {
    await producer.close();
  }
}

/** One setup's run: how long until both stored the ends, and what the feed and the projection hold. */
interface Run {
  readonly seconds: number;
  readonly takenSeconds: number;
  /** Records (decisions and checkpoints) per second from the moment every partition was claimed. */
  readonly afterTakenPerSecond: number;
  /** The most records of the log one replica had to read (its partitions' share), for the ideal ratio. */
  readonly largestShare: bigint;
}

const sum = (positions: Readonly<Record<string, string>>) => Object.values(positions).reduce((total, p) => total + BigInt(p), 0n);

/** Starts `count` replicas on the backlog of `namespace` and times them until both reached `ends`. */
async function measure(count: number, namespace: string, ends: ReadonlyMap<number, bigint>): Promise<Run> {
  const topic = topicName('audit', namespace);
  const database = await createTestDatabase('gh_bench');
  const dir = await mkdtemp(path.join(tmpdir(), 'gh-audit-scale-'));
  const progress = new StoredProgress(database.url, SCHEMA);
  const env = {
    ...kafkaUserEnv(DEFAULT_KAFKA_PRINCIPALS.auditExport),
    [SIGNING_ENV.trustedKeysFile]: '',
    [SIGNING_ENV.trustedKeys]: JSON.stringify([trustedEntryOf(agentKey)]),
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_EXPORT_NAME: EXPORT_NAME,
    GATEHOUSE_EXPORT_FROM: 'earliest',
    GATEHOUSE_EXPORT_FILE_DIR: dir,
    GATEHOUSE_EXPORT_FILE_FORMATS: 'ocsf',
  };
  const replicas: ServiceReplica[] = [];
  const positions = () => Promise.all([progress.positions(PROJECTION_NAME, topic), progress.positions(`export:${EXPORT_NAME}`, topic)]);
  try {
    const began = performance.now();
    // One after another, each once it answers /health (its migrations done), as an operator's
    // rolling start does: replicas first started together on an empty database race each other's
    // migrations (the service runtime takes no lock for them) and one of them exits.
    for (let i = 0; i < count; i += 1) {
      const replica = await startReplica(main, `audit-${i + 1}`, env);
      replicas.push(replica);
      await untilHealthy(replica);
    }
    for (const projection of [PROJECTION_NAME, `export:${EXPORT_NAME}`]) {
      await untilPartitionsHeld(replicas, ends.size, async (replica) => (await progress.owners(projection, topic)).get(replica.name) ?? 0);
    }
    const taken = performance.now();
    const doneWhenTaken = (await positions()).map(sum).reduce((a, b) => (a < b ? a : b));
    for (let at = performance.now(); ; at = performance.now()) {
      const [projected, exported] = await positions();
      if (reached(projected, ends) && reached(exported, ends)) break;
      const gone = replicas.find((r) => r.child.exitCode !== null || r.child.signalCode !== null);
      if (gone) throw new Error(`replica ${gone.name} exited: ${gone.output()}`);
      if (at - began > 900_000) throw new Error(`the replicas did not reach the end in 15 minutes: ${replicas.map((r) => r.output()).join('\n---\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const drained = performance.now();
    await checkDelivered(dir, progress);
    return {
      seconds: (drained - began) / 1_000,
      takenSeconds: (taken - began) / 1_000,
      afterTakenPerSecond: Number(sumOfEnds(ends) - doneWhenTaken) / ((drained - taken) / 1_000),
      largestShare: await largestShare(progress, topic, ends),
    };
  } finally {
    await stopProcesses(replicas);
    await progress.close();
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Refuses a run whose OCSF feed or projection does not hold every decision of the backlog exactly once. */
async function checkDelivered(dir: string, progress: StoredProgress): Promise<void> {
  const ids = ocsfFileIds(dir);
  const distinct = new Set(ids).size;
  const twice = Object.keys(duplicateIds(ids)).length;
  const [rows] = await progress.query<{ rows: number; distinct: number; verified: number }>(
    `SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS distinct, count(*) FILTER (WHERE verification = 'verified')::int AS verified FROM ${SCHEMA}.decisions`,
  );
  console.log(`audit scale-out: feed ${ids.length} lines, ${distinct} distinct ids (${twice} twice); projection ${rows?.rows} rows, ${rows?.verified} verified by their agent's checkpoint`);
  if (ids.length !== EVENTS || distinct !== EVENTS || rows?.rows !== EVENTS || rows.distinct !== EVENTS) {
    throw new Error(`the export did not deliver each of the ${EVENTS} decisions once: not a figure to record`);
  }
}

/** The records of the partitions the busiest replica last claimed for the projection: no split can do better than total / this. */
async function largestShare(progress: StoredProgress, topic: string, ends: ReadonlyMap<number, bigint>): Promise<bigint> {
  const rows = await progress.query<{ owner: string; partition: number }>(`SELECT owner, partition FROM ${SCHEMA}.partition_owners WHERE projection = $1 AND topic = $2`, [PROJECTION_NAME, topic]);
  const shares = new Map<string, bigint>();
  for (const { owner, partition } of rows) shares.set(owner, (shares.get(owner) ?? 0n) + (ends.get(partition) ?? 0n));
  return [...shares.values()].reduce((a, b) => (a > b ? a : b), 0n);
}

const namespace = `bench-${randomBytes(4).toString('hex')}`;
await provisionTopics(kafka, { namespace, topics: ['audit'] });
await provisionAcls(kafka, { namespace });
const writing = performance.now();
await writeBacklog(namespace);
const ends = await topicEnds(kafka, topicName('audit', namespace));
const total = sumOfEnds(ends);
console.log(`audit scale-out: ${EVENTS} decisions and their checkpoints, ${total} records on ${ends.size} partitions (${[...ends.values()].join('/')}), written in ${((performance.now() - writing) / 1_000).toFixed(1)} s`);
const rate = (run: Run) => EVENTS / run.seconds;
const line = (label: string, run: Run) =>
  `audit scale-out: ${label} ${rate(run).toFixed(0)} decisions/s (${run.seconds.toFixed(1)} s from start to every partition's end; every partition claimed after ${run.takenSeconds.toFixed(1)} s, ` +
  `then ${run.afterTakenPerSecond.toFixed(0)} records/s; the busiest replica's partitions held ${run.largestShare} of ${total} records)`;
const one = await measure(1, namespace, ends);
console.log(line('one replica', one));
if (one.seconds < 10) console.log(`audit scale-out: one replica took under 10 s: start-up weighs in the figure; raise GATEHOUSE_BENCH_AUDIT_EVENTS`);
const two = await measure(2, namespace, ends);
console.log(line('two replicas', two));
console.log(`audit scale-out: two replicas ${(rate(two) / rate(one)).toFixed(2)}x one; the split allowed at most ${(Number(total) / Number(two.largestShare)).toFixed(2)}x`);
recordBenchFigure({
  benchmark: 'audit export scale-out',
  source: 'services/audit-export/src/bench/scale-out.bench.ts',
  case: `a backlog of ${EVENTS.toLocaleString('en')} signed decisions on ${ends.size} partitions, projected into PostgreSQL and exported to the OCSF file feed, timed from start until both stored every partition's end`,
  metric: 'throughput, two replicas',
  unit: 'decisions/s',
  value: rate(two),
  baseline: 'one replica alone on the same backlog, same run',
  baselineValue: rate(one),
  target: { on: 'ratio', atLeast: 1.7, source: 'issue 19: two replicas at least 1.7x one' },
  note: `start-up included: every partition claimed after ${one.takenSeconds.toFixed(1)} s (one replica) and ${two.takenSeconds.toFixed(1)} s (two); with ${ends.size} partitions the busiest of two replicas held ${two.largestShare} of ${total} records, so the split allowed at most ${(Number(total) / Number(two.largestShare)).toFixed(2)}x`,
});
