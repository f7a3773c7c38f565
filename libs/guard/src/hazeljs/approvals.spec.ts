import { describe, expect, it } from '@jest/globals';
import { GatehouseError } from '@gatehouse/contracts';
import { createInMemoryApprovalGateway } from '../approvals/in-memory-approval-gateway.js';
import {
  createApprovalStoreProvider,
  createHumanTaskProvider,
  createKafkaApprovalProvider,
  createRedisApprovalProvider,
  GatekeeperApprovalRequiredError,
  GatekeeperDeniedError,
  InMemoryApprovalProvider,
} from './index.js';
import { context, gatekeeper, refundTool, refusal } from './spec-support.testing.js';

// Row 6: the seed's refund policy (spec-support.testing.ts) needs a person above 50; the approval flow of its README.
function setup() {
  const ran: number[] = [];
  return { ...gatekeeper(), ran, tool: refundTool(ran) };
}

describe('approvals through the facade (row 6)', () => {
  it('asks, waits for a reviewer, and runs the resumed call (approvalToken) exactly once', async () => {
    const { gk, approvals, ran, tool, sink } = setup();
    const asked = await refusal(gk.execute({ context: context({ amount: 80, tenantId: 'tenant-a' }), tool }));
    expect(asked).toBeInstanceOf(GatekeeperApprovalRequiredError);
    const approvalId = asked.approvalRequestId!;
    expect(await approvals.get(approvalId)).toMatchObject({ approvalId, status: 'pending', tenantId: 'tenant-a', toolName: 'stripe.refund', runId: 'run-1' });
    expect(await approvals.resolve(approvalId, 'approved', 'operator-1')).toMatchObject({ status: 'approved' });

    const resumed = await gk.execute({ context: context({ amount: 80, tenantId: 'tenant-a' }, { approvalToken: approvalId }), tool });
    expect(resumed.output).toEqual({ refunded: 80 });
    expect(await approvals.get(approvalId)).toMatchObject({ status: 'consumed' });
    // One grant, one execution: the same token again is refused, and nothing runs twice.
    const again = await refusal(gk.execute({ context: context({ amount: 80, tenantId: 'tenant-a' }, { approvalToken: approvalId }), tool }));
    expect(again).toBeInstanceOf(GatekeeperDeniedError);
    expect(again).toMatchObject({ code: 'HAZELJS.APPROVAL_INVALID', details: { status: 'consumed' } });
    expect(ran).toEqual([80]);
    expect(sink.events.map((e) => e.code)).toEqual([
      'GUARDRAIL.APPROVAL_REQUIRED', 'HAZELJS.APPROVAL_PENDING',
      'GUARDRAIL.APPROVAL_REQUIRED', 'HAZELJS.APPROVAL_CONSUMED', 'HAZELJS.TOOL_COMPLETED',
      'GUARDRAIL.APPROVAL_REQUIRED', 'HAZELJS.APPROVAL_INVALID',
    ]);
  });

  it('grants only the call it was asked for: a token on other arguments or another run grants nothing', async () => {
    const { gk, approvals, ran, tool } = setup();
    const approvalId = (await refusal(gk.execute({ context: context({ amount: 60, tenantId: 'tenant-a' }), tool }))).approvalRequestId!;
    await approvals.resolve(approvalId, 'approved', 'operator-1');
    for (const other of [context({ amount: 99, tenantId: 'tenant-a' }, { approvalToken: approvalId }), context({ amount: 60, tenantId: 'tenant-a' }, { approvalToken: approvalId, runId: 'run-2' })]) {
      expect(await refusal(gk.execute({ context: other, tool }))).toMatchObject({ code: 'HAZELJS.APPROVAL_INVALID', details: { status: 'another-call' } });
    }
    expect(ran).toEqual([]);
    expect(await approvals.get(approvalId)).toMatchObject({ status: 'approved' }); // still unused
  });

  it('still waits while pending, and refuses a rejected approval', async () => {
    const { gk, approvals, ran, tool } = setup();
    const approvalId = (await refusal(gk.execute({ context: context({ amount: 70, tenantId: 'tenant-a' }), tool }))).approvalRequestId!;
    const stillPending = await refusal(gk.execute({ context: context({ amount: 70, tenantId: 'tenant-a' }, { approvalToken: approvalId }), tool }));
    expect(stillPending).toMatchObject({ code: 'HAZELJS.APPROVAL_REQUIRED', details: { approvalId } });
    await approvals.resolve(approvalId, 'rejected', 'operator-1');
    expect(await refusal(gk.execute({ context: context({ amount: 70, tenantId: 'tenant-a' }, { approvalToken: approvalId }), tool }))).toMatchObject({ code: 'HAZELJS.APPROVAL_INVALID', details: { status: 'rejected' } });
    expect(ran).toEqual([]);
  });

  it('does not let the agent, or the user it acts for, approve its own request', async () => {
    const { gk, approvals, tool } = setup();
    const approvalId = (await refusal(gk.execute({ context: context({ amount: 70, tenantId: 'tenant-a' }, { delegatedUserId: 'user:olga' }), tool }))).approvalRequestId!;
    for (const self of ['refund-agent', 'user:olga']) {
      await expect(approvals.resolve(approvalId, 'approved', self)).rejects.toMatchObject({ code: 'HAZELJS.APPROVAL_INVALID', details: { reason: 'self-approval' } });
    }
    expect(await approvals.get(approvalId)).toMatchObject({ status: 'pending' });
  });

  it('shows the reviewer the call with secret-named keys redacted, and needs the trusted tenant', async () => {
    const { gk, approvals, tool } = setup();
    await refusal(gk.execute({ context: context({ amount: 70, tenantId: 'tenant-a', apiKey: 'sk_live_123' }), tool }));
    expect(approvals.gateway.requests()[0]?.payload.arguments).toEqual({ amount: 70, tenantId: 'tenant-a', apiKey: '[REDACTED]' });
    expect(JSON.stringify(approvals.gateway.records)).not.toContain('sk_live_123');
    const noTenant = await refusal(gk.execute({ context: context({ amount: 70, tenantId: 'tenant-a' }, { tenantId: undefined }), tool }));
    expect(noTenant).toMatchObject({ code: 'HAZELJS.VALIDATION', details: { field: 'tenantId' } }); // approvals are tenant-bound
  });

  it('refuses an approval when the approvals log cannot confirm it (fail closed, retryable)', async () => {
    const { gk, approvals, ran, tool } = setup();
    approvals.gateway.setAvailable(false);
    expect(await refusal(gk.execute({ context: context({ amount: 70, tenantId: 'tenant-a' }), tool }))).toMatchObject({ code: 'HAZELJS.POLICY', retryable: true });
    expect(ran).toEqual([]);
  });

  it('refuses provider options it does not take', () => {
    expect(() => new InMemoryApprovalProvider({ idGenerator: () => 'a' } as never)).toThrow(GatehouseError);
    expect(() => new InMemoryApprovalProvider({ waitMs: 0 })).toThrow(/waitMs/);
  });
});

describe('the Kafka provider and the providers gatehouse does not provide', () => {
  it('refuses resolve and get in an agent process: a reviewer decides through the approval service', async () => {
    const provider = createKafkaApprovalProvider(createInMemoryApprovalGateway());
    await expect(provider.resolve('a-1', 'approved', 'refund-agent')).rejects.toMatchObject({ code: 'HAZELJS.UNSUPPORTED', details: { use: expect.stringContaining('POST /v1/approvals/{id}/decision') } });
    await expect(provider.get('a-1')).rejects.toMatchObject({ code: 'HAZELJS.UNSUPPORTED' });
    expect(() => createKafkaApprovalProvider({} as never)).toThrow(GatehouseError);
  });

  it('refuses the Redis, approval-store and human-task providers, naming the Kafka one', () => {
    for (const refused of [() => createRedisApprovalProvider({}), () => createApprovalStoreProvider({}), () => createHumanTaskProvider({})]) {
      expect(refused).toThrow(expect.objectContaining({ code: 'HAZELJS.UNSUPPORTED', details: expect.objectContaining({ use: expect.stringContaining('createKafkaApprovalProvider') }) }) as never);
    }
  });
});
