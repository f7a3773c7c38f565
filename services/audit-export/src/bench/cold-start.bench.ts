// Cold start of the audit export against 0, 100,000 and 1,000,000 audit events of history
// (runColdStartBench, @gatehouse/service-runtime/testing, says how). The service folds nothing
// in memory: its projection and its export each store, with what they wrote, the next offset per
// partition, and a start reads on from there. /health answers before the projection caught up,
// so a start is timed until GET /v1/audit-status shows the projection and the export (an OCSF
// file sink) both at the end of the topic. History is 20,000 distinct decisions, then their
// records over again (the projection keeps one row per event id; the export writes every line);
// every size then gets the same 50 new decisions, read by the start that stores the offsets the
// measured starts read on from.
//   node services/audit-export/dist/bench/cold-start.bench.js   (broker and PostgreSQL running)
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEvent, DecisionRecordedV1 } from '@gatehouse/contracts';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv, provisionTopics } from '@gatehouse/kafka';
import { appendRepeated } from '@gatehouse/kafka/testing';
import { runColdStartBench } from '@gatehouse/service-runtime/testing';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { type AuditStatus } from '../audit-runtime.js';

const LIVE = 50;
/** Distinct decisions in a history; the rest of it repeats their records. */
const DISTINCT = 20_000;
const here = path.dirname(fileURLToPath(import.meta.url));

const kafka = createKafkaClient(kafkaConfigFromEnv('audit-cold-start-bench'), () => undefined);
const readerKey = randomBytes(24).toString('hex');
const readers = JSON.stringify([{ id: 'bench:siem', role: 'siem', apiKeySha256: createHash('sha256').update(readerKey).digest('hex'), tenants: '*' }]);
const decisions = (count: number, from: number) =>
  Array.from({ length: count }, (_, i) => {
    const run = `run-${(from + i) % 50}`;
    return createEvent(
      DecisionRecordedV1,
      { source: 'guard:bench', tenant: 'bench', subject: run },
      { decisionId: randomUUID(), boundary: 'tool', outcome: i % 4 === 0 ? 'denied' : 'allowed', code: 'TOOL.CHECKED', reason: 'tool call checked', runId: run, toolId: 'http.fetch', redactedPaths: [] },
    );
  });
const sinks = await mkdtemp(path.join(tmpdir(), 'gh-audit-cold-'));

try {
  await runColdStartBench({
    benchmark: 'audit export cold start',
    source: 'services/audit-export/src/bench/cold-start.bench.ts',
    name: 'audit-export',
    main: path.resolve(here, '../main.js'),
    resumeFrom: { from: 'stored-offsets', before: 'fresh-database' },
    settled: (status) => status.held === 0,
    startMetric: 'start to caught up (projection and export at the end of the topic), from the stored offsets',
    history: 'audit events',
    live: `${LIVE} new decisions`,
    held: 'records behind',
    heldLive: 0,
    settleMs: 0,
    env: (world) => ({
      GATEHOUSE_AUDIT_READERS: readers,
      GATEHOUSE_EXPORT_NAME: 'bench',
      GATEHOUSE_EXPORT_FROM: 'earliest',
      // A database of its own per start of before: the sink directory goes with it.
      GATEHOUSE_EXPORT_FILE_DIR: path.join(sinks, world.database.url.replace(/\W+/g, '-')),
      GATEHOUSE_EXPORT_FILE_FORMATS: 'ocsf',
      GATEHOUSE_EXPORT_VERIFY_WAIT_MS: '0',
    }),
    seed: async (namespace, count) => {
      await provisionTopics(kafka, { namespace, topics: ['audit'] });
      await appendRepeated(kafka, 'audit', namespace, decisions(Math.min(DISTINCT, count), 0), count);
    },
    addLive: async (namespace) => {
      const producer = await EventProducer.connect(kafka, { namespace });
      await producer.publishMany('audit', decisions(LIVE, 0));
      await producer.close();
    },
    status: async (base) => {
      const response = await fetch(`${base}/v1/audit-status`, { headers: { authorization: `Bearer ${readerKey}` } });
      if (response.status === 503) return { start: { from: 'not started', records: 0 }, held: Number.POSITIVE_INFINITY };
      if (!response.ok) throw new Error(`GET /v1/audit-status answered ${response.status}`);
      const status = (await response.json()) as AuditStatus;
      // Until the export has started from its stored positions, it is not caught up.
      const behind = status.export?.lag == null ? Number.POSITIVE_INFINITY : status.projection.lag + status.export.lag;
      return { start: status.projection.start ?? { from: 'not started', records: 0 }, held: behind };
    },
    record: recordBenchFigure,
  });
} finally {
  await rm(sinks, { recursive: true, force: true });
}
