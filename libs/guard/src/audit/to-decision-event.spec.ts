import { describe, expect, it } from '@jest/globals';
import { ContractError, type DecisionRecorded, decodeEvent, encodeEvent, isDecisionRecorded } from '@gatehouse/contracts';
import { toDecisionEvent } from './to-decision-event.js';
import { type AuditEvent } from './types.js';

const OPTIONS = { source: 'guard:spec', defaultTenant: 'default-tenant' };
const ID = '6f1d2c1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f';

function event(overrides: Partial<AuditEvent> = {}): AuditEvent {
  return {
    id: ID,
    timestamp: '2026-11-02T10:00:00.000Z',
    boundary: 'output',
    action: 'agent.output.policy',
    resource: 'agent:support-bot',
    decision: 'denied',
    code: 'POLICY.DENIED',
    reason: 'policy denied the output',
    context: { tenant: 'acme', agentId: 'support-bot', runId: 'run-7', threadId: 'thread-3', entryPath: 'generate' },
    ...overrides,
  };
}

function roundTrip(e: AuditEvent): DecisionRecorded {
  const decoded = decodeEvent('audit', encodeEvent('audit', toDecisionEvent(e, OPTIONS)));
  if (!isDecisionRecorded(decoded)) throw new Error('not a decision');
  return decoded;
}

describe('toDecisionEvent', () => {
  it('maps every field and survives the contract encode and decode', () => {
    const decoded = roundTrip(
      event({
        actor: { id: 'u-1', role: 'support', kind: 'human' },
        policy: { name: 'pii', phase: 'output', channel: 'answer' },
        detections: ['email', 'jwt'],
        detail: { chunks: 3, held: true, mode: 'enforce', durationSeconds: 0.5 },
      }),
    );
    expect(decoded).toMatchObject({
      id: ID,
      type: 'DecisionRecorded',
      version: 1,
      source: 'guard:spec',
      time: '2026-11-02T10:00:00.000Z',
      tenant: 'acme',
      subject: 'run-7',
      correlationId: 'run-7',
    });
    expect(decoded.payload).toEqual({
      decisionId: ID,
      boundary: 'output',
      outcome: 'denied',
      code: 'POLICY.DENIED',
      reason: 'policy denied the output',
      actor: { id: 'u-1', role: 'support', kind: 'human' },
      agentId: 'support-bot',
      runId: 'run-7',
      threadId: 'thread-3',
      entryPath: 'generate',
      detections: ['email', 'jwt'],
      durationMs: 500,
      redactedPaths: [],
      attributes: {
        chunks: 3,
        held: true,
        mode: 'enforce',
        durationSeconds: 0.5,
        action: 'agent.output.policy',
        resource: 'agent:support-bot',
        'policy.name': 'pii',
        'policy.phase': 'output',
        'policy.channel': 'answer',
      },
    });
  });

  it('falls back to the default tenant, then subject to thread or "unscoped", with no correlation id without a run', () => {
    const byThread = roundTrip(event({ context: { threadId: 'thread-9' } }));
    expect(byThread).toMatchObject({ tenant: 'default-tenant', subject: 'thread-9' });
    expect(byThread.correlationId).toBeUndefined();
    const unscoped = roundTrip(event({ context: {} }));
    expect(unscoped.subject).toBe('unscoped');
    expect(unscoped.payload.runId).toBeUndefined();
  });

  it('cuts a reason over 512 characters to the contract bound', () => {
    const decoded = roundTrip(event({ reason: 'r'.repeat(2_000) }));
    expect(decoded.payload.reason).toHaveLength(512);
    expect(decoded.payload.reason.endsWith('…')).toBe(true);
    expect(roundTrip(event({ reason: 'x'.repeat(512) })).payload.reason).toBe('x'.repeat(512));
  });

  it('keeps the gate fields over same-named detail, and bounds detail strings', () => {
    const decoded = roundTrip(event({ detail: { action: 'forged', 'policy.name': 'forged', note: 'n'.repeat(300), ratio: Number.POSITIVE_INFINITY }, policy: { name: 'pii' } }));
    expect(decoded.payload.attributes).toMatchObject({ action: 'agent.output.policy', 'policy.name': 'pii', ratio: 'Infinity' });
    expect(String(decoded.payload.attributes?.['note'])).toHaveLength(256);
  });

  it('carries no field beyond the contract, so nothing inspected leaves the process', () => {
    const withContent = { ...event(), prompt: 'my card is 4111 1111 1111 1111', context: { tenant: 'acme', message: 'secret text' } } as unknown as AuditEvent;
    const wire = encodeEvent('audit', toDecisionEvent(withContent, OPTIONS)).toString('utf8');
    expect(wire).not.toContain('4111 1111'); // grouped: ids and timestamps are random digits
    expect(wire).not.toContain('secret text');
    const decoded = decodeEvent('audit', wire);
    expect(Object.keys(decoded).sort()).toEqual(['id', 'payload', 'source', 'subject', 'tenant', 'time', 'type', 'version']);
  });

  it('names the tool of a connector or tool-guardrail decision as toolId, and no tool for other resources', () => {
    const tool = roundTrip(event({ boundary: 'tool', resource: 'connector:payments.refund', code: 'CONNECTOR.ALLOWED', decision: 'allowed' }));
    expect(tool.payload.toolId).toBe('payments.refund');
    expect(roundTrip(event({ boundary: 'guardrail', resource: 'tool:orders.lookup' })).payload.toolId).toBe('orders.lookup');
    expect(roundTrip(event()).payload.toolId).toBeUndefined();
    expect(roundTrip(event({ resource: 'connector:' })).payload.toolId).toBeUndefined();
  });

  it('names the policy bundle version a gatekeeper decision was made under as its policy reference', () => {
    const gated = roundTrip(event({ boundary: 'guardrail', resource: 'tool:payments.refund', decision: 'allowed', code: 'GUARDRAIL.ALLOWED', detections: ['gatekeeper.allow', 'gatekeeper.bundle:refunds@12', 'gatekeeper.policy:limit'] }));
    expect(gated.payload.policy).toEqual({ bundleId: 'refunds', revision: 12 });
    expect(roundTrip(event({ detections: ['gatekeeper.bundle:local@-'] })).payload.policy).toBeUndefined();
    expect(roundTrip(event({ detections: ['pii.email'] })).payload.policy).toBeUndefined();
  });

  it('is pure: mapping the same event twice yields the same event', () => {
    expect(toDecisionEvent(event(), OPTIONS)).toEqual(toDecisionEvent(event(), OPTIONS));
  });

  it('throws a ContractError naming the field for what the contract cannot take', () => {
    expect(() => toDecisionEvent(event({ code: 'C'.repeat(129) }), OPTIONS)).toThrow(ContractError);
    expect(() => toDecisionEvent(event({ context: { tenant: '' } }), OPTIONS)).toThrow('"tenant"');
  });
});
