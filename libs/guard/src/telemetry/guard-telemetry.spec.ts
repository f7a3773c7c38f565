import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { testAgentKey } from '@gatehouse/contracts/testing';
import { type RecordedSpan, type RecordedTelemetry, recordTelemetry } from '@gatehouse/kafka/testing';
import { z } from 'zod';
import { createGuardedAgent } from '../agent/guarded-agent.js';
import { createInMemoryApprovalGateway } from '../approvals/in-memory-approval-gateway.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { createConnector, invokeConnector } from '../connector-sdk/connector.js';
import { CONNECTOR_EXECUTION_CONTEXT_KEY } from '../connector-sdk/context-keys.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { recordGateDecision } from '../internal/gate-audit.js';
import { denyPatterns } from '../policy-engine/policies/deny-patterns.js';
import { collectStreamText, scriptedModel } from '../testing/scripted-model.js';
import { gateOf, GUARD_METRIC } from './guard-telemetry.js';
import { GUARD_SPAN } from './spans.js';

const SECRET = 'launch code 0000-PLUTO';
const HOST_TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

function context(extra: Record<string, unknown> = {}): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'support', runId: 'run-1', entryPath: 'test', traceparent: HOST_TRACEPARENT, ...extra });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf-1', runId: 'run-1' });
  return rc;
}

function supportAgent(audit: AuditLogger, text: string) {
  return createGuardedAgent({
    id: 'support',
    name: 'Support',
    instructions: 'Answer from order data.',
    model: scriptedModel({ text }) as never,
    allowedRoles: ['operator'],
    policies: [denyPatterns(['launch code'])],
    audit,
  });
}

/** Every attribute value of every span, as text: what an operator's tracing backend would hold. */
const attributeTexts = (spans: readonly RecordedSpan[]) => spans.flatMap((s) => Object.values(s.attributes).map(String));
const named = (spans: readonly RecordedSpan[], name: string) => spans.filter((s) => s.name === name);

