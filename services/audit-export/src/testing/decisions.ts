import { randomUUID } from 'node:crypto';
import { createEvent, type DecisionRecorded, DecisionRecordedV1 } from '@gatehouse/contracts';
import { type AuditRecord } from '../feeds/export-line.js';

type Payload = DecisionRecorded['payload'];

/** A valid DecisionRecorded with sensible defaults; `over` replaces payload fields. */
export function decision(over: Partial<Payload> = {}, meta: { tenant?: string; subject?: string; seq?: number; producer?: string; traceparent?: string; id?: string; time?: string } = {}): DecisionRecorded {
  const runId = over.runId ?? meta.subject ?? 'run-1';
  return createEvent(
    DecisionRecordedV1,
    {
      source: 'guard:test',
      tenant: meta.tenant ?? 'acme',
      subject: meta.subject ?? runId,
      ...(meta.id ? { id: meta.id } : {}),
      ...(meta.time ? { time: meta.time } : {}),
      ...(meta.traceparent ? { trace: { traceparent: meta.traceparent } } : {}),
      ...(meta.seq ? { chain: { producer: meta.producer ?? 'guard:test/1', seq: meta.seq, prevHash: meta.seq === 1 ? null : 'a'.repeat(64) } } : {}),
    },
    {
      decisionId: randomUUID(),
      boundary: 'tool',
      outcome: 'denied',
      code: 'TOOL.EGRESS_HOST_NOT_DECLARED',
      reason: 'egress host is not declared',
      actor: { id: 'user-1', role: 'analyst', kind: 'human' },
      agentId: 'support-bot',
      runId,
      toolId: 'http.fetch',
      policy: { bundleId: 'default', revision: 3, ruleId: 'deny-egress' },
      redactedPaths: [],
      ...over,
    },
  );
}

/** Wraps an event as a record at a log position. */
export function record(event: DecisionRecorded, partition = 0, offset = '7', logTime = new Date('2025-06-01T12:00:00.123Z')): AuditRecord {
  return { event, topic: 'gatehouse.audit.v1', partition, offset, logTime };
}
