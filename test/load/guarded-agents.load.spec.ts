import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { topicName } from '@gatehouse/contracts';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';
import { ocsfFileIds, positiveIntegerEnv, StoredProgress, sumOfEnds, topicEnds } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { agentKafkaEnv } from '../src/support/kafka-auth.js';
import { killAll, type Started, startNode, startService } from '../src/support/processes.js';
import { agentProblems, deliveryProblems, describeLoad, drainAudit, exportPositions, loadFigures, projectedDecisions, runLoadAgents } from './load-run.mjs';

// Load, bounded and on loopback: N agent processes, each a set of guarded Mastra agents and
// connectors auditing to Kafka in `required` mode, drive decisions for a fixed time against the
// real broker; the built audit-export service projects them into PostgreSQL and exports them to
// an OCSF file. Afterwards every decision a guard reported as published must be in the
// projection (as the query API pages it) and in the SIEM file exactly once by id. The figures
// are printed, never asserted: the machine is shared and they are noisy.
// GATEHOUSE_LOAD_AGENTS and GATEHOUSE_LOAD_SECONDS lengthen it; the defaults keep `npm test` short.
// The same run, at 4 and 8 agents on the three-node cluster, is a benchmark: load.bench.mjs.
const AGENTS = positiveIntegerEnv('GATEHOUSE_LOAD_AGENTS', 4);
const SECONDS = positiveIntegerEnv('GATEHOUSE_LOAD_SECONDS', 10);

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-load-'));
const siemDir = path.join(dir, 'siem');
let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let exporter: Started & { url: string };
let progress: StoredProgress;
const reader = auditReader();

beforeAll(async () => {
  kafka = testKafka('load');
  namespace = await provisionedNamespace(kafka, 'load');
  database = await throwawayDatabase('gh_load');
  progress = new StoredProgress(database.url, 'audit_export');
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
  await progress?.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe(`load: ${AGENTS} guarded agent processes for ${SECONDS} s`, () => {
  it(
    'puts every decision a guard reported as published into the projection and the SIEM file exactly once by id',
    async () => {
      const { reports, warmUpMs } = await runLoadAgents({
        agents: AGENTS,
        seconds: SECONDS,
        dir,
        start: (script, args) => startNode(script, args, { GATEHOUSE_TOPIC_NAMESPACE: namespace, ...agentKafkaEnv() }),
      });
      const figures = loadFigures(reports);

      // The guards decided what each scenario must decide, under load too; a call whose audit
      // write failed was refused (fail-closed), which is right but counted.
      expect(agentProblems(reports)).toEqual([]);

      // Nothing reaches the audit topic after the agents closed their producers: its end offsets
      // now bound everything either consumer will ever see. Wait until both passed them (the
      // export stores a position only after the file sink fsynced the batch).
      const topic = topicName('audit', namespace);
      const ends = await topicEnds(kafka, topic);
      const onLog = sumOfEnds(ends);
      const drainMs = await drainAudit({ ends, projected: () => progress.positions('decisions', topic), exported: () => exportPositions(exporter.url, reader.headers) });

      const decisions = await projectedDecisions(exporter.url, reader.headers);
      // The mix really mixes: the guards allowed and denied under load.
      expect([...new Set(decisions.map((d) => d.outcome))]).toEqual(expect.arrayContaining(['allowed', 'denied']));
      // Exactly once: no id twice in either, and every record of the log is one row and one
      // line (the log holds only this run's decisions, since the namespace is fresh).
      expect(deliveryProblems({ published: figures.published, projected: decisions.map((d) => d.id), exported: ocsfFileIds(siemDir), onLog })).toEqual([]);

      console.log(describeLoad(figures, { seconds: SECONDS, onLog, warmUpMs, drainMs }));
    },
    // Start-up of the agent processes dominates the short form; the rest scales with SECONDS.
    180_000 + AGENTS * 10_000 + SECONDS * 2_000,
  );
});
