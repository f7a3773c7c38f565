import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type DecisionRecorded } from '@gatehouse/contracts';
import { EventProducer, kafkaGroupId } from '@gatehouse/kafka';
import { apiKeyDigest } from '@gatehouse/service-runtime';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import pg from 'pg';
import { siemTopicName } from './sinks/kafka-sink.js';
import { startAuditApp } from './testing/audit-app.js';
import { decision } from './testing/decisions.js';
import { testTelemetry } from './testing/telemetry.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';
import { METRIC } from './telemetry/export-telemetry.js';

const operatorKey = `ek_${randomUUID()}`;
const operator = { authorization: `Bearer ${operatorKey}` };

let kafka: Kafka;
let db: TestDatabase;
const dirs: string[] = [];

beforeAll(async () => {
  kafka = testKafka('audit-export-it');
  db = await createTestDatabase();
});

afterAll(async () => {
  await db.drop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'gh-audit-export-'));
  dirs.push(dir);
  return dir;
}

/** A SIEM stand-in over HTTP: records every line it acknowledged, in arrival order. */
async function siemServer(port = 0): Promise<{ server: Server; port: number; ids: string[] }> {
  const ids: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      for (const line of body.split('\n').filter(Boolean)) ids.push((JSON.parse(line) as { metadata: { uid: string } }).metadata.uid);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port, ids };
}

async function readFeed(dir: string, prefix: string): Promise<string> {
  const files = (await readdir(dir)).filter((f) => f.startsWith(prefix)).sort();
  return (await Promise.all(files.map((f) => readFile(path.join(dir, f), 'utf8')))).join('');
}

/** Producer `p` (one run, so one key and partition) emits its chain seq 1..n. */
function chainOf(producer: string, from: number, to: number): DecisionRecorded[] {
  return Array.from({ length: to - from + 1 }, (_, i) =>
    decision({ runId: producer, outcome: i % 3 === 0 ? 'allowed' : 'denied' }, { subject: producer, producer, seq: from + i, traceparent: `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01` }),
  );
}

