import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { noopObserve, type ToolObserve } from '@mastra/core/tools';
import { GatehouseError } from '@gatehouse/contracts';
import { z } from 'zod';
import * as root from '../index.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { type ConnectorExecuteContext, type IdempotencyStore, type PermissionManifest, type RateLimitStore, type ToolPolicyEvaluator } from './types.js';
import {
  approvalRequired,
  CONNECTOR_DECISIONS,
  connectorDecisionRetryable,
  ConnectorEvaluatorError,
  ConnectorPolicyError,
  ConnectorStoreError,
  createConnector,
  IDEMPOTENCY_KEY_CONTEXT_KEY,
  InMemoryIdempotencyStore,
  invokeConnector,
  isConnectorDecisionCode,
  isPrincipalPermissions,
  LLM_BACKGROUND_OVERRIDE_KEY,
  PRINCIPAL_PERMISSIONS_CONTEXT_KEY,
} from './index.js';
import { callThrough } from './testing/entry-points.js';
import { withoutRandomIds } from '../guardrails/leak-records.testing.js';

// Compatibility tests for users of breakwater (docs/migrating/breakwater.md): the connector rows.

const schema = z.object({ orderId: z.string() });
const failingStore = (error: unknown): IdempotencyStore => ({
  reserve: async () => {
    throw error;
  },
  complete: async () => undefined,
  fail: async () => undefined,
  reconcile: async () => undefined,
});

function connector(permissions: PermissionManifest, extra: Record<string, unknown> = {}, seen: ConnectorExecuteContext[] = []) {
  const audit = new AuditLogger();
  const tool = createConnector({
    id: 'crm.lookup',
    description: 'Read one CRM account',
    inputSchema: schema,
    permissions,
    audit,
    execute: async (input, context) => {
      seen.push(context);
      return { name: `account ${input.orderId}` };
    },
    ...extra,
  });
  return { tool, audit };
}

function context(entries: Record<string, unknown> = {}): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  for (const [key, value] of Object.entries(entries)) rc.set(key, value);
  return rc;
}

const refusalOf = async (promise: Promise<unknown>): Promise<unknown> => promise.then(() => 'resolved', (e: unknown) => e);

