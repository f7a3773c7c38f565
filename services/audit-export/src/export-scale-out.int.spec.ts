import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EventProducer, topicPartitions, topicPartitionsFromEnv } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, topicKeys, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import pg from 'pg';
import { siemTopicName } from './sinks/kafka-sink.js';
import { type AuditApp, startAuditApp } from './testing/audit-app.js';
import { decision } from './testing/decisions.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';

// The audit export scaled out (GATEHOUSE_SCALE_OUT=partitions) on the real broker and PostgreSQL:
// two replicas project and export the audit topic's partitions between them, at once, into the
// same file directory and the same SIEM topic; one leaves mid-stream and the other takes its
// partitions. Every record is once in the projection and once in each feed.

let kafka: Kafka;
let db: TestDatabase;
const dirs: string[] = [];
const running: AuditApp[] = [];
/** The topic's partition count in this run (GATEHOUSE_TOPIC_PARTITIONS, or the catalog's). */
const PARTITIONS = topicPartitions('audit', topicPartitionsFromEnv());

beforeAll(async () => {
  kafka = testKafka('audit-export-scale-out-it');
  db = await createTestDatabase();
});

afterAll(async () => {
  await Promise.all(running.splice(0).map((app) => app.close().catch(() => undefined)));
  await db.drop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function replica(namespace: string, dir: string, name: string): Promise<AuditApp> {
  const app = await startAuditApp({
    namespace,
    databaseUrl: db.url,
    schema: 'export_scale',
    replica: name,
    export: { name: 'siem', from: { kind: 'earliest' }, file: { directory: dir, formats: ['ocsf'], maxBytes: 1_000_000 }, kafka: { format: 'ocsf', partitions: 1 }, verifyWaitMs: 0, retryBaseMs: 50, retryMaxMs: 300 },
  });
  running.push(app);
  return app;
}

/** The event ids in the file feed (every stream, every file), in the order found. */
async function fileIds(dir: string): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => f.startsWith('ocsf-')).sort();
  const text = (await Promise.all(files.map((f) => readFile(path.join(dir, f), 'utf8')))).join('');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { metadata: { uid: string } }).metadata.uid);
}

async function projectedIds(namespace: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ event_id: string }>(`SELECT event_id FROM export_scale.decisions WHERE topic = $1`, [`${namespace}.gatehouse.audit.v1`]);
    return rows.map((r) => r.event_id);
  } finally {
    await client.end();
  }
}

const live = (app: AuditApp): number => app.runtime.exportStatus()?.positions ? Object.keys(app.runtime.exportStatus()?.positions ?? {}).length : 0;

describe('a scaled-out audit export', () => {
  it('projects and exports every record once while two replicas split the partitions and one leaves mid-stream', async () => {
    const namespace = await provisionedNamespace(kafka, 'scale');
    const dir = await mkdtemp(path.join(tmpdir(), 'gh-audit-scale-'));
    dirs.push(dir);
    const a = await replica(namespace, dir, 'export-a');
    const b = await replica(namespace, dir, 'export-b');
    await waitFor(() => (live(a) > 0 && live(b) > 0 && live(a) + live(b) === PARTITIONS ? true : undefined), { what: 'the partitions split between the exporters', timeoutMs: 60_000 });

    const producer = await EventProducer.connect(kafka, { namespace });
    const ids: string[] = [];
    try {
      // Twelve runs, so every partition gets records; half before and half after one replica leaves.
      const write = async (from: number, to: number) => {
        for (let i = from; i < to; i += 1) {
          const event = decision({ runId: `run-${i % 12}` });
          ids.push(event.id);
          await producer.publish('audit', event);
        }
      };
      await write(0, 60);
      await waitFor(async () => ((await fileIds(dir)).length >= 30 ? true : undefined), { what: 'lines exported by both', timeoutMs: 30_000 });
      running.splice(running.indexOf(b), 1);
      await b.close();
      await write(60, 120);
    } finally {
      await producer.close();
    }

    // The one left takes every partition and catches up; each record once, everywhere.
    await waitFor(async () => ((await fileIds(dir)).length >= ids.length && (await projectedIds(namespace)).length >= ids.length ? true : undefined), { what: 'every record exported and projected', timeoutMs: 60_000, intervalMs: 250 });
    const inFile = await fileIds(dir);
    expect(inFile.length).toBe(ids.length);
    expect(new Set(inFile)).toEqual(new Set(ids));
    const projected = await projectedIds(namespace);
    expect(projected.length).toBe(ids.length);
    expect(new Set(projected)).toEqual(new Set(ids));
    await waitFor(async () => ((await topicKeys(kafka, siemTopicName(namespace))).length >= ids.length ? true : undefined), { what: 'the SIEM topic caught up', timeoutMs: 30_000 });
    const onSiem = await topicKeys(kafka, siemTopicName(namespace));
    expect(onSiem.length).toBe(ids.length);
    expect(new Set(onSiem)).toEqual(new Set(ids));
    expect(live(a)).toBe(PARTITIONS);
  }, 180_000);

  it('refuses to move the positions of an export several replicas run (409)', async () => {
    const namespace = await provisionedNamespace(kafka, 'scale');
    const dir = await mkdtemp(path.join(tmpdir(), 'gh-audit-scale-'));
    dirs.push(dir);
    const a = await replica(namespace, dir, 'export-a');
    await waitFor(() => (live(a) === PARTITIONS ? true : undefined), { what: 'the exporter running', timeoutMs: 60_000 });
    await expect(a.runtime.exportPipeline()?.reposition({ kind: 'latest' })).rejects.toMatchObject({ code: 'AUDIT.EXPORT_SCALED_OUT' });
  });
});
