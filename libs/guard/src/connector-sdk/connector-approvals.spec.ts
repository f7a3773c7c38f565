import { describe, expect, it } from '@jest/globals';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { RequestContext } from '@mastra/core/request-context';
import { InMemoryStore } from '@mastra/core/storage';
import { approvalIdForCall, commitArguments } from '@gatehouse/approvals';
import { testAgentKey } from '@gatehouse/contracts/testing';
import { z } from 'zod';
import { createGuardedAgent } from '../agent/guarded-agent.js';
import { createInMemoryApprovalGateway, type InMemoryApprovalGateway } from '../approvals/in-memory-approval-gateway.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { scriptedModel } from '../testing/scripted-model.js';
import { createConnector, invokeConnector } from './connector.js';
import { CONNECTOR_EXECUTION_CONTEXT_KEY, CONNECTOR_GRANTS_CONTEXT_KEY, IDEMPOTENCY_KEY_CONTEXT_KEY } from './context-keys.js';
import { InMemoryIdempotencyStore } from './stores/in-memory-idempotency-store.js';
import { bindGrant } from './trusted-context.js';
import { type ConnectorConfig } from './types.js';

const CARD = '4111111111111111';
const input = { orderId: 'o-1', amount: 40, card: { number: CARD, holder: 'Ada' } };
const inputSchema = z.object({ orderId: z.string(), amount: z.number().positive().max(100), card: z.object({ number: z.string(), holder: z.string() }) });
type Input = z.infer<typeof inputSchema>;

function context(extra: Record<string, unknown> = {}): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-1', entryPath: 'test' });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf-1', runId: 'run-1' });
  for (const [k, v] of Object.entries(extra)) rc.set(k, v);
  return rc;
}

function refunds(gateway: InMemoryApprovalGateway | undefined, extra: Partial<ConnectorConfig<Input, unknown>> = {}) {
  const audit = new AuditLogger();
  const executed: Input[] = [];
  const connector = createConnector<Input, unknown>({
    id: 'payments.refund',
    description: 'Refund an order to the card it was paid with',
    inputSchema,
    permissions: { sideEffect: 'write', requiresApproval: true, dryRun: true },
    dryRunExecute: async (i) => ({ wouldRefund: i.amount, order: i.orderId }),
    execute: async (i) => {
      executed.push(i);
      return { refunded: i.amount };
    },
    audit,
    ...(gateway ? { approvals: { gateway, waitMs: 5_000, redactPaths: ['/card/number'] } } : {}),
    ...extra,
  });
  return { connector, audit, executed };
}

/** The agent whose key signs the requests: the in-memory gateway trusts it. */
const AGENT = testAgentKey('agent:refund-bot', ['acme']);
const call = { tenant: 'acme', connectorId: 'payments.refund', executionId: 'wf-1/run-1', toolCallId: 'direct' };
/** The scope of a direct call: the arguments hash commits to `i` with the card number behind a salted digest. */
const scopeOf = (i: typeof input) => ({ tenant: 'acme', connectorId: 'payments.refund', executionId: call.executionId, argumentsHash: commitArguments(i, ['/card/number'], AGENT, call).argumentsHash });
const idOf = (i: typeof input) => approvalIdForCall(scopeOf(i), AGENT.agent.id, call.toolCallId);
const APPROVAL_ID = idOf(input);

