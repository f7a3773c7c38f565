import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RequestContext } from '@mastra/core/request-context';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY, AuditLogger, createGuardedAgent, denyPatterns, kafkaAuditPublisher, kafkaAuditSink } from '@gatehouse/guard';
import { scriptedModel } from '@gatehouse/guard/testing';
import { EventProducer, KAFKA_BROKERS_ENV } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { auditReader } from './support/audit-reader.js';
import { throwawayDatabase } from './support/database.js';
import { kcatAuthArgs } from './support/kafka-auth.js';
import { killAll, type Started, startService } from './support/processes.js';

// Decisions of a guarded agent, through Kafka, out of the audit-export service as a SIEM sees them.
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-export-e2e-'));
const brokers = process.env[KAFKA_BROKERS_ENV] ?? '127.0.0.1:9092';
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let exporter: Started & { url: string };
const ids: string[] = [];
const runId = `run-e2e-${Date.now()}`;
const reader = auditReader();

beforeAll(async () => {
  const kafka = testKafka('export-e2e');
  namespace = await provisionedNamespace(kafka, 'export');
  database = await throwawayDatabase();
  exporter = await startService('audit-export', {
    ...reader.env,
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_EXPORT_FILE_DIR: dir,
    GATEHOUSE_EXPORT_KAFKA: 'true',
    GATEHOUSE_EXPORT_FROM: 'earliest',
  });

  const producer = await EventProducer.connect(kafka, { namespace });
  const audit = new AuditLogger({ sink: kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:e2e', defaultTenant: 'acme' }) });
  const agent = createGuardedAgent({
    id: 'support-bot',
    name: 'Support',
    instructions: 'x',
    model: scriptedModel({ text: 'Shipped.' }) as never,
    allowedRoles: ['support'],
    policies: [denyPatterns(['internal use only'])],
    audit,
  });
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'alice', role: 'support' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'support-bot', runId, entryPath: 'e2e' });
  await agent.generate('Where is my order?', { requestContext: rc });
  await agent.generate('Show me the internal use only notes', { requestContext: rc });
  await audit.close();
  await producer.close();
  ids.push(...audit.events().map((e) => e.id));
}, 120_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

function feedLines(prefix: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .sort()
    .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n').filter((l) => l.length > 0));
}

describe('audit export of a guarded agent run', () => {
  it('finds every decision in the OCSF file, the CEF output and the query API, with matching ids', async () => {
    expect(ids).toHaveLength(5); // role gate, input allowed, output allowed, role gate, input denied
    // The sink may be writing while we read: a line counts once it is whole (newline-terminated
    // lines parse), and both feeds must hold every id.
    const { ocsf, cef } = await waitFor(() => {
      const parsed = feedLines('ocsf').flatMap((l) => {
        try {
          return [JSON.parse(l) as { metadata: { uid: string }; class_uid: number }];
        } catch {
          return [];
        }
      });
      const cefLines = feedLines('cef');
      const complete = ids.every((id) => parsed.some((l) => l.metadata.uid === id) && cefLines.some((l) => l.includes(`externalId=${id}`)));
      return complete ? { ocsf: parsed, cef: cefLines } : undefined;
    }, { what: 'OCSF and CEF lines', timeoutMs: 30_000, intervalMs: 250 });
    expect(ocsf.every((l) => Number.isInteger(l.class_uid))).toBe(true);
    for (const id of ids) expect(cef.some((l) => l.startsWith('CEF:0|') && l.includes(`externalId=${id}`))).toBe(true);

    const timeline = await waitFor(async () => {
      const res = await fetch(`${exporter.url}/v1/runs/${runId}/timeline`, { headers: reader.headers });
      const body = (await res.json()) as { decisions?: { id: string; code: string }[] };
      return (body.decisions?.length ?? 0) >= ids.length ? body.decisions : undefined;
    }, { what: 'the run timeline', timeoutMs: 30_000, intervalMs: 250 });
    expect(timeline?.map((d) => d.id)).toEqual(ids);
    expect(timeline?.map((d) => d.code)).toEqual(['RBAC.ALLOWED', 'POLICY.ALLOWED', 'POLICY.ALLOWED', 'RBAC.ALLOWED', 'POLICY.DENIED']);
    // The service's log says who read what (the reader's id, never its key or the run asked for).
    const reads = () =>
      exporter
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{') && l.endsWith('}')) // whole lines only: the last may still be arriving
        .map((l) => (JSON.parse(l) as { message: string }).message)
        .filter((m) => m.startsWith('audit read '));
    await waitFor(() => (reads().includes(`audit read {"reader":"test:siem","route":"timeline","returned":${ids.length}}`) ? true : undefined), { what: 'the read in the log', timeoutMs: 5_000 });
    expect(exporter.output()).not.toContain(reader.headers.authorization.slice('Bearer '.length));
    expect(exporter.output()).not.toContain(runId);
  });

  it('keeps an idle connection open longer than a client keeps it (no "other side closed" on reuse)', async () => {
    const res = await fetch(`${exporter.url}/health`);
    await res.body?.cancel();
    // undici closes an idle connection 1 s before the server's hint; load balancers after 60 s.
    expect(res.headers.get('keep-alive')).toBe('timeout=65');
  });

  it('is readable by a SIEM client nobody in this project wrote: kcat consumes the Kafka feed', async () => {
    const topic = `${namespace}.gatehouse.siem.v1`;
    const read = await waitFor(() => {
      const result = spawnSync('kcat', [...kcatAuthArgs(dir), '-b', brokers, '-C', '-t', topic, '-o', 'beginning', '-e', '-q', '-f', '%k\t%s\n'], { encoding: 'utf8', timeout: 30_000 });
      if (result.status !== 0) throw new Error(`kcat failed (${result.status}): ${result.stderr}`);
      const rows = result.stdout.split('\n').filter((l) => l.length > 0).map((l) => {
        const [key, value] = l.split('\t');
        return { key, value: JSON.parse(value ?? '{}') as { metadata: { uid: string } } };
      });
      return ids.every((id) => rows.some((r) => r.key === id)) ? rows : undefined;
    }, { what: 'kcat to read every decision', timeoutMs: 30_000, intervalMs: 500 });
    for (const row of read) expect(row.value.metadata.uid).toBe(row.key);
  });
});
