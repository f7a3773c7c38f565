// Benchmark: per-call cost of a connector with a full manifest (approval grant, required
// permissions, idempotency, rate limit, egress declaration, isolation evaluator, in-memory
// audit) against calling the same execute function bare, in one run.
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { createConnector, invokeConnector } from '../connector-sdk/connector.js';
import {
  CONNECTOR_EXECUTION_CONTEXT_KEY,
  CONNECTOR_GRANTS_CONTEXT_KEY,
  IDEMPOTENCY_KEY_CONTEXT_KEY,
  ISOLATION_SCOPE_CONTEXT_KEY,
  PRINCIPAL_PERMISSIONS_CONTEXT_KEY,
} from '../connector-sdk/context-keys.js';
import { InMemoryIdempotencyStore } from '../connector-sdk/stores/in-memory-idempotency-store.js';
import { InMemoryRateLimitStore } from '../connector-sdk/stores/in-memory-rate-limit-store.js';
import { tenantIsolation } from '../connector-sdk/tool-policies.js';
import { bindGrant } from '../connector-sdk/trusted-context.js';

const CALLS = 20_000;

/** Prints µs per call for both and the ratio. */
export async function benchConnector(): Promise<void> {
  const execute = async (input: { orderId: string; amount: number }) => ({ refunded: input.amount, orderId: input.orderId });
  const connector = createConnector({
    id: 'bench.refund',
    description: 'bench',
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    permissions: { sideEffect: 'write', requiresApproval: true, requiredPermissions: ['refunds:create'], idempotencyKey: true, rateLimit: '1000000000/hour', egress: ['payments.example.com'] },
    policies: { evaluators: [tenantIsolation({ tenants: ['acme'] })], networkEgress: { allowedDomains: ['*.example.com'] } },
    execute,
    audit: new AuditLogger(),
    idempotencyStore: new InMemoryIdempotencyStore({ maxEntries: CALLS * 2 }),
    rateLimitStore: new InMemoryRateLimitStore(),
  });
  const input = { orderId: 'o-1', amount: 5 };
  const contexts = Array.from({ length: CALLS }, (_, i) => {
    const rc = new RequestContext();
    rc.set(ACTOR_CONTEXT_KEY, { id: 'bench', role: 'operator' });
    rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'bench', runId: 'run-bench', entryPath: 'bench' });
    rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf', runId: 'run-bench' });
    // One grant per approved call, bound to the tenant and arguments: each authorizes one execution.
    rc.set(CONNECTOR_GRANTS_CONTEXT_KEY, [bindGrant({ scope: 'run', connectorId: 'bench.refund', runId: 'run-bench', approvalId: `bench-${i}` } as const, { tenant: 'acme', input })]);
    rc.set(PRINCIPAL_PERMISSIONS_CONTEXT_KEY, { principalId: 'bench', permissions: ['refunds:create'] });
    rc.set(ISOLATION_SCOPE_CONTEXT_KEY, 'acme');
    rc.set(IDEMPOTENCY_KEY_CONTEXT_KEY, `key-${i}`);
    return rc;
  });

  // Warm-up both paths.
  for (let i = 0; i < 500; i += 1) await execute(input);
  const warm = new RequestContext();
  for (const [k, v] of contexts[0]!.entries()) warm.set(k, v);
  warm.set(IDEMPOTENCY_KEY_CONTEXT_KEY, 'warm');
  // Its own grant: each authorizes one execution (the first warm-up call; the rest replay).
  warm.set(CONNECTOR_GRANTS_CONTEXT_KEY, [bindGrant({ scope: 'run', connectorId: 'bench.refund', runId: 'run-bench', approvalId: 'bench-warm' } as const, { tenant: 'acme', input })]);
  for (let i = 0; i < 200; i += 1) await invokeConnector(connector, input, { requestContext: warm });

  let start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i += 1) await execute(input);
  const bareUs = Number(process.hrtime.bigint() - start) / 1e3 / CALLS;
  start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i += 1) await invokeConnector(connector, input, { requestContext: contexts[i]! });
  const gatedUs = Number(process.hrtime.bigint() - start) / 1e3 / CALLS;
  recordBenchFigure({
    benchmark: 'guard: connector',
    source: 'libs/guard/src/bench/connector.bench.ts',
    case: `${CALLS.toLocaleString('en')} sequential calls`,
    metric: 'per call, full manifest (grant, permissions, idempotency, rate limit, egress, isolation, audit)',
    unit: 'µs',
    value: gatedUs,
    baseline: 'the same execute function called bare',
    baselineValue: bareUs,
  });
  console.log(
    `connector: ${CALLS} calls, bare execute ${bareUs.toFixed(2)} µs/call, full-manifest connector ${gatedUs.toFixed(2)} µs/call, ratio ${(gatedUs / bareUs).toFixed(1)}x (+${(gatedUs - bareUs).toFixed(1)} µs per call)`,
  );
}
