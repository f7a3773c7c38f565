import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { createConnector, invokeConnector } from './connector.js';
import {
  CONNECTOR_EXECUTION_CONTEXT_KEY,
  CONNECTOR_GRANTS_CONTEXT_KEY,
  DRY_RUN_CONTEXT_KEY,
  IDEMPOTENCY_KEY_CONTEXT_KEY,
  ISOLATION_SCOPE_CONTEXT_KEY,
  PRINCIPAL_PERMISSIONS_CONTEXT_KEY,
  WORKFLOW_SCOPE_CONTEXT_KEY,
} from './context-keys.js';
import { ConnectorPolicyError, ConnectorValidationError } from './errors.js';
import { InMemoryIdempotencyStore } from './stores/in-memory-idempotency-store.js';
import { InMemoryRateLimitStore } from './stores/in-memory-rate-limit-store.js';
import { callThrough, type ConnectorEntryPoint } from './testing/entry-points.js';
import { crossWorkflowIsolation, tenantIsolation } from './tool-policies.js';
import { bindGrant } from './trusted-context.js';
import { type ConnectorConfig, type PermissionManifest } from './types.js';

const identity = { workflowId: 'wf-refunds', runId: 'run-1', suspension: { stepPath: 'approve', suspendedAt: '2026-11-30T10:00:00.000Z', resumeCount: 0 } };
const inputSchema = z.object({ orderId: z.string().min(1), amount: z.number().positive() });

function build(permissions: PermissionManifest, extra: Partial<ConnectorConfig<z.infer<typeof inputSchema>, { ok: boolean; amount: number }>> = {}) {
  const audit = new AuditLogger();
  const calls: unknown[] = [];
  const connector = createConnector({
    id: 'refunds.create',
    description: 'Refund an order',
    inputSchema,
    outputSchema: z.object({ ok: z.boolean(), amount: z.number() }),
    permissions,
    audit,
    execute: async (input) => {
      calls.push(input);
      return { ok: true, amount: input.amount };
    },
    ...extra,
  });
  return { connector, audit, calls };
}

function context(entries: Record<string, unknown> = {}): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-1', entryPath: 'test' });
  rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, identity);
  for (const [k, v] of Object.entries(entries)) rc.set(k, v);
  return rc;
}

const input = { orderId: 'o-1', amount: 40 };
/** A tool-call grant bound (as host code mints it) to tenant acme and `input`. */
const toolCallGrant = (toolCallId = 'call-1') =>
  bindGrant({ scope: 'tool-call', connectorId: 'refunds.create', workflowId: identity.workflowId, runId: identity.runId, suspension: identity.suspension, toolCallId } as const, { tenant: 'acme', input });
const lastDecision = (audit: AuditLogger) => audit.events().filter((e) => e.boundary === 'tool').at(-1);
const paths: ConnectorEntryPoint[] = ['agent-loop', 'direct'];

describe('createConnector: the manifest is validated at construction', () => {
  it.each([
    ['an unknown side effect', { sideEffect: 'delete' }],
    ['a misspelled requirement', { sideEffect: 'write', requireApproval: true }],
    ['a non-boolean flag', { sideEffect: 'write', requiresApproval: 'yes' }],
    ['dryRun without dryRunExecute', { sideEffect: 'write', dryRun: true }],
    ['idempotencyKey without a store', { sideEffect: 'write', idempotencyKey: true }],
    ['a malformed rate limit', { sideEffect: 'write', rateLimit: 'ten per hour' }],
    ['a rate limit without a store', { sideEffect: 'write', rateLimit: '10/hour' }],
    ['background on a write connector', { sideEffect: 'write', background: true }],
    ['an egress pattern with a path', { sideEffect: 'read', egress: ['api.example.com/v1'] }],
    ['a malformed permission identifier', { sideEffect: 'read', requiredPermissions: ['refunds create'] }],
  ])('refuses %s', (_what, permissions) => {
    expect(() => build(permissions as never)).toThrow(TypeError);
  });

  it('refuses declared egress outside the organization allowlist, and unknown policies or config fields', () => {
    expect(() => build({ sideEffect: 'read', egress: ['api.evil.example'] }, { policies: { networkEgress: { allowedDomains: ['*.example.com'] } } })).toThrow(/outside the organization allowlist/);
    expect(() => build({ sideEffect: 'read' }, { policies: { netEgress: {} } as never })).toThrow(/unknown policy "netEgress"/);
    expect(() => build({ sideEffect: 'read' }, { retries: 3 } as never)).toThrow(/unknown config field "retries"/);
  });
});