describe('guard telemetry with an SDK registered', () => {
  let telemetry: RecordedTelemetry;
  beforeEach(() => {
    telemetry = recordTelemetry();
  });
  afterEach(() => telemetry.stop());

  it('a turn is one invoke_agent span in the host trace, each gate its child, and the audit records name the gate spans', async () => {
    const audit = new AuditLogger();
    const agent = supportAgent(audit, 'Your order shipped on Monday.');
    const answer = await agent.generate('Where is order o-77?', { requestContext: context() });
    expect(answer.text).toBe('Your order shipped on Monday.');

    const [turn] = named(telemetry.spans, `${GUARD_SPAN.turn} support`);
    expect(turn).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', parentSpanId: 'b7ad6b7169203331', ended: true });
    expect(turn?.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.id': 'support', 'gatehouse.tenant': 'acme', 'gatehouse.stop_reason': 'finished' });
    const gates = telemetry.spans.filter((s) => s.name.startsWith('guard.'));
    expect(gates.map((s) => s.name)).toEqual(['guard.agent-entry', 'guard.input', 'guard.output']);
    for (const gate of gates) expect(gate).toMatchObject({ traceId: turn?.traceId, parentSpanId: turn?.spanId, ended: true });
    expect(gates[1]?.attributes).toMatchObject({ 'gatehouse.boundary': 'input', 'gatehouse.decision': 'allowed', 'gatehouse.code': 'POLICY.ALLOWED', 'gatehouse.policy': 'all', 'gen_ai.agent.id': 'support', 'gatehouse.run_id': 'run-1' });
    // The audit trail joins the trace at each decision's own span.
    expect(audit.events().map((e) => e.context.traceparent)).toEqual(gates.map((g) => `00-${g.traceId}-${g.spanId}-01`));
    expect(attributeTexts(telemetry.spans).join('\n')).not.toMatch(/o-77|shipped/);
  });

  it('counts every decision by boundary, decision and code, and observes each gate latency', async () => {
    const audit = new AuditLogger();
    const agent = supportAgent(audit, 'fine');
    await agent.generate(`Print the ${SECRET}`, { requestContext: context() });
    expect(telemetry.sum(GUARD_METRIC.decisions, { boundary: 'input', decision: 'denied', code: 'POLICY.DENIED' })).toBe(1);
    expect(telemetry.sum(GUARD_METRIC.decisions, { boundary: 'agent-entry', decision: 'allowed', code: 'RBAC.ALLOWED' })).toBe(1);
    const latencies = telemetry.measurements(GUARD_METRIC.gateLatency);
    expect(latencies.map((m) => m.attributes)).toEqual([{ gate: 'agent-entry', decision: 'allowed' }, { gate: 'input', decision: 'denied' }]);
    for (const m of latencies) expect(m.value).toBeGreaterThanOrEqual(0);
  });

  it('a refusal names the policy and code on its span, never the refused text or what matched', async () => {
    const agent = supportAgent(new AuditLogger(), 'fine');
    const refused = await agent.generate(`Print the ${SECRET}`, { requestContext: context() });
    expect(refused.tripwire?.code).toBe('POLICY.DENIED');
    const [input] = named(telemetry.spans, 'guard.input');
    expect(input?.attributes).toMatchObject({ 'gatehouse.decision': 'denied', 'gatehouse.code': 'POLICY.DENIED', 'gatehouse.policy': 'deny-patterns', 'gatehouse.policy.phase': 'input' });
    expect(named(telemetry.spans, `${GUARD_SPAN.turn} support`)[0]?.attributes['gatehouse.code']).toBe('POLICY.DENIED');
    expect(attributeTexts(telemetry.spans).join('\n')).not.toMatch(/launch|PLUTO|Print/);
    // Every attribute is a code, an enum, a configured name or an id from trusted context.
    const keys = new Set(telemetry.spans.flatMap((s) => Object.keys(s.attributes)));
    for (const key of keys) expect(key).toMatch(/^(gatehouse\.|gen_ai\.(operation\.name|agent\.(id|name)|tool\.(name|type|call\.id))$)/);
  });

  it('a streamed turn ends once its last chunk was judged, its gates under it', async () => {
    const agent = supportAgent(new AuditLogger(), 'Streamed answer.');
    const stream = await agent.stream('hello', { requestContext: context() });
    expect((await collectStreamText(stream.fullStream as never)).text).toBe('Streamed answer.');
    await stream.result();
    const [turn] = named(telemetry.spans, `${GUARD_SPAN.turn} support`);
    expect(turn?.attributes['gatehouse.entry']).toBe('stream');
    expect(turn?.ended).toBe(true);
    const gates = telemetry.spans.filter((s) => s.name.startsWith('guard.'));
    expect(gates.length).toBeGreaterThan(0);
    for (const gate of gates) expect(gate.parentSpanId).toBe(turn?.spanId);
  });

  it('a tool call parked on a person: execute_tool over its gates and the approval wait, whose span the request carries to the reviewer', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: testAgentKey('agent:refund-bot', ['acme']) });
    const audit = new AuditLogger();
    const refund = createConnector({
      id: 'payments.refund',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
      permissions: { sideEffect: 'write', requiresApproval: true },
      approvals: { gateway, waitMs: 5_000 },
      audit,
      execute: async (i: { orderId: string; amount: number }) => ({ refunded: i.amount }),
    });
    const call = invokeConnector(refund, { orderId: 'o-secret-9', amount: 40 }, { requestContext: context(), toolCallId: 'call-1' });
    const request = await gateway.waitForRequest();
    gateway.decide(request.payload.approvalId, { verdict: 'approve', comment: 'ok by me' });
    expect(await call).toEqual({ refunded: 40 });

    const [tool] = named(telemetry.spans, `${GUARD_SPAN.tool} payments.refund`);
    expect(tool?.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'payments.refund', 'gen_ai.tool.call.id': 'call-1' });
    const [wait] = named(telemetry.spans, GUARD_SPAN.approvalWait);
    expect(wait).toMatchObject({ parentSpanId: tool?.spanId, ended: true });
    expect(wait?.attributes).toMatchObject({ 'gatehouse.approval_id': request.payload.approvalId, 'gatehouse.code': 'CONNECTOR.APPROVAL_GRANTED' });
    expect(request.trace?.traceparent).toBe(`00-${wait?.traceId}-${wait?.spanId}-01`);
    const decisions = named(telemetry.spans, 'guard.tool');
    expect(decisions.map((s) => s.attributes['gatehouse.code'])).toEqual(['CONNECTOR.APPROVAL_PENDING', 'CONNECTOR.APPROVAL_GRANTED', 'CONNECTOR.ALLOWED']);
    for (const d of decisions) expect(d.parentSpanId).toBe(tool?.spanId);
    expect(telemetry.measurements(GUARD_METRIC.approvalWait).map((m) => m.attributes)).toEqual([{ code: 'CONNECTOR.APPROVAL_GRANTED' }]);
    expect(attributeTexts(telemetry.spans).join('\n')).not.toMatch(/o-secret-9|ok by me/);
  });
});

describe('guard telemetry without an SDK (the default)', () => {
  it('changes nothing on the record: the host traceparent stays, and decisions go on', async () => {
    const audit = new AuditLogger();
    const recorded = await recordGateDecision(audit, { boundary: 'tool', action: 'tool.execute', resource: 'connector:x', decision: 'allowed', code: 'CONNECTOR.ALLOWED', reason: 'r', context: { traceparent: HOST_TRACEPARENT } }, performance.now());
    expect(recorded).toBe(true);
    expect(audit.events()[0]?.context.traceparent).toBe(HOST_TRACEPARENT);
  });
});

describe('gateOf', () => {
  it.each([
    [{ boundary: 'guardrail', policy: { name: 'schema', phase: 'tool-args' } }, 'tool-args'],
    [{ boundary: 'guardrail', policy: { name: 'egress-check', phase: 'egress' } }, 'egress'],
    [{ boundary: 'guardrail', policy: { name: 'x', phase: 'not-a-placement' } }, 'guardrail'],
    [{ boundary: 'tool', policy: { name: 'network-egress' } }, 'egress'],
    [{ boundary: 'tool' }, 'tool'],
    [{ boundary: 'agent-entry' }, 'agent-entry'],
    [{ boundary: 'stream', policy: { name: 'deny-patterns', phase: 'output', channel: 'answer' } }, 'stream'],
  ] as const)('names the gate of %j: %s', (event, gate) => {
    expect(gateOf(event)).toBe(gate);
  });
});
