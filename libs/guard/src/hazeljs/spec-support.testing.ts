// For the HazelJS facade specs: the seed README's refund policy, an invocation of it, its tool, a
// gatekeeper over it, and the helpers that catch a refusal. Test-only (tsconfig.lib.json leaves
// *.testing.ts out of dist).
import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import {
  AgentGatekeeper,
  type AgentGatekeeperPolicy,
  fromFunction,
  GatekeeperError,
  InMemoryApprovalProvider,
  InMemoryAuditSink,
  type ProtectedTool,
  type ToolInvocationContext,
  type ToolMeta,
} from './index.js';

/** The refund a call asks for (`note` and `apiKey` are there to be kept out of records). */
export type Refund = { amount: number; tenantId: string; note?: string; apiKey?: string };

/** The seed README's refund policy, as a HazelJS user writes it: up to 100 for the caller's own tenant, above 50 with a person's approval. */
export const refundPolicy: AgentGatekeeperPolicy<Refund> = {
  id: 'refund-agent-stripe-policy',
  version: '1.0.0',
  priority: 100,
  match: { agents: ['refund-agent'], tools: ['stripe.refund'], environments: ['production'] },
  rules: {
    allowWhen: ({ input, context }) => input.amount <= 100 && input.tenantId === context.tenantId,
    requireApprovalWhen: ({ input }) => input.amount > 50,
  },
};

/** A trusted invocation of stripe.refund by refund-agent for tenant-a in production (inv-1, run-1); `extra` overrides any field. */
export function context(input: JsonValue, extra: Partial<ToolInvocationContext<unknown>> = {}): ToolInvocationContext<JsonValue> {
  return { invocationId: 'inv-1', runId: 'run-1', agentId: 'refund-agent', tenantId: 'tenant-a', toolName: 'stripe.refund', input, environment: 'production', timestamp: new Date(), ...extra } as ToolInvocationContext<JsonValue>;
}

/** The stripe.refund tool: pushes each amount it refunds onto `ran` and answers `{ refunded }` (a `write` tool unless `meta` says otherwise). */
export function refundTool(ran: number[] = [], meta: ToolMeta<Refund, { refunded: number }> = { classification: 'write' }): ProtectedTool<Refund, { refunded: number }> {
  return fromFunction<Refund, { refunded: number }>('stripe.refund', async (input) => {
    ran.push(input.amount);
    return { refunded: input.amount };
  }, meta);
}

/** An enforcing, default-deny gatekeeper over `refundPolicy` with an in-memory sink and approval provider; `extra` overrides any option. */
export function gatekeeper(extra: Record<string, unknown> = {}): { gk: AgentGatekeeper; sink: InMemoryAuditSink; approvals: InMemoryApprovalProvider } {
  const sink = new InMemoryAuditSink();
  const approvals = new InMemoryApprovalProvider();
  const gk = new AgentGatekeeper({ mode: 'enforce', defaultDecision: 'deny', policies: [refundPolicy], auditSink: sink, approvalProvider: approvals, ...extra });
  return { gk, sink, approvals };
}

/** The GatekeeperError `promise` rejects with; fails the test if it resolves or rejects with anything else. */
export async function refusal(promise: Promise<unknown>): Promise<GatekeeperError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof GatekeeperError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

/** The GatehouseError `fn` throws; fails the test if it returns or throws anything else. */
export function thrown(fn: () => unknown): GatehouseError {
  try {
    fn();
  } catch (error) {
    if (error instanceof GatehouseError) return error;
    throw error;
  }
  throw new Error('expected a GatehouseError');
}