describe('invokeConnector', () => {
  it('refuses options other than requestContext, abortSignal and toolCallId', async () => {
    const { connector } = build({ sideEffect: 'read' });
    await expect(invokeConnector(connector, input, { observe: true } as never)).rejects.toMatchObject({ code: 'CONNECTOR.INVOCATION_OPTIONS_INVALID' });
    await expect(invokeConnector(connector, input, { requestContext: { get: () => undefined } } as never)).rejects.toMatchObject({ code: 'CONNECTOR.INVOCATION_OPTIONS_INVALID' });
  });

  it('refuses a plain tool and a copy of a connector', async () => {
    const plain = createTool({ id: 'plain', description: 'plain', inputSchema: inputSchema, execute: async () => ({ ok: true }) });
    await expect(invokeConnector(plain as never, input)).rejects.toMatchObject({ code: 'CONNECTOR.NOT_A_CONNECTOR' });
    const { connector } = build({ sideEffect: 'read' });
    await expect(invokeConnector({ ...connector } as never, input)).rejects.toMatchObject({ code: 'CONNECTOR.NOT_A_CONNECTOR' });
  });

  it('keeps the id, execute function and schemas from being swapped after construction', () => {
    const { connector } = build({ sideEffect: 'read' });
    expect(() => {
      (connector as unknown as { execute: unknown }).execute = async () => 'bypass';
    }).toThrow(TypeError);
    expect(() => Object.defineProperty(connector, 'inputSchema', { value: z.any() })).toThrow(TypeError);
  });

  it('refuses invalid input with a redacted validation error', async () => {
    const { connector, calls } = build({ sideEffect: 'read' });
    const error = await invokeConnector(connector, { orderId: 'card-4111111111111111', amount: -5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorValidationError);
    expect(error).toMatchObject({ code: 'CONNECTOR.INPUT_INVALID', phase: 'input', details: { fields: ['amount'] } });
    expect(JSON.stringify((error as ConnectorValidationError).toJSON())).not.toContain('4111');
    expect(calls).toHaveLength(0);
  });
});

describe.each(paths)('manifest enforcement on the %s path', (path) => {
  it('requires a structured grant for requiresApproval, and refuses legacy grant arrays', async () => {
    const { connector, audit, calls } = build({ sideEffect: 'write', requiresApproval: true });
    expect((await callThrough(path, connector, input, context())).ok).toBe(false);
    expect(lastDecision(audit)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.APPROVAL_REQUIRED' });
    await callThrough(path, connector, input, context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: ['refunds.create'] }));
    expect(lastDecision(audit)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.GRANT_INVALID' });
    expect(calls).toHaveLength(0);
  });

  it('runs with a tool-call grant for this call, and refuses one for another tool call', async () => {
    const { connector, audit, calls } = build({ sideEffect: 'write', requiresApproval: true });
    const other = await callThrough(path, connector, input, context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [toolCallGrant('call-9')] }), 'call-1');
    expect(other.ok).toBe(false);
    const ok = await callThrough(path, connector, input, context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [toolCallGrant('call-1')] }), 'call-1');
    expect(ok).toMatchObject({ ok: true, value: { ok: true, amount: 40 } });
    expect(calls).toHaveLength(1);
    expect(lastDecision(audit)).toMatchObject({ decision: 'allowed', code: 'CONNECTOR.ALLOWED', detail: { sideEffect: 'write', egressEnforcement: 'enforced' } });
  });

  it('requires approval for destructive connectors unless a policy waives it', async () => {
    const gated = build({ sideEffect: 'destructive' });
    expect((await callThrough(path, gated.connector, input, context())).ok).toBe(false);
    expect(lastDecision(gated.audit)?.code).toBe('CONNECTOR.APPROVAL_REQUIRED');
    const waived = build({ sideEffect: 'destructive' }, { policies: { destructiveRequiresApproval: false } });
    expect((await callThrough(path, waived.connector, input, context())).ok).toBe(true);
  });

  it('checks required permissions before dry run and before the grant', async () => {
    const { connector, audit, calls } = build(
      { sideEffect: 'write', requiresApproval: true, dryRun: true, requiredPermissions: ['refunds:create'] },
      { dryRunExecute: async (i) => ({ ok: false, amount: i.amount }) },
    );
    await callThrough(path, connector, input, context({ [DRY_RUN_CONTEXT_KEY]: true, [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: { principalId: 'user-1', permissions: ['refunds:read'] } }));
    expect(lastDecision(audit)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.PERMISSION_MISSING' });
    const preview = await callThrough(path, connector, input, context({ [DRY_RUN_CONTEXT_KEY]: true, [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: { principalId: 'user-1', permissions: ['refunds:create'] } }));
    expect(preview).toMatchObject({ ok: true, value: { ok: false, amount: 40 } });
    expect(lastDecision(audit)).toMatchObject({ decision: 'observed', code: 'CONNECTOR.DRY_RUN' });
    expect(calls).toHaveLength(0);
  });

  it('refuses a dry run the connector cannot do', async () => {
    const { connector, audit, calls } = build({ sideEffect: 'write' });
    await callThrough(path, connector, input, context({ [DRY_RUN_CONTEXT_KEY]: true }));
    expect(lastDecision(audit)?.code).toBe('CONNECTOR.DRY_RUN_UNSUPPORTED');
    expect(calls).toHaveLength(0);
  });

  it('replays the recorded result for a repeated idempotency key and requires the key', async () => {
    const store = new InMemoryIdempotencyStore();
    const { connector, audit, calls } = build({ sideEffect: 'write', idempotencyKey: true }, { idempotencyStore: store });
    await callThrough(path, connector, input, context());
    expect(lastDecision(audit)?.code).toBe('CONNECTOR.IDEMPOTENCY_KEY_REQUIRED');
    const first = await callThrough(path, connector, input, context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'refund-o-1' }));
    const second = await callThrough(path, connector, { ...input, amount: 99 }, context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'refund-o-1' }));
    expect(first).toMatchObject({ ok: true, value: { amount: 40 } });
    expect(second).toMatchObject({ ok: true, value: { amount: 40 } });
    expect(calls).toHaveLength(1);
    expect(lastDecision(audit)?.code).toBe('CONNECTOR.REPLAYED');
  });

  it('enforces the rate limit, and a refused call consumes nothing', async () => {
    let now = Date.parse('2026-11-30T10:00:00Z');
    const store = new InMemoryRateLimitStore({ now: () => now });
    const { connector, audit, calls } = build({ sideEffect: 'read', rateLimit: '2/hour' }, { rateLimitStore: store });
    for (let i = 0; i < 3; i += 1) await callThrough(path, connector, input, context());
    expect(calls).toHaveLength(2);
    expect(lastDecision(audit)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.RATE_LIMITED' });
    now += 3_600_000;
    expect((await callThrough(path, connector, input, context())).ok).toBe(true);
  });

  it('runs tenant and workflow isolation and custom evaluators before execution, failing closed', async () => {
    const isolated = build({ sideEffect: 'read' }, { policies: { evaluators: [tenantIsolation({ tenants: ['acme'] }), crossWorkflowIsolation()] } });
    await callThrough(path, isolated.connector, input, context());
    expect(lastDecision(isolated.audit)?.code).toBe('CONNECTOR.ISOLATION_SCOPE_REQUIRED');
    await callThrough(path, isolated.connector, input, context({ [ISOLATION_SCOPE_CONTEXT_KEY]: 'acme', [WORKFLOW_SCOPE_CONTEXT_KEY]: 'wf-other' }));
    expect(lastDecision(isolated.audit)?.code).toBe('CONNECTOR.WORKFLOW_SCOPE_MISMATCH');
    expect((await callThrough(path, isolated.connector, input, context({ [ISOLATION_SCOPE_CONTEXT_KEY]: 'acme', [WORKFLOW_SCOPE_CONTEXT_KEY]: 'wf-refunds' }))).ok).toBe(true);
    const crashing = build({ sideEffect: 'read' }, { policies: { evaluators: [{ name: 'crashing', evaluate: () => { throw new Error('boom'); } }] } });
    await callThrough(path, crashing.connector, input, context());
    expect(lastDecision(crashing.audit)?.code).toBe('CONNECTOR.POLICY_FAILED');
    expect(crashing.calls).toHaveLength(0);
  });

  it('refuses malformed trusted context instead of treating it as absent', async () => {
    const { connector, audit, calls } = build({ sideEffect: 'read' });
    await callThrough(path, connector, input, context({ [CONNECTOR_EXECUTION_CONTEXT_KEY]: { workflowId: 'wf', runId: '', extra: 1 } }));
    expect(lastDecision(audit)?.code).toBe('CONNECTOR.CONTEXT_INVALID');
    expect(calls).toHaveLength(0);
  });

  it('rethrows an execute failure but keeps its message out of the audit trail', async () => {
    const { connector, audit } = build({ sideEffect: 'read' }, { execute: async () => { throw new Error('db password hunter2 rejected'); } });
    const outcome = await callThrough(path, connector, input, context());
    expect(outcome.ok).toBe(false);
    expect(lastDecision(audit)).toMatchObject({ decision: 'error', code: 'CONNECTOR.EXECUTION_FAILED' });
    expect(JSON.stringify(audit.events())).not.toContain('hunter2');
  });
});