describe('connector approvals through the log', () => {
  it('asks a reviewer, waits, and runs exactly once after approval, with request, decision and execution correlated', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, audit, executed } = refunds(gateway);
    const call = invokeConnector(connector, input, { requestContext: context() });
    const request = await gateway.waitForRequest();
    expect(executed).toHaveLength(0);
    expect(request.correlationId).toBe('run-1');
    expect(request.payload).toMatchObject({
      approvalId: APPROVAL_ID,
      scope: scopeOf(input),
      arguments: { orderId: 'o-1', amount: 40, card: { number: '[REDACTED]', holder: 'Ada' } },
      redactedPaths: ['/card/number'],
      toolDescription: 'Refund an order to the card it was paid with',
      dryRunPreview: { wouldRefund: 40, order: 'o-1' },
      requester: { id: 'agent:refund-bot', role: 'agent', kind: 'agent' },
      onBehalfOf: { id: 'user-1', role: 'operator', kind: 'human' },
      reason: 'the connector manifest requires approval',
    });
    expect(request.payload.quorum).toBeUndefined();
    expect(request.payload.inputSchema).toMatchObject({ type: 'object', properties: { amount: { type: 'number' } } });
    expect(audit.events().map((e) => `${e.decision}:${e.code}`)).toEqual(['approval-required:CONNECTOR.APPROVAL_PENDING']);

    gateway.decide(APPROVAL_ID, { verdict: 'approve' });
    await expect(call).resolves.toEqual({ refunded: 40 });
    expect(executed).toEqual([input]);
    const events = audit.events();
    expect(events.map((e) => `${e.decision}:${e.code}`)).toEqual(['approval-required:CONNECTOR.APPROVAL_PENDING', 'allowed:CONNECTOR.APPROVAL_GRANTED', 'allowed:CONNECTOR.ALLOWED']);
    for (const e of events) {
      expect(e.detail?.['approvalId']).toBe(APPROVAL_ID);
      expect(e.context).toMatchObject({ tenant: 'acme', runId: 'run-1' });
    }
    expect(events[2]?.detail).toMatchObject({ approvalPublished: true, approvalEdited: false });
    expect(JSON.stringify([events, gateway.records])).not.toContain(CARD);
  });

  it('runs an approved edit with the edited arguments, putting back what stayed redacted', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed, audit } = refunds(gateway);
    const call = invokeConnector(connector, input, { requestContext: context() });
    const request = await gateway.waitForRequest();
    gateway.decide(APPROVAL_ID, { verdict: 'approve-with-edits', editedArguments: { ...(request.payload.arguments as object), amount: 25 } });
    await expect(call).resolves.toEqual({ refunded: 25 });
    expect(executed).toEqual([{ ...input, amount: 25 }]);
    expect(audit.events().at(-1)?.detail).toMatchObject({ approvalEdited: true });
  });

  it('refuses an approved edit that fails the input schema, and runs nothing', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed, audit } = refunds(gateway);
    const call = invokeConnector(connector, input, { requestContext: context() });
    await gateway.waitForRequest();
    gateway.decide(APPROVAL_ID, { verdict: 'approve-with-edits', editedArguments: { ...input, amount: 5_000 } });
    await expect(call).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_EDIT_INVALID' });
    expect(executed).toHaveLength(0);
    expect(audit.events().at(-1)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.APPROVAL_EDIT_INVALID', detail: { approvalId: APPROVAL_ID } });
  });

  it.each([
    ['a denial', 'CONNECTOR.APPROVAL_DENIED', false],
    ['an expiry', 'CONNECTOR.APPROVAL_EXPIRED', false],
    ['an unreadable log', 'CONNECTOR.APPROVAL_UNAVAILABLE', true],
  ] as const)('fails closed on %s with %s', async (what, code, retryable) => {
    let clock = Date.now();
    const gateway = createInMemoryApprovalGateway({ now: () => clock, agentKey: AGENT });
    const { connector, executed, audit } = refunds(gateway, { approvals: { gateway, deadlineMs: 1_000, waitMs: 5_000, redactPaths: ['/card/number'] } });
    const call = invokeConnector(connector, input, { requestContext: context() });
    await gateway.waitForRequest();
    if (what === 'a denial') gateway.decide(APPROVAL_ID, { verdict: 'deny', comment: 'not this one' });
    if (what === 'an expiry') {
      clock += 2_000;
      gateway.expire(APPROVAL_ID);
    }
    if (what === 'an unreadable log') gateway.setAvailable(false);
    const error = await call.catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ConnectorPolicyError', code, retryable, policy: 'approval' });
    expect(executed).toHaveLength(0);
    expect(audit.events().map((e) => `${e.decision}:${e.code}:${String(e.detail?.['approvalId'])}`)).toEqual([`approval-required:CONNECTOR.APPROVAL_PENDING:${APPROVAL_ID}`, `denied:${code}:${APPROVAL_ID}`]);
    expect(JSON.stringify(error) + String(error)).not.toContain(CARD);
  });

  it('times out without withdrawing; a retry of the same call waits on the same approval and runs once approved', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed } = refunds(gateway, { approvals: { gateway, waitMs: 30, redactPaths: ['/card/number'] } });
    await expect(invokeConnector(connector, input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_TIMEOUT', retryable: true });
    expect(gateway.approval(APPROVAL_ID)?.status).toBe('pending');
    gateway.decide(APPROVAL_ID, { verdict: 'approve' });
    await expect(invokeConnector(connector, input, { requestContext: context() })).resolves.toEqual({ refunded: 40 });
    expect(gateway.requests()).toHaveLength(1);
    expect(executed).toHaveLength(1);
  });

  it('withdraws the request when the caller aborts', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed } = refunds(gateway);
    const controller = new AbortController();
    const call = invokeConnector(connector, input, { requestContext: context(), abortSignal: controller.signal });
    await gateway.waitForRequest();
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_CANCELLED' });
    expect(gateway.approval(APPROVAL_ID)?.status).toBe('cancelled');
    expect(executed).toHaveLength(0);
  });

  it('asks without a preview when the dry run throws or is not JSON, never failing open', async () => {
    for (const dryRunExecute of [async () => Promise.reject(new Error(`card ${CARD} invalid`)), async () => ({ at: new Date() })]) {
      const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
      const { connector, executed } = refunds(gateway, { dryRunExecute: dryRunExecute as never });
      const call = invokeConnector(connector, input, { requestContext: context() });
      const request = await gateway.waitForRequest();
      expect(request.payload.dryRunPreview).toBeUndefined();
      expect(executed).toHaveLength(0);
      gateway.decide(APPROVAL_ID, { verdict: 'deny' });
      await expect(call).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_DENIED' });
    }
  });

  it('binds the approval to the arguments: other arguments are another approval', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed } = refunds(gateway, { approvals: { gateway, waitMs: 30, redactPaths: ['/card/number'] } });
    await expect(invokeConnector(connector, input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_TIMEOUT' });
    gateway.decide(APPROVAL_ID, { verdict: 'approve' });
    await expect(invokeConnector(connector, { ...input, amount: 99 }, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_TIMEOUT' });
    expect(gateway.requests().map((r) => r.payload.approvalId)).toEqual([APPROVAL_ID, idOf({ ...input, amount: 99 })]);
    expect(executed).toHaveLength(0);
  });

  it('still honours a matching grant in context without asking, and without a gateway still refuses outright', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed } = refunds(gateway);
    const grant = bindGrant({ scope: 'run', connectorId: 'payments.refund', runId: 'run-1', approvalId: 'appr_from_host' } as const, { tenant: 'acme', input });
    await expect(invokeConnector(connector, input, { requestContext: context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [grant] }) })).resolves.toEqual({ refunded: 40 });
    expect(gateway.records).toHaveLength(0);
    expect(executed).toHaveLength(1);
    const bare = refunds(undefined);
    await expect(invokeConnector(bare.connector, input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_REQUIRED' });
  });

  it('refuses to ask without a trusted execution to bind the approval to', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector } = refunds(gateway);
    const rc = new RequestContext();
    rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
    await expect(invokeConnector(connector, input, { requestContext: rc })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_REQUIRED' });
    expect(gateway.records).toHaveLength(0);
  });

  it('fails closed when the approval-required decision cannot be recorded, before asking', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const failing = new AuditLogger({ sink: { required: true, write: () => Promise.reject(new Error('down')) } });
    const { connector, executed } = refunds(gateway, { audit: failing });
    await expect(invokeConnector(connector, input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.AUDIT_UNAVAILABLE' });
    expect(gateway.records).toHaveLength(0);
    expect(executed).toHaveLength(0);
  });

  it('asks nobody for a connector that does not require approval, though it has a gateway for guardrails to park calls on', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const reader = createConnector({ id: 'x.y', description: 'x', inputSchema: z.object({}), permissions: { sideEffect: 'read' }, approvals: { gateway }, execute: async () => 1 });
    await expect(invokeConnector(reader, {}, { requestContext: context() })).resolves.toBe(1);
    expect(gateway.requests()).toEqual([]);
  });

  it('validates the approvals config at construction', () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const base = { id: 'x.y', description: 'x', inputSchema: z.object({}), execute: async () => 1 };
    const needs = { ...base, permissions: { sideEffect: 'destructive' as const } };
    expect(() => createConnector({ ...needs, approvals: { gateway, retries: 3 } as never })).toThrow(/unknown approvals field "retries"/);
    expect(() => createConnector({ ...needs, approvals: { gateway: {} as never } })).toThrow(/ApprovalGateway/);
    expect(() => createConnector({ ...needs, approvals: { gateway, redactPaths: ['card.number'] } })).toThrow(/JSON pointers/);
    expect(() => createConnector({ ...needs, approvals: { gateway, waitMs: 0 } })).toThrow(/waitMs/);
    expect(() => createConnector({ ...needs, approvals: { gateway, deadlineMs: 1.5 } })).toThrow(/deadlineMs/);
    expect(() => createConnector({ ...needs, mastraRequireApproval: 'yes' as never })).toThrow(/mastraRequireApproval/);
    expect(() => createConnector({ ...needs, approvals: { gateway } })).not.toThrow();
  });
});

