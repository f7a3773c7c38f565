import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApprovalEvent } from '@gatehouse/approvals';
import { ApprovalRequestedV2, createEvent, signClaim } from '@gatehouse/contracts';
import { TEST_AGENT_KEY } from '@gatehouse/contracts/testing';
import { type DecodedRecord, EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, type RecordedTelemetry, recordTelemetry, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { type Kafka } from 'kafkajs';
import { type ApprovalApp, bearer, startApprovalApp, testReviewer } from '../testing/approval-app.js';
import { testRequest } from '../testing/requests.js';

// The decision carries the agent's trace on: in its envelope and its record headers, and with
// tracing on as a span of the request's trace. Real broker and PostgreSQL.
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const REQUEST_TRACE = { traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` };

const alice = testReviewer('user:alice', { tenants: ['acme'] });
const carol = testReviewer('user:carol', { tenants: ['globex'] });

let kafka: Kafka;
let database: TestDatabase;
let telemetry: RecordedTelemetry | undefined;
const closing: (() => Promise<void>)[] = [];
let schemas = 0;

beforeAll(async () => {
  kafka = testKafka('approval-decision-trace-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
  telemetry?.stop();
  telemetry = undefined;
});

afterAll(async () => {
  await database.drop();
});

/** A service and a request the agent appended with its trace context, projected. */
async function requested(): Promise<{ app: ApprovalApp; approvalId: string; namespace: string }> {
  schemas += 1;
  const namespace = await provisionedNamespace(kafka);
  const app = await startApprovalApp({ namespace, schema: `trace_t${schemas}`, databaseUrl: database.url, reviewers: [alice, carol] });
  closing.push(() => app.close());
  const { event, approvalId } = testRequest({ unsigned: true });
  const { id: _id, time: _time, type: _type, version: _version, payload, ...meta } = event;
  const traced = signClaim(createEvent(ApprovalRequestedV2, { ...meta, trace: REQUEST_TRACE }, payload), TEST_AGENT_KEY);
  const producer = await EventProducer.connect(kafka, { namespace });
  closing.push(() => producer.close());
  await producer.publish('approvals', traced);
  await waitFor(async () => ((await app.get(`/v1/approvals/${approvalId}`, bearer(alice))).status === 200 ? true : undefined), { what: 'the request projected' });
  return { app, approvalId, namespace };
}

async function decisionRecord(namespace: string, approvalId: string): Promise<DecodedRecord<'approvals'>> {
  const records: DecodedRecord<'approvals'>[] = [];
  await replayTopic(kafka, 'approvals', { namespace, onRecord: (r) => void records.push(r) });
  const found = records.find((r) => r.event.type === 'ApprovalDecided' && (r.event as ApprovalEvent).payload.approvalId === approvalId);
  if (!found) throw new Error('no decision on the log');
  return found;
}

describe('the trace a decision carries', () => {
  it("is its request's, in the envelope and the record headers, with tracing off", async () => {
    const { app, approvalId, namespace } = await requested();
    expect((await app.post(`/v1/approvals/${approvalId}/decision`, { verdict: 'approve' }, bearer(alice))).status).toBe(200);
    const record = await decisionRecord(namespace, approvalId);
    expect(record.event.trace).toEqual(REQUEST_TRACE);
    expect(record.trace).toEqual(REQUEST_TRACE);
  });

  it("is a span of the request's trace with tracing on, linked to the reviewer's HTTP request, which the agent's reader continues", async () => {
    telemetry = recordTelemetry();
    const { app, approvalId, namespace } = await requested();
    expect((await app.post(`/v1/approvals/${approvalId}/decision`, { verdict: 'deny', comment: 'not this one' }, bearer(alice))).status).toBe(200);
    const spans = telemetry.spans;
    const [decide] = spans.filter((s) => s.name === 'approval.decide');
    const [http] = spans.filter((s) => s.name === 'POST /v1/approvals/:approvalId/decision');
    expect(decide).toMatchObject({ traceId: TRACE_ID, parentSpanId: 'b7ad6b7169203331', ended: true });
    expect(decide?.attributes).toEqual({ 'gatehouse.approval_id': approvalId, 'gatehouse.tenant': 'acme', 'gen_ai.tool.name': 'payments.refund', 'gatehouse.verdict': 'deny' });
    expect(decide?.links.map((l) => l.context.spanId)).toEqual([http?.spanId]);
    expect(http?.traceId).not.toBe(TRACE_ID);
    const record = await decisionRecord(namespace, approvalId);
    expect(record.trace).toEqual({ traceparent: `00-${TRACE_ID}-${decide?.spanId}-01` });
    // The service applied the request and its own decision in spans of the same trace.
    await waitFor(() => (spans.filter((s) => s.name === 'approvals.apply' && s.traceId === TRACE_ID && s.ended).length >= 2 ? true : undefined), { what: 'both records applied in the trace' });
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('not this one');
  });

  it('is never joined by a caller who may not review the approval: refused before any span enters the trace', async () => {
    telemetry = recordTelemetry();
    const { app, approvalId } = await requested();
    expect((await app.post(`/v1/approvals/${approvalId}/decision`, { verdict: 'approve' }, bearer(carol))).status).toBe(403);
    expect(telemetry.spans.filter((s) => s.name === 'approval.decide')).toEqual([]);
    expect(telemetry.spans.filter((s) => s.traceId === TRACE_ID).map((s) => s.name)).toEqual(['approvals.apply']);
  });
});
