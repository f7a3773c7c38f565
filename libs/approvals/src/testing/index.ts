// Test data shared by every suite that plays a guard asking for approval.
export * from './random-log.js';
import { randomUUID } from 'node:crypto';
import { type Actor, type AgentKey, ApprovalCancelledV1, ApprovalRequestedV2, createEvent, type JsonValue, type Scope, signClaim } from '@gatehouse/contracts';
import { TEST_AGENT_KEY } from '@gatehouse/contracts/testing';
import { approvalIdForCall } from '../approval-id.js';
import { commitArguments } from '../commitment.js';

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
  /** The agent key that signs the request (default TEST_AGENT_KEY). */
  readonly agentKey?: AgentKey;
  readonly toolCallId?: string;
  /** Concrete pointers of `arguments` to redact behind digests. */
  readonly redactedPaths?: readonly string[];
  /** Leave the request unsigned (an unattributed claim). */
  readonly unsigned?: boolean;
  /** Why approval is needed (default `refunds need a person`). */
  readonly reason?: string;
}

/** The input schema of the refund tool the tests ask about (what zod's toJSONSchema makes of it). */
export const REFUND_SCHEMA: Record<string, JsonValue> = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { orderId: { type: 'string', minLength: 1 }, amount: { type: 'number', exclusiveMinimum: 0, maximum: 500 } },
  required: ['orderId', 'amount'],
  additionalProperties: false,
};

/**
 * An ApprovalRequested event as a guard would append it: second edition, signed by `agentKey`
 * (default: the process's TEST_AGENT_KEY, agent `agent:billing`), with a fresh execution id.
 * `requester` overrides the requester the event names (a forgery unless it is the key's agent).
 */
export function testRequest(options: TestRequestOptions = {}) {
  const agentKey = options.agentKey ?? TEST_AGENT_KEY;
  const args = options.arguments ?? { orderId: `o-${randomUUID().slice(0, 8)}`, amount: 42 };
  const tenant = options.tenant ?? 'acme';
  const connectorId = options.connectorId ?? 'payments.refund';
  const executionId = `run-${randomUUID()}`;
  const toolCallId = options.toolCallId ?? `call-${randomUUID().slice(0, 8)}`;
  const committed = commitArguments(args, options.redactedPaths ?? [], agentKey, { tenant, connectorId, executionId, toolCallId });
  const scope: Scope = { tenant, connectorId, executionId, argumentsHash: committed.argumentsHash };
  const requester = options.requester ?? { id: agentKey.agent.id, role: 'agent', kind: 'agent' as const };
  const approvalId = approvalIdForCall(scope, requester.id, toolCallId);
  const unsigned = createEvent(
    ApprovalRequestedV2,
    { source: 'guard:test', tenant: scope.tenant, subject: approvalId, ...(options.correlationId !== undefined && { correlationId: options.correlationId }) },
    {
      approvalId,
      scope,
      arguments: committed.view,
      redactedPaths: Object.keys(committed.redactionDigests).sort(),
      redactionDigests: { ...committed.redactionDigests },
      toolCallId,
      inputSchema: options.inputSchema ?? REFUND_SCHEMA,
      ...(options.toolDescription !== undefined && { toolDescription: options.toolDescription }),
      ...(options.dryRunPreview !== undefined && { dryRunPreview: options.dryRunPreview }),
      requester,
      reason: options.reason ?? 'refunds need a person',
      deadline: new Date(Date.now() + (options.deadlineMs ?? 60_000)).toISOString(),
      ...(options.quorum !== undefined && { quorum: options.quorum }),
      ...(options.onBehalfOf !== undefined && { onBehalfOf: options.onBehalfOf }),
    },
  );
  const event = options.unsigned ? unsigned : signClaim(unsigned, agentKey);
  return { approvalId, scope, event, toolCallId, arguments: args };
}

/** A cancellation of `approvalId` in `tenant`, signed by `agentKey` (default TEST_AGENT_KEY) and naming `by` (default the key's agent). */
export function testCancel(approvalId: string, options: { tenant?: string; agentKey?: AgentKey; by?: Actor; unsigned?: boolean } = {}) {
  const agentKey = options.agentKey ?? TEST_AGENT_KEY;
  const unsigned = createEvent(
    ApprovalCancelledV1,
    { source: 'guard:test', tenant: options.tenant ?? 'acme', subject: approvalId },
    { approvalId, by: options.by ?? { id: agentKey.agent.id, role: 'agent', kind: 'agent' }, reason: 'the requester aborted the call' },
  );
  return options.unsigned ? unsigned : signClaim(unsigned, agentKey);
}
