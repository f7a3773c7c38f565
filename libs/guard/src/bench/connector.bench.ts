// Benchmark: per-call cost of a connector with a full manifest (approval grant, required
// permissions, idempotency, rate limit, egress declaration, isolation evaluator, in-memory
// audit) against calling the same execute function bare, in one run; and of a second shape (no
// approval, larger nested arguments and result, another isolation policy) against its own.
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { type Connector, createConnector, invokeConnector } from '../connector-sdk/connector.js';
import {
  CONNECTOR_EXECUTION_CONTEXT_KEY,
  CONNECTOR_GRANTS_CONTEXT_KEY,
  IDEMPOTENCY_KEY_CONTEXT_KEY,
  ISOLATION_SCOPE_CONTEXT_KEY,
  PRINCIPAL_PERMISSIONS_CONTEXT_KEY,
  WORKFLOW_SCOPE_CONTEXT_KEY,
} from '../connector-sdk/context-keys.js';
import { InMemoryIdempotencyStore } from '../connector-sdk/stores/in-memory-idempotency-store.js';
import { InMemoryRateLimitStore } from '../connector-sdk/stores/in-memory-rate-limit-store.js';
import { crossWorkflowIsolation, tenantIsolation } from '../connector-sdk/tool-policies.js';
import { bindGrant } from '../connector-sdk/trusted-context.js';

const CALLS = 20_000;

/** One connector and how each timed call is made: `contextFor(i)` is the trusted context of call `i`. */
interface ConnectorCase {
  readonly connector: Connector<never, unknown>;
  readonly input: unknown;
  /** The function the connector wraps, called bare: the baseline. */
  readonly execute: () => Promise<unknown>;
  readonly contextFor: (i: number | 'warm') => RequestContext;
  readonly metric: string;
  readonly label: string;
}

/** The trusted context both shapes share: an authenticated operator of tenant acme in a workflow run. */
function baseContext(i: number | 'warm'): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'bench', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'bench', runId: 'run-bench', entryPath: 'bench' });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'wf', runId: 'run-bench' });
  rc.set(IDEMPOTENCY_KEY_CONTEXT_KEY, `key-${i}`);
  return rc;
}

/** The first shape: a refund with every gate (grant, permissions, idempotency, rate limit, egress, isolation, audit). */
function refundCase(): ConnectorCase {
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
  return {
    connector: connector as Connector<never, unknown>,
    input,
    execute: () => execute(input),
    label: 'full-manifest connector',
    metric: 'per call, full manifest (grant, permissions, idempotency, rate limit, egress, isolation, audit)',
    contextFor: (i) => {
      const rc = baseContext(i);
      // One grant per approved call, bound to the tenant and arguments: each authorizes one execution.
      rc.set(CONNECTOR_GRANTS_CONTEXT_KEY, [bindGrant({ scope: 'run', connectorId: 'bench.refund', runId: 'run-bench', approvalId: `bench-${i}` } as const, { tenant: 'acme', input })]);
      rc.set(PRINCIPAL_PERMISSIONS_CONTEXT_KEY, { principalId: 'bench', permissions: ['refunds:create'] });
      rc.set(ISOLATION_SCOPE_CONTEXT_KEY, 'acme');
      return rc;
    },
  };
}

/**
 * The second shape, so nothing is tuned to one input: no approval, an order of 25 nested lines in
 * and out (validated both ways, recorded for replay), a principal holding 40 permissions, a
 * cross-workflow isolation policy, a minute budget, no egress.
 */