describe('approval grants', () => {
  it('accepts a run-scoped standing grant and runs an approved edit with the edited input', async () => {
    const { connector, calls } = build({ sideEffect: 'write', requiresApproval: true });
    const grant = bindGrant({ scope: 'run', connectorId: 'refunds.create', runId: 'run-1', editedInput: { orderId: 'o-1', amount: 20 } } as const, { tenant: 'acme', input });
    const result = await invokeConnector(connector, input, { requestContext: context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [grant] }) });
    expect(result).toEqual({ ok: true, amount: 20 });
    expect(calls).toEqual([{ orderId: 'o-1', amount: 20 }]);
  });

  it('refuses a suspension grant for another suspension', async () => {
    const { connector } = build({ sideEffect: 'write', requiresApproval: true });
    const grant = { scope: 'suspension', connectorId: 'refunds.create', workflowId: identity.workflowId, runId: 'run-1', suspension: { ...identity.suspension, resumeCount: 1 } };
    await expect(invokeConnector(connector, input, { requestContext: context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [grant] }) })).rejects.toBeInstanceOf(ConnectorPolicyError);
  });

  it('runs a bound tool-call grant once: the same tool call again is refused as used', async () => {
    const { connector, calls, audit } = build({ sideEffect: 'write', requiresApproval: true });
    const rc = context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [toolCallGrant('call-7')] });
    await invokeConnector(connector, input, { requestContext: rc, toolCallId: 'call-7' });
    await expect(invokeConnector(connector, input, { requestContext: rc, toolCallId: 'call-7' })).rejects.toMatchObject({ code: 'CONNECTOR.GRANT_USED', retryable: false });
    expect(lastDecision(audit)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.GRANT_USED' });
    await expect(invokeConnector(connector, input, { requestContext: rc, toolCallId: 'call-8' })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_REQUIRED' });
    expect(calls).toHaveLength(1);
  });

  it('honours a bound grant only for its tenant and arguments, and refuses one that names neither', async () => {
    const { connector, calls } = build({ sideEffect: 'write', requiresApproval: true });
    const unbound = { scope: 'tool-call', connectorId: 'refunds.create', workflowId: identity.workflowId, runId: identity.runId, suspension: identity.suspension, toolCallId: 'call-1' } as const;
    const otherTenant = bindGrant(unbound, { tenant: 'globex', input });
    const otherArgs = bindGrant(unbound, { tenant: 'acme', input: { ...input, amount: 1 } });
    for (const grant of [otherTenant, otherArgs]) {
      await expect(invokeConnector(connector, input, { requestContext: context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [grant] }), toolCallId: 'call-1' })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_REQUIRED' });
    }
    await expect(invokeConnector(connector, input, { requestContext: context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [unbound] }), toolCallId: 'call-1' })).rejects.toMatchObject({ code: 'CONNECTOR.GRANT_UNBOUND' });
    expect(calls).toHaveLength(0);
  });

  it("keeps the first edition's reusable grants only as an explicit opt-in", async () => {
    const { connector, calls } = build({ sideEffect: 'write', requiresApproval: true }, { contextGrants: 'reusable' });
    const legacy = { scope: 'tool-call', connectorId: 'refunds.create', workflowId: identity.workflowId, runId: identity.runId, suspension: identity.suspension, toolCallId: 'call-7' };
    const rc = context({ [CONNECTOR_GRANTS_CONTEXT_KEY]: [legacy] });
    await invokeConnector(connector, input, { requestContext: rc, toolCallId: 'call-7' });
    await invokeConnector(connector, input, { requestContext: rc, toolCallId: 'call-7' });
    expect(calls).toHaveLength(2);
    expect(() => build({ sideEffect: 'write', requiresApproval: true }, { contextGrants: 'always' as never })).toThrow(/contextGrants/);
  });
});

