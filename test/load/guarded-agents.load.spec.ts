import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { topicName } from '@gatehouse/contracts';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { percentile } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import pg from 'pg';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { agentKafkaEnv } from '../src/support/kafka-auth.js';
import { killAll, ROOT, type Started, startNode, startService } from '../src/support/processes.js';

// Load, bounded and on loopback: N agent processes, each a set of guarded Mastra agents and
// connectors auditing to Kafka in `required` mode, drive decisions for a fixed time against the
// real broker; the built audit-export service projects them into PostgreSQL and exports them to
// an OCSF file. Afterwards every decision a guard reported as published must be in the
// projection (as the query API pages it) and in the SIEM file exactly once by id. The figures
// are printed, never asserted: the machine is shared and they are noisy.
// GATEHOUSE_LOAD_AGENTS and GATEHOUSE_LOAD_SECONDS lengthen it; the defaults keep `npm test` short.
function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}
const AGENTS = positiveInteger('GATEHOUSE_LOAD_AGENTS', 4);
const SECONDS = positiveInteger('GATEHOUSE_LOAD_SECONDS', 10);

const agentScript = path.join(ROOT, 'test/load/fixtures/load-agent.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-load-'));
const siemDir = path.join(dir, 'siem');
let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let exporter: Started & { url: string };
const reader = auditReader();

/** What one agent process wrote at its end (see the fixture). */
interface AgentReport {
  readonly agent: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly published: readonly string[];
  readonly measuredDecisions: number;
  readonly auditFailures: number;
  readonly latenciesMs: readonly number[];
  readonly auditWriteMs: readonly number[];
  readonly outcomes: Readonly<Record<string, number>>;
}

beforeAll(async () => {
  kafka = testKafka('load');
  namespace = await provisionedNamespace(kafka, 'load');
  database = await throwawayDatabase('gh_load');
  exporter = await startService('audit-export', {
    ...reader.env,
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_EXPORT_FILE_DIR: siemDir,
    GATEHOUSE_EXPORT_FILE_FORMATS: 'ocsf',
    GATEHOUSE_EXPORT_FROM: 'earliest',
  });
}, 120_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

function startAgent(index: number): Started {
  return startNode(agentScript, [JSON.stringify({ index, goFile: path.join(dir, 'go.json'), out: path.join(dir, `agent-${index}.json`) })], {
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    ...agentKafkaEnv(),
  });
}

function failedAgent(agent: Started): Error {
  return new Error(`agent exited ${agent.child.exitCode ?? agent.child.signalCode}: ${agent.output().slice(-2000)}`);
}

/** Per partition, the audit topic's end offset: the log holds exactly this many records. */
async function auditEnds(): Promise<Map<number, bigint>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topicName('audit', namespace));
    return new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
  } finally {
    await admin.disconnect();
  }
}

function reached(positions: Readonly<Record<string, string>>, ends: Map<number, bigint>): boolean {
  return [...ends].every(([partition, end]) => BigInt(positions[String(partition)] ?? '0') >= end);
}

/** The projection's stored positions on the audit topic, from its offsets table. */
async function projectionPositions(): Promise<Record<string, string>> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ partition: number; next_offset: string }>(
      `SELECT partition, next_offset::text FROM audit_export.projection_offsets WHERE projection = 'decisions' AND topic = $1`,
      [topicName('audit', namespace)],
    );
    return Object.fromEntries(rows.map((r) => [String(r.partition), r.next_offset]));
  } catch {
    return {}; // not migrated yet
  } finally {
    await client.end();
  }
}