describe('breakwater: the missing exports, with their meaning', () => {
  it('exports every name the issue lists from the root of @gatehouse/guard', () => {
    for (const name of ['ROLES', 'isPermissionIdentifier', 'isPrincipalPermissions', 'approvalRequired', 'ConnectorStoreError', 'ConnectorEvaluatorError', 'getActor', 'assertAcceptedCallProviderOptions', 'CONNECTOR_DECISIONS']) {
      expect(root).toHaveProperty(name);
    }
  });

  it('approvalRequired resolves approval from a manifest and the organization policy as the connector does', async () => {
    expect(approvalRequired({ sideEffect: 'read' })).toBe(false);
    expect(approvalRequired({ sideEffect: 'write', requiresApproval: true })).toBe(true);
    expect(approvalRequired({ sideEffect: 'destructive' })).toBe(true);
    expect(approvalRequired({ sideEffect: 'destructive' }, { destructiveRequiresApproval: false })).toBe(false);
    const { tool } = connector({ sideEffect: 'destructive' });
    await expect(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_REQUIRED' });
  });

  it('isPrincipalPermissions answers for the projection the gate trusts, and the gate refuses what it refuses', async () => {
    const projection = { principalId: 'user-1', permissions: ['crm.accounts.read'], policyVersion: 'v7' };
    expect(isPrincipalPermissions(projection)).toBe(true);
    // breakwater's projection names no principal: gatehouse records whose permissions they are.
    const breakwaterShaped = { permissions: ['crm.accounts.read'], policyVersion: 'v7' };
    expect(isPrincipalPermissions(breakwaterShaped)).toBe(false);
    expect(isPrincipalPermissions({ ...projection, policyVersion: '' })).toBe(false);
    const { tool } = connector({ sideEffect: 'read', requiredPermissions: ['crm.accounts.read'] });
    await expect(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context({ [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: projection }) })).resolves.toEqual({ name: 'account o-1' });
    await expect(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context({ [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: breakwaterShaped }) })).rejects.toMatchObject({ code: 'CONNECTOR.CONTEXT_INVALID' });
  });

  it('records the permission policy version with a missing-permission denial', async () => {
    const { tool, audit } = connector({ sideEffect: 'read', requiredPermissions: ['crm.accounts.write'] });
    const projection = { principalId: 'user-1', permissions: ['crm.accounts.read'], policyVersion: 'v7' };
    await expect(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context({ [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: projection }) })).rejects.toMatchObject({ code: 'CONNECTOR.PERMISSION_MISSING' });
    expect(audit.events().at(-1)?.detail).toMatchObject({ missing: 1, permissionPolicyVersion: 'v7' });
  });

  it('ConnectorStoreError: a store that cannot answer refuses the call, retryable, typed, without the store error', async () => {
    const { tool } = connector({ sideEffect: 'write', idempotencyKey: true }, { idempotencyStore: failingStore(new Error('redis at 10.0.0.7 refused key tenant-acme/secret-key')) });
    const error = await refusalOf(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'k-1' }) }));
    expect(error).toBeInstanceOf(ConnectorStoreError);
    expect(error).toMatchObject({ code: 'CONNECTOR.IDEMPOTENCY_STORE_FAILED', retryable: true, store: 'idempotency', operation: 'reserve', connectorId: 'crm.lookup' });
    expect((error as Error).cause).toBeUndefined();
    expect(JSON.stringify([(error as GatehouseError).toJSON(), (error as Error).message])).not.toContain('10.0.0.7');
  });

  it('ConnectorStoreError names a rate-limit store failure and keeps only a gatehouse code of the cause', async () => {
    const refusing: RateLimitStore = {
      consume: async () => {
        throw new GatehouseError('LEDGER.FORBIDDEN', 'this API key is not bound to the tenant of the call', { category: 'security' });
      },
    };
    const { tool } = connector({ sideEffect: 'read', rateLimit: '5/minute' }, { rateLimitStore: refusing });
    const error = await refusalOf(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context() }));
    expect(error).toBeInstanceOf(ConnectorStoreError);
    expect(error).toMatchObject({ code: 'CONNECTOR.RATE_LIMIT_STORE_FAILED', store: 'rate-limit', operation: 'consume', details: { storeCode: 'LEDGER.FORBIDDEN' } });
  });

  it('ConnectorEvaluatorError: an evaluator that throws or answers garbage fails closed, naming only the evaluator', async () => {
    const throwing: ToolPolicyEvaluator = {
      name: 'crm-hours',
      evaluate: () => {
        throw new Error('customer 4111 1111 1111 1111 is blocked');
      },
    };
    const garbage = { name: 'crm-quota', evaluate: () => 'yes' } as unknown as ToolPolicyEvaluator;
    for (const evaluator of [throwing, garbage]) {
      const { tool, audit } = connector({ sideEffect: 'read' }, { policies: { evaluators: [evaluator] } });
      const error = await refusalOf(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context() }));
      expect(error).toBeInstanceOf(ConnectorEvaluatorError);
      expect(error).toMatchObject({ code: 'CONNECTOR.POLICY_FAILED', evaluator: evaluator.name, retryable: false });
      expect(withoutRandomIds(JSON.stringify([error, (error as Error).message, audit.events()]))).not.toContain('4111');
      expect(audit.events().at(-1)).toMatchObject({ decision: 'denied', code: 'CONNECTOR.POLICY_FAILED', detail: { evaluator: evaluator.name } });
    }
  });

  it("an evaluator's own denial stays a ConnectorPolicyError with the code it gave", async () => {
    const denying: ToolPolicyEvaluator = { name: 'crm-hours', evaluate: () => ({ allowed: false, code: 'CONNECTOR.OUTSIDE_HOURS' }) };
    const { tool } = connector({ sideEffect: 'read' }, { policies: { evaluators: [denying] } });
    const error = await refusalOf(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context() }));
    expect(error).toBeInstanceOf(ConnectorPolicyError);
    expect(error).toMatchObject({ code: 'CONNECTOR.OUTSIDE_HOURS', message: 'refused by tool policy crm-hours' });
  });

  it('ConnectorDecisionCode: every code a connector records or throws is in the catalogue, with its retryability', async () => {
    const { tool, audit } = connector({ sideEffect: 'write', idempotencyKey: true, requiresApproval: true }, { idempotencyStore: new InMemoryIdempotencyStore() });
    const thrown = await refusalOf(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'k-1' }) }));
    const codes = [...audit.events().map((e) => e.code), (thrown as GatehouseError).code];
    expect(codes.length).toBeGreaterThan(0);
    for (const code of codes) expect(isConnectorDecisionCode(code)).toBe(true);
    expect(connectorDecisionRetryable('CONNECTOR.RATE_LIMITED')).toBe(true);
    expect(connectorDecisionRetryable('CONNECTOR.APPROVAL_REQUIRED')).toBe(false);
    expect(isConnectorDecisionCode('toString')).toBe(false);
    expect(() => connectorDecisionRetryable('APPROVAL_GRANT_MISSING' as never)).toThrow(TypeError);
    expect(Object.isFrozen(CONNECTOR_DECISIONS)).toBe(true);
  });
});