const hex = (name: string) => createHash('sha256').update(name).digest('hex');

describe('idempotency store', () => {
  it('makes a concurrent caller with the same key wait (retryable) rather than execute', async () => {
    const store = new InMemoryIdempotencyStore();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { connector, calls } = build({ sideEffect: 'write', idempotencyKey: true }, {
      idempotencyStore: store,
      execute: async (i) => {
        calls.push(i);
        await gate;
        return { ok: true, amount: i.amount };
      },
    });
    const rc = context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'k-1' });
    const first = invokeConnector(connector, input, { requestContext: rc });
    await new Promise((r) => setImmediate(r));
    await expect(invokeConnector(connector, input, { requestContext: rc })).rejects.toMatchObject({ code: 'CONNECTOR.IDEMPOTENCY_PENDING', retryable: true });
    release();
    await first;
    expect(calls).toHaveLength(1);
  });

  it('does not record results that JSON would change', async () => {
    const store = new InMemoryIdempotencyStore();
    const reservation = await store.reserve(hex('k'), { holder: 'h', pendingTtlMs: 1000 });
    if (reservation.status !== 'reserved') throw new Error('expected a reservation');
    await expect(store.complete(hex('k'), reservation.leaseToken, { at: new Date() } as never)).rejects.toMatchObject({ code: 'CONNECTOR.IDEMPOTENCY_RESULT_NOT_JSON' });
    expect(store.size).toBe(0);
  });

  it('lets a stale reservation be taken over and refuses the old holder late completion', async () => {
    let now = 0;
    const store = new InMemoryIdempotencyStore({ now: () => now });
    const first = await store.reserve(hex('k'), { holder: 'a', pendingTtlMs: 100 });
    expect(await store.reserve(hex('k'), { holder: 'b', pendingTtlMs: 100 })).toEqual({ status: 'pending' });
    now = 200;
    const second = await store.reserve(hex('k'), { holder: 'b', pendingTtlMs: 100 });
    expect(second).toMatchObject({ status: 'reserved', takenOver: true });
    if (first.status !== 'reserved') throw new Error('expected a reservation');
    await expect(store.complete(hex('k'), first.leaseToken, 1)).rejects.toMatchObject({ code: 'CONNECTOR.IDEMPOTENCY_LEASE_LOST' });
  });
});

