import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createEvent, DecisionRecordedV1, topicName } from '@gatehouse/contracts';
import { AuditLogger, kafkaAuditPublisher, kafkaAuditSink } from '@gatehouse/guard';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';

// Issue 15, attack 7 on the audit topic, as an attacker runs it: with the `agent` principal's Kafka
// credentials it appends a decision record of ~100 kB (every gate may write audit records). It must
// never reach acme's reader or the SIEM feed; audit-export parks it, dead-lettered with its code,
// and goes on. The guard itself refuses to send such a record, with a typed error.

const siemDir = mkdtempSync(path.join(tmpdir(), 'gatehouse-audit-size-'));
const reader = auditReader(['acme'], 'siem:acme');

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let exporter: Started & { url: string };

beforeAll(async () => {
  kafka = testKafka('security-audit-size');
  namespace = await provisionedNamespace(kafka, 'sec');
  database = await throwawayDatabase();
  exporter = await startService('audit-export', { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, ...reader.env, GATEHOUSE_EXPORT_FILE_DIR: siemDir, GATEHOUSE_EXPORT_FILE_FORMATS: 'ocsf' });
}, 120_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(siemDir, { recursive: true, force: true });
});

const decision = (agentId: string) =>
  createEvent(DecisionRecordedV1, { source: 'guard:attacker', tenant: 'acme', subject: 'run-big', correlationId: 'run-big' }, {
    decisionId: randomUUID(),
    boundary: 'tool',
    outcome: 'allowed',
    code: 'CONNECTOR.ALLOWED',
    reason: 'allowed',
    runId: 'run-big',
    agentId,
  });

describe('attack 7: oversized records on the audit topic', () => {
  it('a ~100 kB decision written by an agent is parked and dead-lettered, never served or exported; the next one is', async () => {
    const big = decision('x'.repeat(100_000));
    const small = decision('support-bot');
    const producer = await EventProducer.connect(testKafka('security-audit-size-attacker', 'agent'), { namespace });
    let at;
    try {
      at = await producer.publish('audit', big);
      await producer.publish('audit', small);
    } finally {
      await producer.close();
    }
    const get = async (id: string) => (await fetch(`${exporter.url}/v1/decisions/${id}`, { headers: reader.headers })).status;
    await waitFor(async () => ((await get(small.id)) === 200 ? true : undefined), { timeoutMs: 30_000, what: 'the small decision in the query API' });
    expect(await get(big.id)).toBe(404);
    // Parked on the dead-letter topic under its position, with its code in the headers.
    const parked = await waitFor(
      async () => {
        const found: { key: string | null; code?: string }[] = [];
        await replayTopic(kafka, 'deadLetter', { namespace, onRecord: () => undefined, onPoison: (p) => void found.push({ key: p.key }) });
        return found.find((p) => p.key === `${topicName('audit', namespace)}/${at.partition}/${at.offset}`);
      },
      { timeoutMs: 30_000, what: 'the oversized record on the dead-letter topic' },
    );
    expect(parked).toBeDefined();
    // The SIEM feed has the small decision and nothing of the big one.
    const feed = await waitFor(
      async () => {
        const text = readdirSync(siemDir).map((f) => readFileSync(path.join(siemDir, f), 'utf8')).join('');
        return text.includes(small.id) ? text : undefined;
      },
      { timeoutMs: 30_000, what: 'the small decision in the SIEM file' },
    );
    expect(feed).not.toContain(big.id);
    expect(feed.length).toBeLessThan(50_000);
  });

  it('the guard refuses to send a decision record past the bounds: the required write fails typed, nothing is published', async () => {
    const producer = await EventProducer.connect(testKafka('security-audit-size-guard', 'agent'), { namespace });
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:support-bot', defaultTenant: 'acme' });
    const logger = new AuditLogger({ sink });
    try {
      const huge = { boundary: 'tool', action: 'tool.execute', resource: 'connector:x', decision: 'allowed', code: 'CONNECTOR.ALLOWED', reason: 'allowed', context: { tenant: 'acme', agentId: 'y'.repeat(50_000), runId: 'run-refused' } } as const;
      // The sink says why; the gate's logger fails closed (its required sink could not take the record).
      expect(() => sink.write({ ...huge, id: randomUUID(), timestamp: new Date().toISOString() })).toThrow(expect.objectContaining({ code: 'AUDIT.EVENT_TOO_LARGE' }));
      await expect(logger.record(huge)).rejects.toMatchObject({ code: 'AUDIT.REQUIRED_SINK_FAILED' });
    } finally {
      await logger.close();
      await producer.close();
    }
    const runs: string[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: ({ event }) => void (event.subject === 'run-refused' && runs.push(event.id)) });
    expect(runs).toEqual([]);
  });
});