describe("breakwater: invokeConnector's observe option", () => {
  const recorder = () => {
    const logs: string[] = [];
    const observe: ToolObserve = {
      span: async (name, fn) => {
        logs.push(`span:${name}`);
        return fn();
      },
      log: (level, message) => void logs.push(`${level}:${message}`),
    };
    return { logs, observe };
  };

  it('hands execute the observe helper it was given', async () => {
    const { logs, observe } = recorder();
    const audit = new AuditLogger();
    const tool = createConnector({
      id: 'crm.lookup',
      description: 'Read one CRM account',
      inputSchema: schema,
      permissions: { sideEffect: 'read' },
      audit,
      execute: async (input, ctx) => {
        ctx.observe.log('info', 'fetching account');
        return ctx.observe.span('fetch account', () => ({ name: input.orderId }));
      },
    });
    await expect(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context(), observe })).resolves.toEqual({ name: 'o-1' });
    expect(logs).toEqual(['info:fetching account', 'span:fetch account']);
  });

  it("hands execute Mastra's no-op helper when none is given, and the loop's own in an agent loop", async () => {
    const seen: ConnectorExecuteContext[] = [];
    const { tool } = connector({ sideEffect: 'read' }, {}, seen);
    await invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context() });
    expect(seen[0]?.observe).toBe(noopObserve);
    expect((await callThrough('agent-loop', tool, { orderId: 'o-2' }, context())).ok).toBe(true);
    expect(typeof seen[1]?.observe.span).toBe('function');
    expect(typeof seen[1]?.observe.log).toBe('function');
  });

  it('refuses an observe that is not a ToolObserve, and still every other unknown option, with CONNECTOR.INVOCATION_OPTIONS_INVALID', async () => {
    const { tool } = connector({ sideEffect: 'read' });
    for (const options of [{ observe: true }, { observe: { span: () => undefined } }, { retries: 3 }]) {
      await expect(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context(), ...options } as never)).rejects.toMatchObject({ code: 'CONNECTOR.INVOCATION_OPTIONS_INVALID' });
    }
  });

  it("binds the helper once: replacing the caller's methods later changes nothing", async () => {
    const { logs, observe } = recorder();
    const mutable = { ...observe };
    const audit = new AuditLogger();
    const tool = createConnector({
      id: 'crm.lookup',
      description: 'x',
      inputSchema: schema,
      permissions: { sideEffect: 'read' },
      audit,
      execute: async (input, ctx) => {
        mutable.log = () => void logs.push('replaced');
        ctx.observe.log('info', 'kept');
        return { name: input.orderId };
      },
    });
    await invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context(), observe: mutable });
    expect(logs).toEqual(['info:kept']);
  });
});