describe('interrupted attempts (takeover after the pending TTL)', () => {
  async function takeOver(store: InMemoryIdempotencyStore, advance: () => void) {
    // A first holder reserves and dies without completing.
    const key = (await import('./stores/idempotency-key.js')).idempotencyStorageKey({ tenant: 'acme', connectorId: 'refunds.create', key: 'refund-o-9' });
    await store.reserve(key, { holder: 'dead-process', pendingTtlMs: 1_000 });
    advance();
  }

  it('asks reconcile before re-running, and records an already-applied result without executing', async () => {
    let now = 0;
    const store = new InMemoryIdempotencyStore({ now: () => now });
    await takeOver(store, () => (now = 5_000));
    const { connector, audit, calls } = build({ sideEffect: 'write', idempotencyKey: true }, {
      idempotencyStore: store,
      pendingTtlMs: 1_000,
      reconcile: async () => ({ outcome: 'already-applied', result: { ok: true, amount: 40 } }),
    });
    const rc = context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'refund-o-9' });
    expect(await invokeConnector(connector, input, { requestContext: rc })).toEqual({ ok: true, amount: 40 });
    expect(calls).toHaveLength(0);
    expect(lastDecision(audit)?.code).toBe('CONNECTOR.RECONCILED');
    expect(await invokeConnector(connector, input, { requestContext: rc })).toEqual({ ok: true, amount: 40 });
    expect(lastDecision(audit)?.code).toBe('CONNECTOR.REPLAYED');
  });

  it('re-runs once reconcile says the earlier attempt did not apply', async () => {
    let now = 0;
    const store = new InMemoryIdempotencyStore({ now: () => now });
    await takeOver(store, () => (now = 5_000));
    const { connector, calls } = build({ sideEffect: 'write', idempotencyKey: true }, { idempotencyStore: store, reconcile: async () => ({ outcome: 'not-applied' }) });
    await invokeConnector(connector, input, { requestContext: context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'refund-o-9' }) });
    expect(calls).toHaveLength(1);
  });

  it('without reconcile parks the key for an operator instead of re-running silently', async () => {
    let now = 0;
    const store = new InMemoryIdempotencyStore({ now: () => now });
    await takeOver(store, () => (now = 5_000));
    const { connector, calls } = build({ sideEffect: 'write', idempotencyKey: true }, { idempotencyStore: store });
    const rc = context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'refund-o-9' });
    await expect(invokeConnector(connector, input, { requestContext: rc })).rejects.toMatchObject({ code: 'CONNECTOR.IDEMPOTENCY_AMBIGUOUS' });
    await expect(invokeConnector(connector, input, { requestContext: rc })).rejects.toMatchObject({ code: 'CONNECTOR.IDEMPOTENCY_AMBIGUOUS' });
    expect(calls).toHaveLength(0);
  });
});

