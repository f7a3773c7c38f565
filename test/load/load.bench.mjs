// Benchmark (issue 19): the load test (guarded-agents.load.spec.ts) as figures, at 8 agent processes
// next to 4 in the same run, on the broker or cluster the environment names (bench.sh runs it on
// the three-node cluster of infra/kafka/cluster.sh). Each setup gets a fresh namespace, database
// and audit-export process (projection into PostgreSQL and the OCSF file feed); its agents, each a
// set of guarded Mastra agents auditing every decision to Kafka through a `required` sink, run
// one common window. Recorded: decisions/s sustained and the guard's p99 latency per call, 8 vs 4.
// Like the spec, a setup whose decisions are not each once in the projection and the SIEM file
// is refused. A plain Node program (test/ has no build) on the built packages:
//   node test/load/load.bench.mjs   (broker or cluster running, packages built; npm run bench)
//   GATEHOUSE_BENCH_SECONDS (window, default 15), GATEHOUSE_BENCH_LOAD_AGENTS (8),
//   GATEHOUSE_BENCH_LOAD_BASELINE_AGENTS (4)
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { topicName } from '@gatehouse/contracts';
import { createKafkaClient, DEFAULT_KAFKA_PRINCIPALS, kafkaConfigFromEnv } from '@gatehouse/kafka';
import { kafkaUserEnv, provisionedNamespace } from '@gatehouse/kafka/testing';
import {
  createTestDatabase,
  ocsfFileIds,
  positiveIntegerEnv,
  startNodeProcess,
  startServiceProcess,
  stopProcesses,
  StoredProgress,
  sumOfEnds,
  topicEnds,
  untilHealthy,
} from '@gatehouse/service-runtime/testing';
import { recordBenchFigure } from '../../tools/bench-results.mjs';
import { agentProblems, deliveryProblems, describeLoad, drainAudit, exportPositions, loadFigures, projectedDecisions, runLoadAgents } from './load-run.mjs';

const SECONDS = positiveIntegerEnv('GATEHOUSE_BENCH_SECONDS', 15);
const AGENTS = positiveIntegerEnv('GATEHOUSE_BENCH_LOAD_AGENTS', 8);
const BASELINE_AGENTS = positiveIntegerEnv('GATEHOUSE_BENCH_LOAD_BASELINE_AGENTS', 4);
const auditExport = path.resolve(import.meta.dirname, '../../services/audit-export/dist/main.js');
const kafka = createKafkaClient(kafkaConfigFromEnv('load-bench'), () => undefined);
// A reader of every tenant for the query API, with a key of this run's.
const readerKey = `rk_${randomUUID()}`;
const readers = JSON.stringify([{ id: 'bench:siem', role: 'siem', tenants: '*', apiKeySha256: createHash('sha256').update(readerKey).digest('hex') }]);
const headers = { authorization: `Bearer ${readerKey}` };

/** Runs `agents` agent processes against a fresh audit-export; returns their figures once every decision is delivered once. */
async function measure(agents) {
  const namespace = await provisionedNamespace(kafka, 'bench-load');
  const topic = topicName('audit', namespace);
  const database = await createTestDatabase('gh_bench');
  const dir = mkdtempSync(path.join(tmpdir(), 'gh-load-bench-'));
  const siemDir = path.join(dir, 'siem');
  const progress = new StoredProgress(database.url, 'audit_export');
  const processes = [];
  try {
    const exporter = await startServiceProcess(auditExport, {
      ...kafkaUserEnv(DEFAULT_KAFKA_PRINCIPALS.auditExport),
      GATEHOUSE_AUDIT_READERS: readers,
      GATEHOUSE_TOPIC_NAMESPACE: namespace,
      GATEHOUSE_DATABASE_URL: database.url,
      GATEHOUSE_EXPORT_FILE_DIR: siemDir,
      GATEHOUSE_EXPORT_FILE_FORMATS: 'ocsf',
      GATEHOUSE_EXPORT_FROM: 'earliest',
    });
    processes.push(exporter);
    await untilHealthy(exporter);
    const agentEnv = { GATEHOUSE_TOPIC_NAMESPACE: namespace, ...kafkaUserEnv(DEFAULT_KAFKA_PRINCIPALS.agent) };
    const start = (script, args) => {
      // The whole output: readiness is a line it prints, and an agent prints little.
      const agent = startNodeProcess(script, args, agentEnv, { keep: 1_000_000 });
      processes.push(agent);
      return agent;
    };
    const { reports, warmUpMs } = await runLoadAgents({ agents, seconds: SECONDS, dir, start });
    const figures = loadFigures(reports);
    const ends = await topicEnds(kafka, topic);
    const onLog = sumOfEnds(ends);
    const drainMs = await drainAudit({ ends, projected: () => progress.positions('decisions', topic), exported: () => exportPositions(exporter.url, headers), timeoutMs: 180_000 });
    const projected = (await projectedDecisions(exporter.url, headers)).map((d) => d.id);
    const problems = [...agentProblems(reports), ...deliveryProblems({ published: figures.published, projected, exported: ocsfFileIds(siemDir), onLog })];
    if (problems.length > 0) throw new Error(`load bench at ${agents} agents: not a figure to record: ${problems.join('; ')}`);
    console.log(describeLoad(figures, { seconds: SECONDS, onLog, warmUpMs, drainMs }));
    return figures;
  } finally {
    await stopProcesses(processes);
    await progress.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const few = await measure(BASELINE_AGENTS);
const many = await measure(AGENTS);
console.log(
  `load bench: ${AGENTS} agents ${many.perSecond.toFixed(1)} decisions/s, p99 ${many.latencyP99.toFixed(1)} ms; ` +
    `${BASELINE_AGENTS} agents ${few.perSecond.toFixed(1)} decisions/s, p99 ${few.latencyP99.toFixed(1)} ms; ` +
    `${(many.perSecond / few.perSecond).toFixed(2)}x the throughput, ${(many.latencyP99 / few.latencyP99).toFixed(2)}x the p99`,
);
const figure = {
  benchmark: 'guarded agents under load',
  source: 'test/load/load.bench.mjs',
  case: `${AGENTS} agent processes for ${SECONDS} s, every decision audited to Kafka (required sink), audit-export projecting and exporting it`,
  baseline: `${BASELINE_AGENTS} agent processes, same run`,
  note: `each setup's decisions checked once in the projection and the OCSF file; ${many.failClosed} calls failed closed at ${AGENTS} agents, ${few.failClosed} at ${BASELINE_AGENTS}`,
};
// Issue 22's targets for the whole suite on this machine, on the figure of the larger setup.
recordBenchFigure({
  ...figure,
  metric: 'decisions/s sustained',
  unit: 'decisions/s',
  value: many.perSecond,
  baselineValue: few.perSecond,
  target: { on: 'value', atLeast: 2000, source: 'issue 22: ≥ 2,000 decisions/s on this machine' },
});
recordBenchFigure({
  ...figure,
  metric: 'guard latency p99 (a call through the guarded agent or connector)',
  unit: 'ms',
  value: many.latencyP99,
  baselineValue: few.latencyP99,
  target: { on: 'value', atMost: 20, source: 'issue 22: p99 guard latency ≤ 20 ms with a required audit sink' },
});
