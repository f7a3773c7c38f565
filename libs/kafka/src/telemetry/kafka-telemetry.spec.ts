import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { ApprovalDecidedV1, createEvent, DecisionRecordedV1 } from '@gatehouse/contracts';
import { testKeyring, testSigningKey } from '@gatehouse/contracts/testing';
import { reportIfUntrusted } from '../fold-engine/fold-reader.js';
import { type DecodedRecord } from '../records.js';
import { type RecordedTelemetry, recordTelemetry } from '../testing/telemetry.js';
import { countDeadLetters, countDecision, handOver, KAFKA_METRIC, LagReport, recordDecisionLatency } from './kafka-telemetry.js';
import { activeTraceContext } from './trace-context.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

const decisionEvent = () =>
  createEvent(DecisionRecordedV1, { source: 'guard:test', tenant: 'acme', subject: 'run-1' }, { decisionId: randomUUID(), boundary: 'tool', outcome: 'denied', code: 'TOOL.DENIED', reason: 'static reason with secret-ish text' });

function decisionRecord(trace?: string): DecodedRecord<'audit'> {
  const event = decisionEvent();
  return { topic: 'gatehouse.audit.v1', partition: 2, offset: '41', logTime: new Date(), key: 'acme/run-1', event, ...(trace === undefined ? {} : { trace: { traceparent: trace } }) };
}

describe('kafka telemetry', () => {
  let telemetry: RecordedTelemetry;
  beforeEach(() => {
    telemetry = recordTelemetry();
  });
  afterEach(() => telemetry.stop());

  it('hands a traced record over in a consumer span of the producer trace, naming where it is and never its payload', async () => {
    const record = decisionRecord(TRACEPARENT);
    const seen = await handOver('audit.apply', record, () => activeTraceContext());
    const [span] = telemetry.spans;
    expect(span).toMatchObject({ name: 'audit.apply', kind: SpanKind.CONSUMER, traceId: '0af7651916cd43dd8448eb211c80319c', parentSpanId: 'b7ad6b7169203331', ended: true });
    expect(seen?.traceparent).toBe(`00-${span?.traceId}-${span?.spanId}-01`);
    expect(span?.attributes).toEqual({
      'messaging.system': 'kafka',
      'messaging.destination.name': 'gatehouse.audit.v1',
      'messaging.kafka.partition': 2,
      'messaging.kafka.offset': '41',
      'gatehouse.event_id': record.event.id,
      'gatehouse.event_type': 'DecisionRecorded',
      'gatehouse.tenant': 'acme',
    });
  });

  it('hands an untraced record, or any record without a span name, straight over: no span, no promise', () => {
    expect(handOver('audit.apply', decisionRecord(), () => 7)).toBe(7);
    expect(handOver(undefined, decisionRecord(TRACEPARENT), () => 8)).toBe(8);
    expect(telemetry.spans).toEqual([]);
  });

  it('marks the span failed when applying the record throws, and rethrows', async () => {
    await expect(handOver('audit.apply', decisionRecord(TRACEPARENT), () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(telemetry.spans[0]?.status).toEqual({ code: SpanStatusCode.ERROR });
  });

  it('reports each live partition lag until the partition moves or the reader stops', () => {
    const lag = new LagReport('gatehouse.approvals.v1');
    lag.batchEnd(0, 10n, '15');
    lag.batchEnd(1, 7n, '7');
    lag.batchEnd(1, 7n, 'not-a-number');
    expect(telemetry.observe(KAFKA_METRIC.foldLag)).toEqual([
      { value: 5, attributes: { topic: 'gatehouse.approvals.v1', partition: 0 } },
      { value: 0, attributes: { topic: 'gatehouse.approvals.v1', partition: 1 } },
    ]);
    lag.drop(0);
    expect(telemetry.observe(KAFKA_METRIC.foldLag).map((m) => m.attributes['partition'])).toEqual([1]);
    lag.close();
    expect(telemetry.observe(KAFKA_METRIC.foldLag)).toEqual([]);
  });

  it('counts decisions, dead letters and decision latency by codes and names only', () => {
    countDecision(decisionEvent());
    countDeadLetters([{ topic: 'gatehouse.ledger.v1', code: 'CONTRACT.DECODE_FAILED' }, { topic: 'gatehouse.ledger.v1', code: 'CONTRACT.DECODE_FAILED' }]);
    recordDecisionLatency('gatehouse.ledger.v1', performance.now(), 'answered');
    expect(telemetry.measurements(KAFKA_METRIC.decisions)).toEqual([{ value: 1, attributes: { boundary: 'tool', decision: 'denied', code: 'TOOL.DENIED' } }]);
    expect(telemetry.sum(KAFKA_METRIC.deadLetters, { topic: 'gatehouse.ledger.v1', code: 'CONTRACT.DECODE_FAILED' })).toBe(2);
    expect(telemetry.measurements(KAFKA_METRIC.decisionLatency).map((m) => m.attributes)).toEqual([{ topic: 'gatehouse.ledger.v1', outcome: 'answered' }]);
  });

  it('counts a granting event a fold ignored for its signature, by topic and reason', () => {
    const forged = createEvent(ApprovalDecidedV1, { source: 'guard:rogue', tenant: 'acme', subject: 'a-1' }, { approvalId: 'a-1', verdict: 'approve', reviewer: { id: 'user:rita', role: 'approver', kind: 'human' } });
    const record: DecodedRecord<'approvals'> = { topic: 'gatehouse.approvals.v1', partition: 0, offset: '3', logTime: new Date(), key: 'a-1', event: forged };
    const reporting = { keyring: testKeyring(testSigningKey('approval')), source: 'service:approval' };
    expect(reportIfUntrusted(record, 'approvals', undefined, reporting, () => undefined, () => undefined)).toBe(true);
    expect(telemetry.measurements(KAFKA_METRIC.untrustedGrants)).toEqual([{ value: 1, attributes: { topic: 'gatehouse.approvals.v1', reason: 'unsigned' } }]);
  });
});
