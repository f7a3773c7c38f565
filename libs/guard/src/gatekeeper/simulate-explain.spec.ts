import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { createInMemoryApprovalGateway } from '../approvals/in-memory-approval-gateway.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { createConnector, invokeConnector } from '../connector-sdk/connector.js';
import { AGENT_AUDIT_CONTEXT_KEY, CONNECTOR_EXECUTION_CONTEXT_KEY } from '../connector-sdk/context-keys.js';
import { createGatekeeper } from '@gatehouse/gatekeeper';

// The proof: simulate and explain decide a call without running the tool or asking a
// person, next to the same tool that records every real execution and every approval request.
describe('simulate and explain beside a tool that records its calls', () => {
  it('decide allow, deny and require-approval for a connector, and the connector records no execution and no approval request', async () => {
    const executions: unknown[] = [];
    const gateway = createInMemoryApprovalGateway();
    const refund = createConnector<{ orderId: string; amount: number }, { refunded: number }>({
      id: 'payments.refund',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
      permissions: { sideEffect: 'write' },
      approvals: { gateway, waitMs: 2_000 },
      audit: new AuditLogger(),
      execute: async (input) => {
        executions.push(input);
        return { refunded: input.amount };
      },
    });
    const gatekeeper = createGatekeeper({
      bundle: {
        policySetId: 'refunds',
        policies: [
          { id: 'huge', version: '1', priority: 20, match: { tools: ['payments.refund'] }, rules: { denyWhen: 'input.amount > 1000' } },
          { id: 'big', version: '1', priority: 10, match: { tools: ['payments.refund'] }, rules: { requireApprovalWhen: 'input.amount > 100' } },
          { id: 'support', version: '1', priority: 0, match: { tools: ['payments.refund'] }, rules: { allowWhen: "identity.actor.role == 'support'" } },
        ],
      },
      revision: 3,
    });
    const ctx = (amount: number) => ({ identity: { actor: { id: 'user:olga', role: 'support' } }, call: { tool: 'payments.refund' }, input: { orderId: 'o-1', amount } });

    expect([5, 500, 5_000].map((a) => gatekeeper.simulate(ctx(a)).effect)).toEqual(['allow', 'require-approval', 'deny']);
    expect([5, 500, 5_000].map((a) => gatekeeper.explain(ctx(a)).decision.effect)).toEqual(['allow', 'require-approval', 'deny']);
    expect(gatekeeper.explain(ctx(500)).decision).toMatchObject({ policyId: 'big', bundle: { policySetId: 'refunds', revision: 3 } });
    expect(executions).toEqual([]);
    expect(gateway.requests()).toEqual([]);

    // The same connector does run, and record, when it is really called.
    const rc = new RequestContext();
    rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-1' });
    rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'support', runId: 'run-1' });
    await expect(invokeConnector(refund, { orderId: 'o-1', amount: 5 }, { requestContext: rc })).resolves.toEqual({ refunded: 5 });
    expect(executions).toEqual([{ orderId: 'o-1', amount: 5 }]);
  });
});