/** Every decision the query API lists (id and outcome), page by page, unfiltered. */
async function projectedDecisions(): Promise<{ id: string; outcome: string }[]> {
  const decisions: { id: string; outcome: string }[] = [];
  let cursor: string | undefined;
  do {
    const query = new URLSearchParams({ limit: '500', ...(cursor ? { cursor } : {}) });
    const res = await fetch(`${exporter.url}/v1/decisions?${query.toString()}`, { headers: reader.headers });
    if (res.status !== 200) throw new Error(`query API answered ${res.status}`);
    const page = (await res.json()) as { items: { id: string; outcome: string }[]; nextCursor: string | null };
    decisions.push(...page.items.map(({ id, outcome }) => ({ id, outcome })));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return decisions;
}

/** Every `metadata.uid` of the OCSF files, one per line. Read only once the export acknowledged the end. */
function siemIds(): string[] {
  return readdirSync(siemDir)
    .filter((f) => f.startsWith('ocsf-') && f.endsWith('.jsonl'))
    .flatMap((f) => readFileSync(path.join(siemDir, f), 'utf8').split('\n'))
    .filter((line) => line.length > 0)
    .map((line) => (JSON.parse(line) as { metadata: { uid: string } }).metadata.uid);
}

/** Ids seen more than once, with their counts. */
function duplicates(ids: readonly string[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return Object.fromEntries([...counts].filter(([, n]) => n > 1));
}

const ms = (value: number) => `${value.toFixed(1)} ms`;

describe(`load: ${AGENTS} guarded agent processes for ${SECONDS} s`, () => {
  it(
    'puts every decision a guard reported as published into the projection and the SIEM file exactly once by id',
    async () => {
      const wall = Date.now();
      const agents = Array.from({ length: AGENTS }, (_, index) => startAgent(index));
      // Each agent warms up (every scenario once), then waits for the common start.
      const ready = () => agents.filter((a) => a.output().includes('LOAD_AGENT_READY')).length;
      const deadline = Date.now() + 60_000 + AGENTS * 10_000;
      while (ready() < AGENTS) {
        const gone = agents.find((a) => a.child.exitCode !== null || a.child.signalCode !== null);
        if (gone) throw failedAgent(gone);
        if (Date.now() > deadline) {
          const slow = agents.find((a) => !a.output().includes('LOAD_AGENT_READY'));
          throw new Error(`only ${ready()} of ${AGENTS} agent processes warmed up in time; one still warming up said: ${slow?.output().slice(-500) || 'nothing'}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      const warmUpMs = Date.now() - wall;
      writeFileSync(path.join(dir, 'go.tmp'), JSON.stringify({ endAt: Date.now() + SECONDS * 1_000 }));
      renameSync(path.join(dir, 'go.tmp'), path.join(dir, 'go.json'));
      const codes = await Promise.all(agents.map((a) => a.exited()));
      agents.forEach((agent, index) => {
        if (codes[index] !== 0) throw failedAgent(agent);
      });
      const reports = agents.map((_, index) => JSON.parse(readFileSync(path.join(dir, `agent-${index}.json`), 'utf8')) as AgentReport);
      const published = reports.flatMap((r) => r.published);

      // The guards decided what each scenario must decide, under load too; a call whose audit
      // write failed was refused (fail-closed), which is right but counted.
      const outcomes: Record<string, number> = {};
      for (const report of reports) for (const [key, n] of Object.entries(report.outcomes)) outcomes[key] = (outcomes[key] ?? 0) + n;
      expect(Object.keys(outcomes).filter((key) => key.endsWith(':unexpected'))).toEqual([]);
      expect(reports.every((r) => r.measuredDecisions > 0)).toBe(true);

      // Nothing reaches the audit topic after the agents closed their producers: its end offsets
      // now bound everything either consumer will ever see. Wait until both passed them (the
      // export stores a position only after the file sink fsynced the batch).
      const ends = await auditEnds();
      const onLog = [...ends.values()].reduce((sum, end) => sum + end, 0n);
      const drain = Date.now();
      await waitFor(async () => (reached(await projectionPositions(), ends) ? true : undefined), { what: 'the projection to reach the end of the audit topic', timeoutMs: 60_000, intervalMs: 200 });
      await waitFor(
        async () => {
          const [status] = (await (await fetch(`${exporter.url}/v1/exports`, { headers: reader.headers })).json()) as { positions: Record<string, string> }[];
          return status && reached(status.positions, ends) ? true : undefined;
        },
        { what: 'the SIEM export to reach the end of the audit topic', timeoutMs: 60_000, intervalMs: 200 },
      );
      const drainMs = Date.now() - drain;

      const decisions = await projectedDecisions();
      const projected = decisions.map((d) => d.id);
      const exported = siemIds();
      // The mix really mixes: the guards allowed and denied under load.
      expect([...new Set(decisions.map((d) => d.outcome))]).toEqual(expect.arrayContaining(['allowed', 'denied']));
      // Exactly once: no id twice in either, and every record of the log is one row and one
      // line (the log holds only this run's decisions, since the namespace is fresh).
      expect(duplicates(projected)).toEqual({});
      expect(duplicates(exported)).toEqual({});
      expect(BigInt(projected.length)).toBe(onLog);
      expect(BigInt(exported.length)).toBe(onLog);
      const projectedSet = new Set(projected);
      const exportedSet = new Set(exported);
      expect(published.filter((id) => !projectedSet.has(id))).toEqual([]);
      expect(published.filter((id) => !exportedSet.has(id))).toEqual([]);
      expect(exported.filter((id) => !projectedSet.has(id))).toEqual([]);

      const measured = reports.reduce((sum, r) => sum + r.measuredDecisions, 0);
      const windowS = (Math.max(...reports.map((r) => r.endedAt)) - Math.min(...reports.map((r) => r.startedAt))) / 1_000;
      const latencies = reports.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
      const writes = reports.flatMap((r) => r.auditWriteMs).sort((a, b) => a - b);
      const failClosed = Object.entries(outcomes).filter(([key]) => key.endsWith(':fail-closed')).reduce((sum, [, n]) => sum + n, 0);
      console.log(
        `load: ${AGENTS} agents x ${SECONDS} s (window ${windowS.toFixed(1)} s): ${measured} decisions, ${(measured / windowS).toFixed(1)} decisions/s sustained; ` +
          `guard latency p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))} over ${latencies.length} calls; ` +
          `audit write (linger + ack) p50 ${ms(percentile(writes, 50))}, p99 ${ms(percentile(writes, 99))} per decision; ` +
          `${published.length} published incl. warm-up, ${onLog} on the log, each once in the projection and the SIEM file; ${failClosed} failed closed; ` +
          `warm-up ${(warmUpMs / 1_000).toFixed(1)} s, drain ${drainMs} ms`,
      );
    },
    // Start-up of the agent processes dominates the short form; the rest scales with SECONDS.
    180_000 + AGENTS * 10_000 + SECONDS * 2_000,
  );
});