describe('sliding-window rate limits', () => {
  it('never admit more than the budget across a window boundary', async () => {
    let now = 3_599_000; // one second before the hour
    const store = new InMemoryRateLimitStore({ now: () => now });
    const { connector, calls } = build({ sideEffect: 'read', rateLimit: '3/hour', rateLimitAlgorithm: 'sliding-window' }, { rateLimitStore: store });
    for (let i = 0; i < 3; i += 1) await invokeConnector(connector, input, { requestContext: context() });
    now = 3_601_000; // a fixed window would have reset here
    await expect(invokeConnector(connector, input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.RATE_LIMITED' });
    expect(calls).toHaveLength(3);
  });
});

describe('results that JSON would change', () => {
  it('are returned but not recorded for replay, and the decision says so', async () => {
    const store = new InMemoryIdempotencyStore();
    const { connector, audit } = build({ sideEffect: 'write', idempotencyKey: true }, {
      idempotencyStore: store,
      execute: async (i) => ({ ok: true, amount: i.amount, at: new Date(0) }) as never,
      outputSchema: undefined,
    });
    const rc = context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'k-date' });
    const result = (await invokeConnector(connector, input, { requestContext: rc })) as unknown as { at: Date };
    expect(result.at).toBeInstanceOf(Date);
    expect(lastDecision(audit)).toMatchObject({ decision: 'error', code: 'CONNECTOR.IDEMPOTENCY_RESULT_NOT_JSON' });
    expect(store.size).toBe(0);
  });
});
