import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import {
  ApprovalDecidedV1,
  ApprovalRequestedV1,
  ContractError,
  createEvent,
  DecisionRecordedV1,
  decodeEvent,
  encodeEvent,
  GatehouseError,
} from './index.js';

const meta = { source: 'service:approval', tenant: 'acme', subject: 'appr-1' };
const hash = createHash('sha256').update('{}').digest('hex');

function requested() {
  return createEvent(ApprovalRequestedV1, meta, {
    approvalId: 'appr-1',
    scope: { tenant: 'acme', connectorId: 'refunds', executionId: 'run-7', argumentsHash: hash },
    arguments: { amount: 40, currency: 'EUR' },
    requester: { id: 'agent-1', role: 'support', kind: 'agent' },
    reason: 'connector requires approval',
    deadline: '2030-01-01T00:00:00.000Z',
  });
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof GatehouseError) return error.code;
    throw error;
  }
  throw new Error('expected a GatehouseError');
}

describe('event codec', () => {
  it('round-trips an event through encode and decode', () => {
    const event = requested();
    const decoded = decodeEvent('approvals', encodeEvent('approvals', event));
    expect(decoded).toEqual(event);
    expect(decoded.type).toBe('ApprovalRequested');
  });

  it('fills id, time, type, version and payload defaults when creating an event', () => {
    const event = requested();
    expect(event.id).toMatch(/^[\da-f-]{36}$/);
    expect(Date.parse(event.time)).not.toBeNaN();
    expect(event.version).toBe(1);
    expect(event.payload.redactedPaths).toEqual([]);
  });

  it('rejects malformed JSON with CONTRACT.MALFORMED_JSON', () => {
    expect(codeOf(() => decodeEvent('approvals', Buffer.from('{"type":')))).toBe('CONTRACT.MALFORMED_JSON');
  });

  it('rejects an empty record', () => {
    expect(codeOf(() => decodeEvent('audit', null))).toBe('CONTRACT.EMPTY_RECORD');
  });

  it('rejects an event type the topic does not carry, naming the type field', () => {
    const wrongTopic = { ...requested() };
    const error = (() => {
      try {
        decodeEvent('ledger', JSON.stringify(wrongTopic));
      } catch (e) {
        return e as ContractError;
      }
      throw new Error('expected a failure');
    })();
    expect(error).toBeInstanceOf(ContractError);
    expect(error.code).toBe('CONTRACT.UNKNOWN_EVENT_TYPE');
    expect(error.details).toMatchObject({ field: 'type', type: 'ApprovalRequested', topic: 'gatehouse.ledger.v1' });
  });

  it('rejects an unknown version of a known type', () => {
    expect(codeOf(() => decodeEvent('approvals', JSON.stringify({ ...requested(), version: 9 })))).toBe(
      'CONTRACT.UNKNOWN_EVENT_TYPE',
    );
  });

  it('names the nested field that is invalid and never echoes its value', () => {
    const event = requested();
    const secret = 'sk-live-DO-NOT-LEAK';
    const bad = { ...event, payload: { ...event.payload, scope: { ...event.payload.scope, argumentsHash: secret } } };
    try {
      decodeEvent('approvals', JSON.stringify(bad));
      throw new Error('expected a failure');
    } catch (e) {
      const error = e as ContractError;
      expect(error.code).toBe('CONTRACT.INVALID_EVENT');
      expect(error.details['field']).toBe('payload.scope.argumentsHash');
      expect(error.message).toContain('payload.scope.argumentsHash');
      expect(JSON.stringify(error.toJSON())).not.toContain(secret);
      expect(error.message).not.toContain(secret);
    }
  });

  it('rejects a record without a type with CONTRACT.INVALID_ENVELOPE', () => {
    expect(codeOf(() => decodeEvent('audit', '{"version":1}'))).toBe('CONTRACT.INVALID_ENVELOPE');
    expect(codeOf(() => decodeEvent('audit', '[1,2]'))).toBe('CONTRACT.INVALID_ENVELOPE');
  });

  it('tolerates fields added by a newer producer', () => {
    const event = { ...requested(), addedLater: { x: 1 } };
    const decoded = decodeEvent('approvals', JSON.stringify(event)) as Record<string, unknown>;
    expect(decoded['addedLater']).toEqual({ x: 1 });
  });

  it('refuses to encode an invalid event, so the log never receives one', () => {
    const event = requested();
    const invalid = { ...event, tenant: '' };
    expect(codeOf(() => encodeEvent('approvals', invalid))).toBe('CONTRACT.INVALID_EVENT');
  });

  it('requires edited arguments exactly for approve-with-edits', () => {
    const reviewer = { id: 'rev-1', role: 'approver' };
    expect(
      codeOf(() => createEvent(ApprovalDecidedV1, meta, { approvalId: 'appr-1', verdict: 'approve-with-edits', reviewer })),
    ).toBe('CONTRACT.INVALID_EVENT');
    expect(
      codeOf(() =>
        createEvent(ApprovalDecidedV1, meta, { approvalId: 'appr-1', verdict: 'deny', reviewer, editedArguments: { a: 1 } }),
      ),
    ).toBe('CONTRACT.INVALID_EVENT');
    const ok = createEvent(ApprovalDecidedV1, meta, {
      approvalId: 'appr-1',
      verdict: 'approve-with-edits',
      reviewer,
      editedArguments: { amount: 20 },
    });
    expect(ok.payload.reviewer.kind).toBe('human');
  });

  it('rejects non-finite numbers in JSON values', () => {
    const event = requested();
    expect(() =>
      createEvent(ApprovalRequestedV1, meta, { ...event.payload, arguments: { amount: Number.POSITIVE_INFINITY } }),
    ).toThrow(ContractError);
  });

  it('accepts a decision event with policy revision and redacted paths', () => {
    const decision = createEvent(DecisionRecordedV1, { source: 'guard:agent-a', tenant: 'acme', subject: 'run-1' }, {
      decisionId: '6f1f6a53-3c56-4a8e-9a77-3a8f2d36b0a1',
      boundary: 'tool',
      outcome: 'masked',
      code: 'TOOL.ARGS_MASKED',
      reason: 'card number masked',
      policy: { bundleId: 'default', revision: 3, ruleId: 'pci' },
      redactedPaths: ['payload.card'],
    });
    expect(decodeEvent('audit', encodeEvent('audit', decision))).toEqual(decision);
  });
});