describe('approvals in the agent loop', () => {
  it('a Mastra approval alone never replaces the gatehouse grant', async () => {
    for (const withGateway of [false, true]) {
      const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
      const { connector, executed, audit } = refunds(withGateway ? gateway : undefined, { mastraRequireApproval: true });
      const model = scriptedModel({ steps: [{ toolCall: { toolName: 'payments.refund', toolCallId: 'call-1', args: input } }, { text: 'done' }] });
      const agent = new Agent({ id: 'refunder', name: 'Refunder', instructions: 'x', model: model as never, tools: { 'payments.refund': connector } });
      new Mastra({ agents: { refunder: agent }, storage: new InMemoryStore(), logger: false });

      const first = await agent.generate('refund o-1', { requestContext: context() });
      expect(first.finishReason).toBe('suspended'); // Mastra's own approval still pauses the loop
      expect(executed).toHaveLength(0);
      const resumed = agent.approveToolCallGenerate({ runId: first.runId as string, toolCallId: 'call-1', requestContext: context() });
      if (!withGateway) {
        await resumed;
        expect(audit.events().map((e) => e.code)).toEqual(['CONNECTOR.APPROVAL_REQUIRED']);
      } else {
        // Approved in Mastra, the call now waits for the gatehouse decision on the log.
        const request = await gateway.waitForRequest();
        expect(executed).toHaveLength(0);
        gateway.decide(request.payload.approvalId, { verdict: 'approve' });
        const result = await resumed;
        expect(result.text).toBe('done');
      }
      expect(executed).toHaveLength(withGateway ? 1 : 0);
    }
  });

  it('a guarded agent waits for the reviewer in the middle of its tool call', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed, audit } = refunds(gateway);
    const agent = createGuardedAgent({
      id: 'refund-bot',
      name: 'Refund bot',
      instructions: 'Refund when asked.',
      model: scriptedModel({ steps: [{ toolCall: { toolName: 'payments.refund', toolCallId: 'call-1', args: input } }, { text: 'Refunded.' }] }) as never,
      tools: { 'payments.refund': connector },
      allowedRoles: ['operator'],
      audit,
    });
    const answer = agent.generate('refund order o-1', { requestContext: context() });
    const request = await gateway.waitForRequest();
    expect(executed).toHaveLength(0);
    gateway.decide(request.payload.approvalId, { verdict: 'approve' });
    await expect(answer).resolves.toMatchObject({ text: 'Refunded.' });
    expect(executed).toEqual([input]);
    expect(audit.events().filter((e) => e.boundary === 'tool').map((e) => e.code)).toEqual(['CONNECTOR.APPROVAL_PENDING', 'CONNECTOR.APPROVAL_GRANTED', 'CONNECTOR.ALLOWED']);
  });
});