function orderCase(): ConnectorCase {
  const line = z.object({ sku: z.string(), quantity: z.number().int().positive(), price: z.object({ amount: z.number(), currency: z.string().length(3) }), tags: z.array(z.string()) });
  const order = z.object({ customer: z.object({ id: z.string(), name: z.string(), address: z.object({ street: z.string(), city: z.string(), country: z.string() }) }), lines: z.array(line), note: z.string().optional() });
  const execute = async (input: z.infer<typeof order>) => {
    const lines = input.lines.map((l) => ({ sku: l.sku, subtotal: l.quantity * l.price.amount }));
    return { accepted: lines.length, total: lines.reduce((sum, l) => sum + l.subtotal, 0), lines };
  };
  const connector = createConnector({
    id: 'bench.order',
    description: 'bench',
    inputSchema: order,
    outputSchema: z.object({ accepted: z.number(), total: z.number(), lines: z.array(z.object({ sku: z.string(), subtotal: z.number() })) }),
    permissions: { sideEffect: 'write', requiredPermissions: ['orders:create', 'orders:price'], idempotencyKey: true, rateLimit: '1000000000/minute' },
    policies: { evaluators: [crossWorkflowIsolation()] },
    execute,
    audit: new AuditLogger(),
    idempotencyStore: new InMemoryIdempotencyStore({ maxEntries: CALLS * 2 }),
    rateLimitStore: new InMemoryRateLimitStore(),
  });
  const input = {
    customer: { id: 'c-42', name: 'Ada Lovelace', address: { street: '12 St James Square', city: 'London', country: 'GB' } },
    lines: Array.from({ length: 25 }, (_, i) => ({ sku: `sku-${i}`, quantity: 1 + (i % 4), price: { amount: 3.5 * (i + 1), currency: 'EUR' }, tags: ['bench', `batch-${i % 3}`] })),
    note: 'leave at the door',
  };
  const permissions = [...Array.from({ length: 38 }, (_, i) => `catalog:read-${i}`), 'orders:create', 'orders:price'];
  return {
    connector: connector as Connector<never, unknown>,
    input,
    execute: () => execute(input),
    label: 'order connector',
    metric: 'per call, no approval: 25-line nested order in and out, 40 held permissions, workflow isolation, idempotency, rate limit, audit',
    contextFor: (i) => {
      const rc = baseContext(i);
      rc.set(PRINCIPAL_PERMISSIONS_CONTEXT_KEY, { principalId: 'bench', permissions });
      rc.set(WORKFLOW_SCOPE_CONTEXT_KEY, 'wf');
      return rc;
    },
  };
}

/** Times `CALLS` gated calls against the same execute bare, in one run, and records the row. */
async function measure(shape: ConnectorCase): Promise<void> {
  const execute = shape.execute;
  const contexts = Array.from({ length: CALLS }, (_, i) => shape.contextFor(i));
  // Warm-up both paths. The warm context's key is recorded by its first call; the rest replay.
  for (let i = 0; i < 500; i += 1) await execute();
  const warm = shape.contextFor('warm');
  for (let i = 0; i < 200; i += 1) await invokeConnector(shape.connector, shape.input as never, { requestContext: warm });

  let start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i += 1) await execute();
  const bareUs = Number(process.hrtime.bigint() - start) / 1e3 / CALLS;
  start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i += 1) await invokeConnector(shape.connector, shape.input as never, { requestContext: contexts[i]! });
  const gatedUs = Number(process.hrtime.bigint() - start) / 1e3 / CALLS;
  recordBenchFigure({
    benchmark: 'guard: connector',
    source: 'libs/guard/src/bench/connector.bench.ts',
    case: `${CALLS.toLocaleString('en')} sequential calls`,
    metric: shape.metric,
    unit: 'µs',
    value: gatedUs,
    baseline: 'the same execute function called bare',
    baselineValue: bareUs,
    target: { on: 'value', atMost: 20, source: 'issue 22: connector call ≤ 20 µs in process' },
  });
  console.log(
    `connector: ${CALLS} calls, bare execute ${bareUs.toFixed(2)} µs/call, ${shape.label} ${gatedUs.toFixed(2)} µs/call, ratio ${(gatedUs / bareUs).toFixed(1)}x (+${(gatedUs - bareUs).toFixed(1)} µs per call)`,
  );
}

/** Prints µs per call for both shapes, each against its execute called bare, and the ratio. */
export async function benchConnector(): Promise<void> {
  for (const shape of [refundCase(), orderCase()]) await measure(shape);
}
