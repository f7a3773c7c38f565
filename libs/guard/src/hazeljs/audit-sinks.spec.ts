import { afterEach, describe, expect, it } from '@jest/globals';
import { type Span, type SpanContext, trace, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { type DecisionRecorded, GatehouseError, type JsonValue, type TopicEvent } from '@gatehouse/contracts';
import { type AuditEvent } from '../audit/types.js';
import {
  AgentGatekeeper,
  type AgentGatekeeperPolicy,
  CompositeAuditSink,
  ConsoleAuditSink,
  createAuditTransportSink,
  createKafkaAuditSink,
  createOtelAuditSink,
  fromFunction,
  InMemoryAuditSink,
  type ToolInvocationContext,
} from './index.js';

// Row 5: HazelJS's sinks, each receiving every decision of a gatekeeper (never its input).
const allowSmall: AgentGatekeeperPolicy<{ amount: number }> = { id: 'small', version: '1', rules: { allowWhen: ({ input }) => input.amount <= 100 } };
const tool = fromFunction('stripe.refund', async (input: { amount: number }) => ({ refunded: input.amount }));
const context = (input: JsonValue) => ({ invocationId: 'inv-1', runId: 'run-1', agentId: 'refund-agent', tenantId: 'acme', toolName: 'stripe.refund', input, environment: 'production', timestamp: new Date() }) as ToolInvocationContext<JsonValue>;
const event = (code: string): AuditEvent => ({ id: `e-${code}`, timestamp: new Date(0).toISOString(), boundary: 'guardrail', action: 'guardrail.tool-args', resource: 'tool:t', decision: 'allowed', code, reason: 'r', context: { tenant: 'acme' }, detections: ['gatekeeper.allow'] });

async function run(auditSink: unknown, amount = 10, extra: Record<string, unknown> = {}): Promise<unknown> {
  const gk = new AgentGatekeeper({ policies: [allowSmall as AgentGatekeeperPolicy<never>], auditSink: auditSink as never, ...extra });
  return gk.execute({ context: context({ amount, secret: 'sk_live_999' }), tool }).then((r) => r.output, (e: unknown) => e);
}

describe('ConsoleAuditSink and InMemoryAuditSink', () => {
  it('the console sink writes one JSON line per record, with no input', async () => {
    const lines: string[] = [];
    await run(new ConsoleAuditSink({ print: (line) => lines.push(line) }));
    expect(lines.map((l) => (JSON.parse(l) as AuditEvent).code)).toEqual(['GUARDRAIL.ALLOWED', 'HAZELJS.TOOL_COMPLETED']);
    expect(lines.join('\n')).not.toContain('sk_live_999');
    expect(() => new ConsoleAuditSink({ stream: process.stderr } as never)).toThrow(GatehouseError);
  });

  it('the in-memory sink keeps the events, dropping (and counting) the oldest past its bound', () => {
    const sink = new InMemoryAuditSink({ maxEvents: 2 });
    for (const code of ['A', 'B', 'C']) sink.write(event(code));
    expect(sink.events.map((e) => e.code)).toEqual(['B', 'C']);
    expect(sink.evicted).toBe(1);
  });
});

describe('CompositeAuditSink', () => {
  it('gives every part every event even when one fails, and is required when any part is', async () => {
    const a = new InMemoryAuditSink();
    const b = new InMemoryAuditSink();
    const composite = new CompositeAuditSink([a, () => { throw new Error('down'); }, b]);
    await expect(composite.write(event('X'))).rejects.toMatchObject({ code: 'AUDIT.SINKS_FAILED' });
    expect([a.events.length, b.events.length]).toEqual([1, 1]);
    expect(composite.required).toBe(false);
    expect(new CompositeAuditSink([a, { write: () => undefined, required: true }]).required).toBe(true);
    expect(() => new CompositeAuditSink([])).toThrow(GatehouseError);
  });
});

describe('createKafkaAuditSink (kafkaAuditSink) and createAuditTransportSink', () => {
  it('publishes each decision as a DecisionRecorded naming the tool, the policy and the bundle', async () => {
    const published: TopicEvent<'audit'>[] = [];
    const sink = createKafkaAuditSink({ publisher: { publishMany: async (events) => void published.push(...events) }, mode: 'required', source: 'guard:refunds', defaultTenant: 'acme' });
    expect(await run(sink)).toEqual({ refunded: 10 });
    await sink.close();
    const decision = published.find((e) => e.type === 'DecisionRecorded') as DecisionRecorded;
    expect(decision.payload).toMatchObject({ boundary: 'guardrail', outcome: 'allowed', code: 'GUARDRAIL.ALLOWED', toolId: 'stripe.refund', agentId: 'refund-agent', runId: 'run-1' });
    expect(decision.payload.detections).toEqual(expect.arrayContaining(['gatekeeper.policy:small', 'gatekeeper.bundle:hazeljs@-']));
    expect(JSON.stringify(published)).not.toContain('sk_live_999');
  });

  it('in required mode, an audit topic that does not take the decision fails the call closed', async () => {
    let executed = 0;
    const sink = createKafkaAuditSink({ publisher: { publishMany: async () => { throw new Error('broker down'); } }, mode: 'required', source: 'guard:refunds', defaultTenant: 'acme', deliveryTimeoutMs: 200 });
    const counting = fromFunction('stripe.refund', async () => ++executed);
    const gk = new AgentGatekeeper({ policies: [allowSmall as AgentGatekeeperPolicy<never>], auditSink: sink, audit: { critical: false } });
    await expect(gk.execute({ context: context({ amount: 1 }), tool: counting })).rejects.toMatchObject({ code: 'HAZELJS.POLICY' });
    expect(executed).toBe(0);
    await sink.close().catch(() => undefined);
  });

  it("refuses HazelJS's transport sink, naming the audit topic sink", () => {
    expect(() => createAuditTransportSink({})).toThrow(expect.objectContaining({ code: 'HAZELJS.UNSUPPORTED', details: expect.objectContaining({ use: expect.stringContaining('createKafkaAuditSink') }) }) as never);
  });
});

/** A tracer provider as an OpenTelemetry SDK would register one, recording the spans it starts. */
function recordingProvider(spans: { name: string; attributes: Record<string, unknown>; ended: boolean }[]): TracerProvider {
  const spanContext: SpanContext = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };
  const tracer = {
    startSpan(name: string, options?: { attributes?: Record<string, unknown> }): Span {
      const record = { name, attributes: { ...options?.attributes }, ended: false };
      spans.push(record);
      const span = {
        spanContext: () => spanContext,
        setAttribute: () => span,
        setAttributes: () => span,
        addEvent: () => span,
        addLink: () => span,
        addLinks: () => span,
        setStatus: () => span,
        updateName: () => span,
        end: () => void (record.ended = true),
        isRecording: () => true,
        recordException: () => undefined,
      };
      return span as unknown as Span;
    },
  };
  return { getTracer: () => tracer as unknown as Tracer };
}