describe('export pipeline', () => {
  it('exports to a file, an HTTP endpoint and the SIEM topic with matching ids, and loses nothing while the HTTP sink is down', async () => {
    const namespace = await provisionedNamespace(kafka);
    const dir = await tempDir();
    const siem = await siemServer();
    const { telemetry, spans, points, shutdown } = testTelemetry();
    const app = await startAuditApp({
      namespace,
      databaseUrl: db.url,
      schema: 'export_it',
      telemetry,
      export: {
        name: 'siem',
        from: { kind: 'earliest' },
        file: { directory: dir, formats: ['ocsf', 'cef'], maxBytes: 1_000_000 },
        http: { url: `http://127.0.0.1:${siem.port}/ingest`, format: 'ocsf', maxAttempts: 2, timeoutMs: 2_000 },
        kafka: { format: 'ocsf', partitions: 1 },
        retryBaseMs: 50,
        retryMaxMs: 300,
      },
    });
    const producer = await EventProducer.connect(kafka, { namespace });
    const producers = ['run-a', 'run-b', 'run-c'];
    const published: DecisionRecorded[] = [];
    try {
      const pipeline = await app.runtime.ready();
      expect(pipeline).toBeDefined();
      for (const p of producers) {
        const events = chainOf(p, 1, 10);
        published.push(...events);
        await producer.publishMany('audit', events);
      }
      await waitFor(() => (new Set(siem.ids).size >= 30 ? true : undefined), { what: 'first 30 lines at the HTTP sink' });

      // Kill the SIEM endpoint mid-export, keep producing.
      siem.server.closeAllConnections();
      await new Promise((r) => siem.server.close(r));
      for (const p of producers) {
        const events = chainOf(p, 11, 20);
        published.push(...events);
        await producer.publishMany('audit', events);
      }
      await waitFor(() => (pipeline?.status().paused ? true : undefined), { what: 'the export to pause' });
      const stalled = pipeline?.status().positions;
      // Restart it on the same port: the export resumes where it stopped.
      const again = await siemServer(siem.port);
      try {
        await waitFor(() => (new Set([...siem.ids, ...again.ids]).size >= 60 ? true : undefined), { what: 'all 60 lines at the HTTP sink', timeoutMs: 60_000 });
        expect(pipeline?.status().positions).not.toEqual(stalled);
        const received = [...siem.ids, ...again.ids];
        const ids = new Set(published.map((e) => e.id));
        // Nothing lost, nothing foreign: duplicates only of ids that were published.
        expect(new Set(received)).toEqual(ids);
        // Per producer, first arrivals follow the chain order.
        const seqOf = new Map(published.map((e) => [e.id, { producer: e.chain?.producer, seq: e.chain?.seq ?? 0 }]));
        for (const p of producers) {
          const seen: number[] = [];
          for (const id of received) {
            const link = seqOf.get(id);
            if (link?.producer === p && !seen.includes(link.seq)) seen.push(link.seq);
          }
          expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        }

        // File sink: every id in the OCSF and the CEF files, each partition file in chain order.
        await waitFor(async () => ((await readFeed(dir, 'ocsf')).trim().split('\n').length >= 60 ? true : undefined), { what: 'file sink' });
        const ocsf = (await readFeed(dir, 'ocsf')).trim().split('\n').map((l) => JSON.parse(l) as { metadata: { uid: string }; unmapped: { chain: { seq: number } } });
        expect(new Set(ocsf.map((l) => l.metadata.uid))).toEqual(ids);
        const cef = await readFeed(dir, 'cef');
        for (const id of ids) expect(cef).toContain(`externalId=${id}`);

        // Kafka SIEM topic: keyed by event id.
        const consumer = kafka.consumer({ groupId: kafkaGroupId(kafka, `siem-check-${randomUUID()}`) });
        const keys = new Set<string>();
        await consumer.connect();
        await consumer.subscribe({ topic: siemTopicName(namespace), fromBeginning: true });
        await consumer.run({ eachMessage: async ({ message }) => void keys.add(message.key?.toString() ?? '') });
        await waitFor(() => (keys.size >= 60 ? true : undefined), { what: 'SIEM topic' });
        await consumer.disconnect();
        expect(keys).toEqual(ids);

        // Query API: the same ids.
        const sample = published[17] as DecisionRecorded;
        await waitFor(async () => ((await app.get(`/v1/decisions/${sample.id}`)).status === 200 ? true : undefined), { what: 'projection' });

        // Metrics and traces.
        const exported = await points(METRIC.exported);
        const bySink = (sink: string) => exported.filter((p) => p.attributes['sink'] === sink).reduce((n, p) => n + (p.value as number), 0);
        expect(bySink('http')).toBeGreaterThanOrEqual(60);
        expect(bySink('kafka')).toBe(60);
        expect(bySink('file')).toBe(120);
        expect(exported.some((p) => p.attributes['outcome'] === 'denied' && p.attributes['boundary'] === 'tool')).toBe(true);
        expect((await points(METRIC.sinkFailures)).some((p) => p.attributes['sink'] === 'http')).toBe(true);
        const latency = await points(METRIC.latency);
        expect(latency.length).toBeGreaterThan(0);
        await pipeline?.refreshLag();
        const lag = await points(METRIC.lag);
        expect(lag.map((p) => p.value)).toEqual([0, 0, 0]);
        const exportSpans = spans.filter((s) => s.name === 'audit.export' && s.ended);
        expect(exportSpans.length).toBeGreaterThanOrEqual(60);
        expect(exportSpans[0]?.parent).toMatchObject({ traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), isRemote: true });
      } finally {
        await new Promise((r) => again.server.close(r));
      }
    } finally {
      await producer.close();
      await app.close();
      await shutdown();
    }
  });

  it('runs one export per name across replicas: the second stands by, then takes over from the stored positions', async () => {
    const namespace = await provisionedNamespace(kafka);
    const [dirA, dirB] = [await tempDir(), await tempDir()];
    const exportOf = (directory: string) => ({ name: 'siem-ha', from: { kind: 'earliest' as const }, file: { directory, formats: ['ocsf' as const], maxBytes: 1_000_000 }, leaseRetryMs: 200 });
    const first = await startAuditApp({ namespace, databaseUrl: db.url, schema: 'lease_it', export: exportOf(dirA) });
    let second: Awaited<ReturnType<typeof startAuditApp>> | undefined;
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      await first.runtime.ready();
      second = await startAuditApp({ namespace, databaseUrl: db.url, schema: 'lease_it', export: exportOf(dirB) });
      const before = chainOf('run-ha', 1, 10);
      await producer.publishMany('audit', before);
      await waitFor(() => ((first.runtime.exportStatus()?.exported ?? 0) >= 10 ? true : undefined), { what: 'the first replica exporting' });
      await waitFor(() => (second!.runtime.exportStatus()?.phase === 'standby' ? true : undefined), { what: 'the second replica standing by' });
      expect((await second.get<{ phase: string }[]>('/v1/exports')).body).toMatchObject([{ name: 'siem-ha', phase: 'standby' }]);
      expect(await readFeed(dirB, 'ocsf-')).toBe('');

      await first.close(); // its session ends, and with it the lock
      const after = chainOf('run-ha', 11, 20);
      await producer.publishMany('audit', after);
      await waitFor(() => ((second!.runtime.exportStatus()?.exported ?? 0) >= 10 ? true : undefined), { what: 'the second replica taking over' });
      const uid = (line: string) => (JSON.parse(line) as { metadata: { uid: string } }).metadata.uid;
      const exported = async (dir: string) => (await readFeed(dir, 'ocsf-')).split('\n').filter(Boolean).map(uid);
      expect(await exported(dirA)).toEqual(before.map((e) => e.id));
      expect(await exported(dirB)).toEqual(after.map((e) => e.id));
    } finally {
      await producer.close();
      await second?.close();
      await first.close().catch(() => undefined);
    }
  });

  it('stops exporting when the lease\'s connection dies, then takes the lease again and goes on, each record once', async () => {
    const namespace = await provisionedNamespace(kafka);
    const dir = await tempDir();
    const app = await startAuditApp({ namespace, databaseUrl: db.url, schema: 'lease_lost_it', export: { name: 'siem-lost', from: { kind: 'earliest' }, file: { directory: dir, formats: ['ocsf'], maxBytes: 1_000_000 }, leaseRetryMs: 200 } });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const producer = await EventProducer.connect(kafka, { namespace });
    const holder = async () => ((await client.query<{ pid: number }>(`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)).rows.map((r) => r.pid));
    try {
      await app.runtime.ready();
      const before = chainOf('run-lost', 1, 5);
      await producer.publishMany('audit', before);
      await waitFor(() => ((app.runtime.exportStatus()?.exported ?? 0) >= 5 ? true : undefined), { what: 'the first records exported' });
      const [first] = await holder();
      expect(first).toBeDefined();
      // The database ends the lease's session (a restart, a failover): the lock is gone with it.
      await client.query('SELECT pg_terminate_backend($1)', [first]);
      const [second] = await waitFor(async () => {
        const pids = await holder();
        return pids.length === 1 && pids[0] !== first ? pids : undefined;
      }, { what: 'the lease taken again on a new connection' });
      expect(second).not.toBe(first);
      const after = chainOf('run-lost', 6, 10);
      await producer.publishMany('audit', after);
      const uid = (line: string) => (JSON.parse(line) as { metadata: { uid: string } }).metadata.uid;
      const exported = await waitFor(async () => {
        const ids = (await readFeed(dir, 'ocsf-')).split('\n').filter(Boolean).map(uid);
        return ids.length >= 10 ? ids : undefined;
      }, { what: 'the records after the loss exported' });
      expect(exported).toEqual([...before, ...after].map((e) => e.id));
      expect(app.runtime.exportStatus()?.phase).toBe('running');
    } finally {
      await producer.close();
      await client.end();
      await app.close();
    }
  });

  it('re-exports a range byte-identically after a restart from earliest', async () => {
    const namespace = await provisionedNamespace(kafka);
    const dir = await tempDir();
    const app = await startAuditApp({
      namespace,
      databaseUrl: db.url,
      schema: 'reexport_it',
      export: { name: 'replay', from: { kind: 'earliest' }, file: { directory: dir, formats: ['ocsf', 'cef'], maxBytes: 1_000_000 }, operators: [{ id: 'user:secops', role: 'siem-operator', keyDigest: apiKeyDigest(operatorKey) }] },
    });
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      const pipeline = await app.runtime.ready();
      const events = [...chainOf('run-x', 1, 8), ...chainOf('run-y', 1, 8)];
      await producer.publishMany('audit', events);
      await waitFor(() => ((pipeline?.status().exported ?? 0) >= 16 ? true : undefined), { what: 'first export' });
      const files = (await readdir(dir)).sort();
      const first = new Map(await Promise.all(files.map(async (f) => [f, await readFile(path.join(dir, f), 'utf8')] as const)));

      // Moving the export takes an operator: a jump forward would keep records from the SIEM.
      for (const headers of [{}, { authorization: 'Bearer not-an-operator-key-at-all' }] as Record<string, string>[]) {
        const refused = await app.post('/v1/exports/replay/restart', { from: 'latest' }, headers);
        expect(refused.status).toBe(401);
        expect(refused.body).toMatchObject({ code: 'AUDIT.UNAUTHENTICATED' });
      }
      expect(pipeline?.status().exported).toBe(16);
      const answer = await app.post('/v1/exports/replay/restart', { from: 'earliest' }, operator);
      expect(answer.status).toBe(200);
      await waitFor(() => ((pipeline?.status().exported ?? 0) >= 32 ? true : undefined), { what: 're-export' });
      for (const f of files) expect(await readFile(path.join(dir, f), 'utf8')).toBe(`${first.get(f)}${first.get(f)}`);

      // A time after every record: nothing more is exported.
      expect((await app.post('/v1/exports/replay/restart', { from: new Date(Date.now() + 60_000).toISOString() }, operator)).status).toBe(200);
      expect((await app.post('/v1/exports/replay/restart', { from: 'yesterday' }, operator)).status).toBe(400);
      expect((await app.post('/v1/exports/nope/restart', { from: 'earliest' }, operator)).status).toBe(404);
    } finally {
      await producer.close();
      await app.close();
    }
  });
});