describe('connector approvals: a grant is for one call, once, for a while', () => {
  it('runs a grant once: the same call again is refused as used and runs nothing', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed } = refunds(gateway);
    const first = invokeConnector(connector, input, { requestContext: context() });
    await gateway.waitForRequest();
    gateway.decide(APPROVAL_ID, { verdict: 'approve' });
    await expect(first).resolves.toEqual({ refunded: 40 });
    // A model repeating the call (same run, arguments and tool call id) finds the same, used grant.
    await expect(invokeConnector(connector, input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_USED', retryable: false });
    expect(executed).toHaveLength(1);
    // The fold already shows the grant used: the second call appends nothing.
    expect(gateway.records.filter((r) => r.event.type === 'ApprovalUsed').map((r) => r.event.payload.approvalId)).toEqual([APPROVAL_ID]);
    expect(gateway.approval(APPROVAL_ID)).toMatchObject({ status: 'approved', usedAt: expect.any(Number) });
  });

  it('replays the recorded result through idempotency when the call is retried, never running twice', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed } = refunds(gateway, { permissions: { sideEffect: 'write', requiresApproval: true, dryRun: true, idempotencyKey: true }, idempotencyStore: new InMemoryIdempotencyStore() });
    const rc = () => context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'refund-o-1' });
    const first = invokeConnector(connector, input, { requestContext: rc() });
    await gateway.waitForRequest();
    gateway.decide(APPROVAL_ID, { verdict: 'approve' });
    await expect(first).resolves.toEqual({ refunded: 40 });
    await expect(invokeConnector(connector, input, { requestContext: rc() })).resolves.toEqual({ refunded: 40 });
    expect(executed).toHaveLength(1);
    // The replay used nothing: one use on the log.
    expect(gateway.records.filter((r) => r.event.type === 'ApprovalUsed')).toHaveLength(1);
  });

  it('replays a recorded result for a retry with a new tool call id, asking no reviewer again', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed } = refunds(gateway, { permissions: { sideEffect: 'write', requiresApproval: true, dryRun: true, idempotencyKey: true }, idempotencyStore: new InMemoryIdempotencyStore() });
    const rc = () => context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'refund-o-1' });
    const first = invokeConnector(connector, input, { requestContext: rc(), toolCallId: 'call-a' });
    const asked = await gateway.waitForRequest();
    gateway.decide(asked.payload.approvalId, { verdict: 'approve' });
    await expect(first).resolves.toEqual({ refunded: 40 });
    // The model calls again under another tool call id: the recorded result replays; nothing is asked or run.
    await expect(invokeConnector(connector, input, { requestContext: rc(), toolCallId: 'call-b' })).resolves.toEqual({ refunded: 40 });
    expect(gateway.requests()).toHaveLength(1);
    expect(executed).toHaveLength(1);
  });

  it('refuses a grant used after its use-by time as expired, and runs nothing', async () => {
    let clock = Date.now();
    const gateway = createInMemoryApprovalGateway({ now: () => clock, agentKey: AGENT });
    const { connector, executed } = refunds(gateway, { approvals: { gateway, waitMs: 30, redactPaths: ['/card/number'] } });
    await expect(invokeConnector(connector, input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_TIMEOUT' });
    gateway.decide(APPROVAL_ID, { verdict: 'approve' });
    // Days later the call is retried: the decision's grant (15 minutes by default) is void.
    clock += 3 * 24 * 60 * 60 * 1000;
    await expect(invokeConnector(connector, input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_EXPIRED' });
    expect(executed).toHaveLength(0);
  });

  it('binds the approval to the tool call: another tool call id asks again', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector, executed } = refunds(gateway);
    const first = invokeConnector(connector, input, { requestContext: context(), toolCallId: 'call-a' });
    const asked = await gateway.waitForRequest();
    gateway.decide(asked.payload.approvalId, { verdict: 'approve' });
    await expect(first).resolves.toEqual({ refunded: 40 });
    const second = invokeConnector(connector, input, { requestContext: context(), toolCallId: 'call-b' });
    const again = await gateway.waitForRequest((r) => r.payload.approvalId !== asked.payload.approvalId);
    expect(again.payload).toMatchObject({ toolCallId: 'call-b' });
    gateway.decide(again.payload.approvalId, { verdict: 'deny' });
    await expect(second).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_DENIED' });
    expect(executed).toHaveLength(1);
  });
});