describe('createOtelAuditSink (@opentelemetry/api only)', () => {
  afterEach(() => trace.disable());

  it('writes a span per record through the registered tracer provider, with the decision as attributes', async () => {
    const spans: { name: string; attributes: Record<string, unknown>; ended: boolean }[] = [];
    trace.setGlobalTracerProvider(recordingProvider(spans));
    expect(await run(createOtelAuditSink({ trace }))).toEqual({ refunded: 10 });
    // The guard's own gate spans reach the same provider; the sink's are the `gatehouse.audit` ones.
    expect(spans.map((s) => s.name).filter((name) => name.startsWith('guard.'))).toEqual(['guard.tool-args', 'guard.tool']);
    const audit = spans.filter((s) => s.name.startsWith('gatehouse.audit '));
    expect(audit.map((s) => [s.name, s.attributes['gatehouse.code'], s.ended])).toEqual([
      ['gatehouse.audit guardrail.tool-args', 'GUARDRAIL.ALLOWED', true],
      ['gatehouse.audit tool.execute', 'HAZELJS.TOOL_COMPLETED', true],
    ]);
    expect(audit[0]?.attributes).toMatchObject({ 'gatehouse.tenant': 'acme', 'gatehouse.agent_id': 'refund-agent', 'gatehouse.decision': 'allowed' });
    expect(JSON.stringify(spans)).not.toContain('sk_live_999');
  });

  it('with no tracer provider registered the spans would vanish: the write fails, and an enforcing gatekeeper fails closed', async () => {
    const sink = createOtelAuditSink();
    expect(() => sink.write(event('X'))).toThrow(expect.objectContaining({ code: 'AUDIT.OTEL_NOT_RECORDING' }) as never);
    expect(await run(sink)).toMatchObject({ code: 'HAZELJS.POLICY' });
  });

  it('refuses anything but { trace }', () => {
    expect(() => createOtelAuditSink({ trace, tracer: 'x' } as never)).toThrow(GatehouseError);
    expect(() => createOtelAuditSink({} as never)).toThrow(GatehouseError);
  });
});