describe('breakwater: connector behaviours a migrating user relies on', () => {
  it('refuses the direct-call background override unless the connector opted in (LLM_BACKGROUND_OVERRIDE_KEY)', async () => {
    expect(LLM_BACKGROUND_OVERRIDE_KEY).toBe('_background');
    const loose = z.object({ orderId: z.string() }).passthrough();
    const make = (background: boolean) =>
      createConnector({ id: 'crm.lookup', description: 'x', inputSchema: loose, permissions: { sideEffect: 'read', ...(background ? { background: true } : {}) }, execute: async () => ({ ok: true }) });
    const input = { orderId: 'o-1', [LLM_BACKGROUND_OVERRIDE_KEY]: { enabled: true } };
    await expect(invokeConnector(make(false), input, { requestContext: context() })).rejects.toMatchObject({ code: 'CONNECTOR.BACKGROUND_NOT_ALLOWED' });
    await expect(invokeConnector(make(true), input, { requestContext: context() })).resolves.toEqual({ ok: true });
  });

  it('reserves an idempotency key with the default pending TTL of 900,000 ms', async () => {
    const ttls: number[] = [];
    const store: IdempotencyStore = { ...failingStore(undefined), reserve: async (_key, { pendingTtlMs }) => (ttls.push(pendingTtlMs), { status: 'reserved', leaseToken: 'l', takenOver: false }) };
    const { tool } = connector({ sideEffect: 'write', idempotencyKey: true }, { idempotencyStore: store });
    await invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'k-1' }) });
    expect(ttls).toEqual([900_000]);
  });

  it('keeps the result and records an error when the store cannot record it after the tool ran', async () => {
    const store: IdempotencyStore = {
      ...failingStore(undefined),
      reserve: async () => ({ status: 'reserved', leaseToken: 'l', takenOver: false }),
      complete: async () => {
        throw new Error('commit failed for key secret-key');
      },
    };
    const { tool, audit } = connector({ sideEffect: 'write', idempotencyKey: true }, { idempotencyStore: store });
    await expect(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context({ [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'k-1' }) })).resolves.toEqual({ name: 'account o-1' });
    expect(audit.events().map((e) => `${e.decision}:${e.code}`)).toEqual(['allowed:CONNECTOR.ALLOWED', 'error:CONNECTOR.IDEMPOTENCY_STORE_FAILED']);
    expect(JSON.stringify(audit.events())).not.toContain('secret-key');
  });

  it("does not read breakwater's context key strings: an actor under breakwater.actor is no actor", async () => {
    const { tool, audit } = connector({ sideEffect: 'read' });
    const rc = new RequestContext();
    rc.set('breakwater.actor', { id: 'user-1', role: 'operator' });
    await invokeConnector(tool, { orderId: 'o-1' }, { requestContext: rc });
    expect(audit.events().at(-1)?.actor).toBeUndefined();
  });

  it('accepts dotted breakwater permission identifiers in a manifest as they are', () => {
    expect(() => connector({ sideEffect: 'read', requiredPermissions: ['crm.accounts.read', 'refunds:create'] })).not.toThrow();
    expect(() => connector({ sideEffect: 'read', requiredPermissions: ['crm'] })).toThrow(TypeError);
  });
});

describe('breakwater: a malformed audit context at the tool boundary', () => {
  it.each([
    ['a string', 'run-1'],
    ['an array', ['run-1']],
    ['an unknown field', { agentId: 'crm-bot', entryPath: 'http', tenantId: 'acme' }],
    ['an empty field', { agentId: '', entryPath: 'http' }],
    ['a field that is not a string', { agentId: 'crm-bot', runId: 7 }],
  ])('records an audit.context error before the decision for %s, and leaves the decision unchanged', async (_what, value) => {
    const { tool, audit } = connector({ sideEffect: 'read' });
    await expect(invokeConnector(tool, { orderId: 'o-1' }, { requestContext: context({ [AGENT_AUDIT_CONTEXT_KEY]: value }) })).resolves.toEqual({ name: 'account o-1' });
    expect(audit.events().map((e) => `${e.action}:${e.decision}:${e.code}`)).toEqual(['audit.context:error:AUDIT.CONTEXT_INVALID', 'tool.execute:allowed:CONNECTOR.ALLOWED']);
    expect(audit.events()[0]).toMatchObject({ boundary: 'tool', resource: 'connector:crm.lookup', reason: 'trusted audit context is malformed; only its well-formed fields were kept' });
    expect(JSON.stringify(audit.events())).not.toContain('tenantId');
  });

  it('records it once per call, however many decisions the call records, and never for a well-formed context', async () => {
    const { tool, audit } = connector({ sideEffect: 'write', idempotencyKey: true }, { idempotencyStore: new InMemoryIdempotencyStore() });
    const rc = context({ [AGENT_AUDIT_CONTEXT_KEY]: { agentId: 'crm-bot', extra: 'x' }, [IDEMPOTENCY_KEY_CONTEXT_KEY]: 'k-1' });
    await invokeConnector(tool, { orderId: 'o-1' }, { requestContext: rc });
    await invokeConnector(tool, { orderId: 'o-1' }, { requestContext: rc });
    expect(audit.events().map((e) => e.code)).toEqual(['AUDIT.CONTEXT_INVALID', 'CONNECTOR.ALLOWED', 'AUDIT.CONTEXT_INVALID', 'CONNECTOR.REPLAYED']);
    const fine = connector({ sideEffect: 'read' });
    await invokeConnector(fine.tool, { orderId: 'o-1' }, { requestContext: context({ [AGENT_AUDIT_CONTEXT_KEY]: { tenant: 'acme', agentId: 'crm-bot', runId: 'run-1', entryPath: 'http' } }) });
    expect(fine.audit.events().map((e) => e.code)).toEqual(['CONNECTOR.ALLOWED']);
    expect(fine.audit.events()[0]?.context).toEqual({ tenant: 'acme', agentId: 'crm-bot', runId: 'run-1', entryPath: 'http' });
  });
});