describe('connector approvals: quorum and what the reviewer is shown', () => {
  it('carries a configured quorum on the request, and refuses a malformed one at construction', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const quorum = { required: 2, reviewers: ['user:alice', 'user:bob', 'user:carol'] };
    const { connector, executed } = refunds(gateway, { approvals: { gateway, waitMs: 5_000, quorum, redactPaths: ['/card/number'] } });
    const call = invokeConnector(connector, input, { requestContext: context() });
    const request = await gateway.waitForRequest();
    expect(request.payload.quorum).toEqual(quorum);
    gateway.decide(APPROVAL_ID, { verdict: 'approve', reviewer: { id: 'user:alice', role: 'approver', kind: 'human' } });
    await new Promise((r) => setTimeout(r, 20));
    expect(executed).toHaveLength(0); // one approval of two
    gateway.decide(APPROVAL_ID, { verdict: 'approve', reviewer: { id: 'user:bob', role: 'approver', kind: 'human' } });
    await expect(call).resolves.toEqual({ refunded: 40 });
    for (const bad of [{ required: 1, reviewers: ['a', 'b'] }, { required: 3, reviewers: ['a', 'b'] }, { required: 2, reviewers: ['a', 'a'] }]) {
      expect(() => refunds(gateway, { approvals: { gateway, quorum: bad } })).toThrow(/quorum/);
    }
  });

  it('withholds a dry-run preview that repeats a redacted value', async () => {
    const gateway = createInMemoryApprovalGateway({ agentKey: AGENT });
    const { connector } = refunds(gateway, { dryRunExecute: async (i: Input) => ({ wouldCharge: i.card.number, amount: i.amount }) });
    const call = invokeConnector(connector, input, { requestContext: context() });
    const request = await gateway.waitForRequest();
    expect(request.payload.dryRunPreview).toBeUndefined();
    expect(JSON.stringify(request.payload)).not.toContain(CARD);
    gateway.decide(APPROVAL_ID, { verdict: 'deny' });
    await expect(call).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_DENIED' });
  });
});
