import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AuditLogger, type AuditSink, kafkaAuditPublisher, kafkaAuditSink } from '@gatehouse/guard';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, topicKeys, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { freePort, killAll, type Started, startService } from '../src/support/processes.js';

// The audit export SIEMs read, SIGKILLed while guarded agents keep recording decisions, then
// started again on the same database schema, topics, export directory and port.
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-fault-export-'));
const RUNS = 8;

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let env: Record<string, string>;
const reader = auditReader();
let producer: EventProducer | undefined;

beforeAll(async () => {
  kafka = testKafka('fault-export');
  namespace = await provisionedNamespace(kafka, 'fault');
  database = await throwawayDatabase('gh_fault');
  env = { ...reader.env, GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_EXPORT_FILE_DIR: dir, GATEHOUSE_EXPORT_KAFKA: 'true', GATEHOUSE_EXPORT_FROM: 'earliest', GATEHOUSE_PORT: String(await freePort()) };
  producer = await EventProducer.connect(testKafka('fault-export-agent', 'agent'), { namespace });
}, 60_000);

afterAll(async () => {
  killAll();
  await producer?.close().catch(() => undefined);
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

interface FeedLine {
  readonly id: string;
  readonly partition: number;
  readonly offset: number;
  readonly text: string;
}

/** Every whole line of one feed (the sink may be writing while we read: a line counts once it ends). */
function feed(format: 'ocsf' | 'cef'): FeedLine[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith(`${format}-`))
    .sort()
    .flatMap((f) => {
      const text = readFileSync(path.join(dir, f), 'utf8');
      return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter((l) => l.length > 0);
    })
    .map((text) => {
      if (format === 'ocsf') {
        const line = JSON.parse(text) as { metadata: { uid: string }; unmapped: { kafka: { partition: number; offset: number | string } } };
        return { id: line.metadata.uid, partition: line.unmapped.kafka.partition, offset: Number(line.unmapped.kafka.offset), text };
      }
      const field = (name: string) => new RegExp(`(?:^| )${name}=(\\S+)`).exec(text)?.[1] ?? '';
      return { id: field('externalId'), partition: Number(field('cn1')), offset: Number(field('cn2')), text };
    });
}

/**
 * Checks one feed against the records on the topic: every one is there exactly once. The batch in
 * flight when the process died is exported again (the pipeline is at-least-once, see the service's
 * README), and the restarted file sink finds those lines at the end of its files and skips them.
 */
function checkFeed(format: 'ocsf' | 'cef', onTopic: readonly string[]): void {
  const lines = feed(format);
  const ids = lines.map((l) => l.id);
  expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  expect(onTopic.filter((id) => !ids.includes(id))).toEqual([]);
  expect(lines).toHaveLength(onTopic.length);
  // Per partition the records are in log order, each offset once, none skipped.
  for (const partition of new Set(lines.map((l) => l.partition))) {
    const offsets = lines.filter((l) => l.partition === partition).map((l) => l.offset);
    expect(offsets).toEqual(offsets.map((_, i) => (offsets[0] ?? 0) + i));
  }
}

/** The event ids on the SIEM topic (the Kafka sink's feed, key = event id). */
const siemIds = (): Promise<string[]> => topicKeys(kafka, `${namespace}.gatehouse.siem.v1`);

describe('the audit export killed mid-work', () => {
  it('resumes from its stored positions: the projection, the SIEM files and the SIEM topic hold every decision exactly once', async () => {
    const first = await startService('audit-export', env);
    let second: Started & { url: string } = first;
    // Guarded agents' decisions, through the required sink: an id counts once Kafka acknowledged it.
    const acknowledged: string[] = [];
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer as EventProducer), mode: 'required', source: 'guard:fault-export', defaultTenant: 'acme' });
    const recording: AuditSink = {
      required: true,
      write: async (event) => {
        await sink.write(event);
        acknowledged.push(event.id);
      },
      close: () => sink.close(),
    };
    const audit = new AuditLogger({ sink: recording });
    // The agents record decisions the whole time: before the kill, while the export is down, after it is back.
    let flowing = true;
    const agents = Array.from({ length: RUNS }, async (_, run) => {
      for (let i = 0; flowing; i += 1) {
        // A write refused (not acknowledged in time on a loaded machine) may still land: the topic is the truth below.
        await audit.record({ boundary: 'tool', action: 'tool.execute', resource: 'connector:orders.lookup', decision: i % 7 === 0 ? 'denied' : 'allowed', code: i % 7 === 0 ? 'CONNECTOR.DENIED' : 'CONNECTOR.ALLOWED', reason: 'decided', context: { tenant: 'acme', runId: `run-${run}` } }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 5));
      }
    });
    const recorded = Promise.all(agents);
    recorded.catch(() => undefined);

    try {
      await waitFor(() => (feed('ocsf').length >= 250 ? true : undefined), { what: 'decisions exported', timeoutMs: 60_000, intervalMs: 50 });
      first.child.kill('SIGKILL');
      expect(await first.exited()).toBeNull();
      const atKill = acknowledged.length;
      // The agents never noticed: the export reads the log, it is not in their path.
      await waitFor(() => (acknowledged.length >= atKill + 100 ? true : undefined), { what: 'decisions recorded while the export is down', timeoutMs: 30_000 });
      second = await startService('audit-export', env);
      await waitFor(() => (acknowledged.length >= atKill + 200 ? true : undefined), { what: 'decisions recorded after the restart', timeoutMs: 30_000 });
    } finally {
      flowing = false;
      await recorded;
      await audit.close();
    }

    // What the agents were told was recorded is on the topic, from offset 0.
    const onTopic: string[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void onTopic.push(r.event.id) });
    expect(acknowledged.filter((id) => !onTopic.includes(id))).toEqual([]);

    // The restarted export catches up with the topic from the positions it stored.
    await waitFor(() => (new Set(feed('ocsf').map((l) => l.id)).size >= onTopic.length ? true : undefined), { what: 'every decision exported', timeoutMs: 90_000, intervalMs: 250 });
    await waitFor(() => (new Set(feed('cef').map((l) => l.id)).size >= onTopic.length ? true : undefined), { what: 'every decision in CEF', timeoutMs: 30_000, intervalMs: 250 });
    // Each decision once in each feed, wherever in a batch the kill fell.
    checkFeed('ocsf', onTopic);
    checkFeed('cef', onTopic);
    // The Kafka feed too: the restarted sink read the topic's end back and did not send those lines again.
    const fed = await waitFor(async () => {
      const ids = await siemIds();
      return new Set(ids).size >= onTopic.length ? ids : undefined;
    }, { what: 'every decision on the SIEM topic', timeoutMs: 30_000, intervalMs: 250 });
    expect(fed.filter((id, i) => fed.indexOf(id) !== i)).toEqual([]);
    expect(new Set(fed)).toEqual(new Set(onTopic));

    // The projection behind the query API: every decision exactly once, as on the topic.
    const projected = await waitFor(async () => {
      const ids: string[] = [];
      for (let run = 0; run < RUNS; run += 1) {
        const res = await fetch(`${second.url}/v1/runs/run-${run}/timeline`, { headers: reader.headers });
        const body = (await res.json()) as { decisions: { id: string }[] };
        ids.push(...body.decisions.map((d) => d.id));
      }
      return ids.length >= onTopic.length ? ids : undefined;
    }, { what: 'every decision in the query API', timeoutMs: 30_000, intervalMs: 250 });
    expect(projected).toHaveLength(onTopic.length);
    expect(new Set(projected)).toEqual(new Set(onTopic));

    // The export's stored positions reach the topic's end: nothing left behind, nothing skipped.
    const admin = kafka.admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(`${namespace}.gatehouse.audit.v1`).finally(() => admin.disconnect());
    const status = await waitFor(async () => {
      const exports = (await (await fetch(`${second.url}/v1/exports`, { headers: reader.headers })).json()) as { phase: string; paused: boolean; skipped: number; positions: Record<string, string> }[];
      return ends.every((e) => exports[0]?.positions[String(e.partition)] === e.high) ? exports[0] : undefined;
    }, { what: 'the stored positions at the end of the topic' });
    expect(status).toMatchObject({ phase: 'running', paused: false, skipped: 0 });
  }, 240_000);
});
