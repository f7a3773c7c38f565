// Test data shared by every suite that plays a guard asking for approval.
import { createHash, randomUUID } from 'node:crypto';
import { approvalIdForScope } from '../approval-id.js';
import { type Actor, ApprovalRequestedV1, canonicalJson, createEvent, type JsonValue, type Scope } from '@gatehouse/contracts';

export interface TestRequestOptions {
  readonly tenant?: string;
  readonly connectorId?: string;
  readonly arguments?: JsonValue;
  readonly requester?: Actor;
  readonly deadlineMs?: number;
  readonly inputSchema?: Record<string, JsonValue>;
  readonly toolDescription?: string;
  readonly dryRunPreview?: JsonValue;
  readonly correlationId?: string;
  readonly quorum?: { readonly required: number; readonly reviewers: string[] };
  readonly onBehalfOf?: Actor;
}

/** The input schema of the refund tool the tests ask about (what zod's toJSONSchema makes of it). */
export const REFUND_SCHEMA: Record<string, JsonValue> = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { orderId: { type: 'string', minLength: 1 }, amount: { type: 'number', exclusiveMinimum: 0, maximum: 500 } },
  required: ['orderId', 'amount'],
  additionalProperties: false,
};

/** An ApprovalRequested event as a guard would append it, with a fresh execution id. */
export function testRequest(options: TestRequestOptions = {}) {
  const args = options.arguments ?? { orderId: `o-${randomUUID().slice(0, 8)}`, amount: 42 };
  const scope: Scope = {
    tenant: options.tenant ?? 'acme',
    connectorId: options.connectorId ?? 'payments.refund',
    executionId: `run-${randomUUID()}`,
    argumentsHash: createHash('sha256').update(canonicalJson(args)).digest('hex'),
  };
  const approvalId = approvalIdForScope(scope);
  const event = createEvent(
    ApprovalRequestedV1,
    { source: 'guard:test', tenant: scope.tenant, subject: approvalId, ...(options.correlationId !== undefined && { correlationId: options.correlationId }) },
    {
      approvalId,
      scope,
      arguments: args,
      redactedPaths: [],
      inputSchema: options.inputSchema ?? REFUND_SCHEMA,
      ...(options.toolDescription !== undefined && { toolDescription: options.toolDescription }),
      ...(options.dryRunPreview !== undefined && { dryRunPreview: options.dryRunPreview }),
      requester: options.requester ?? { id: 'agent:billing', role: 'agent', kind: 'agent' },
      reason: 'refunds need a person',
      deadline: new Date(Date.now() + (options.deadlineMs ?? 60_000)).toISOString(),
      ...(options.quorum !== undefined && { quorum: options.quorum }),
      ...(options.onBehalfOf !== undefined && { onBehalfOf: options.onBehalfOf }),
    },
  );
  return { approvalId, scope, event };
}
