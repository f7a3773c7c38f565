import { afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { context, trace } from '@opentelemetry/api';
import { createEvent, DecisionRecordedV1, isDecisionRecorded, type TopicEvent, topicName } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { type DecodedRecord, EventProducer, FoldEngine, replayTopic } from '../index.js';
import { provisionedNamespace, testKafka, waitFor } from '../testing/index.js';
import { type RecordedTelemetry, recordTelemetry } from '../testing/telemetry.js';
import { KAFKA_METRIC } from './kafka-telemetry.js';

// Trace context across the real broker: the producer's W3C headers, a reader's record trace, a fold
// engine's apply spans and lag, and the dead-letter count.
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

let kafka: Kafka;
let telemetry: RecordedTelemetry;

beforeAll(() => {
  kafka = testKafka('kafka-telemetry-int-spec');
});
beforeEach(() => {
  telemetry = recordTelemetry();
});
afterEach(() => telemetry.stop());

function decision(code: string, traceparent?: string): TopicEvent<'audit'> {
  return createEvent(
    DecisionRecordedV1,
    { source: 'guard:test', tenant: 'acme', subject: 'run-1', ...(traceparent === undefined ? {} : { trace: { traceparent } }) },
    { decisionId: randomUUID(), boundary: 'tool', outcome: 'allowed', code, reason: 'manifest satisfied' },
  );
}

const codeOf = (event: TopicEvent<'audit'>): string => (isDecisionRecorded(event) ? event.payload.code : event.type);

describe('trace context on the log', () => {
  it("a record carries its event's trace, else the producer's active span, else none; a reader reads it back", async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    const span = trace.getTracer('test').startSpan('producer work');
    try {
      await producer.publish('audit', decision('EVENT.TRACE', TRACEPARENT));
      await context.with(trace.setSpan(context.active(), span), () => producer.publish('audit', decision('ACTIVE.SPAN')));
      await producer.publish('audit', decision('NONE'));
    } finally {
      span.end();
      await producer.close();
    }
    const records: DecodedRecord<'audit'>[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void records.push(r) });
    const traceOf = (code: string) => records.find((r) => codeOf(r.event) === code)?.trace;
    expect(traceOf('EVENT.TRACE')).toEqual({ traceparent: TRACEPARENT });
    expect(traceOf('ACTIVE.SPAN')).toEqual({ traceparent: `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01` });
    expect(traceOf('NONE')).toBeUndefined();
  });

  it('a fold engine applies a live traced record in a <topic>.apply span of the producer trace, and reports its lag per partition', async () => {
    const namespace = await provisionedNamespace(kafka);
    const applied: string[] = [];
    const engine = await FoldEngine.start({
      kafka,
      namespace,
      topicId: 'audit',
      fold: { create: () => ({}), apply: (_state, event) => void applied.push(codeOf(event)) },
      unavailable: (reason) => new Error(reason),
    });
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      const landed = await producer.publish('audit', decision('LIVE', TRACEPARENT));
      await waitFor(() => (telemetry.spans.some((s) => s.name === 'audit.apply' && s.ended) ? true : undefined), { what: 'the apply span' });
      const [span] = telemetry.spans.filter((s) => s.name === 'audit.apply');
      expect(span).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', parentSpanId: 'b7ad6b7169203331' });
      expect(span?.attributes).toMatchObject({ 'messaging.destination.name': topicName('audit', namespace), 'messaging.kafka.partition': landed.partition, 'messaging.kafka.offset': landed.offset });
      expect(applied).toContain('LIVE');
      const lag = await waitFor(() => telemetry.observe(KAFKA_METRIC.foldLag).find((m) => m.attributes['topic'] === topicName('audit', namespace) && m.attributes['partition'] === landed.partition), { what: 'the lag of the written partition' });
      expect(lag.value).toBe(0);
    } finally {
      await producer.close();
      await engine.stop();
    }
    // A stopped engine's partitions leave the gauge.
    expect(telemetry.observe(KAFKA_METRIC.foldLag).filter((m) => m.attributes['topic'] === topicName('audit', namespace))).toEqual([]);
  });

  it('counts every record parked on the dead-letter topic by its topic and code', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      const poison = { topic: topicName('ledger', namespace), partition: 0, offset: '9', key: null, value: Buffer.from('{'), code: 'CONTRACT.DECODE_FAILED', reason: 'not JSON' };
      await producer.deadLetterAll([poison, { ...poison, offset: '10' }]);
    } finally {
      await producer.close();
    }
    expect(telemetry.sum(KAFKA_METRIC.deadLetters, { topic: topicName('ledger', namespace), code: 'CONTRACT.DECODE_FAILED' })).toBe(2);
  });
});
