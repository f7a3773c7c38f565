import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { createConnector, invokeConnector } from './connector.js';
import { ISOLATION_SCOPE_CONTEXT_KEY, PRINCIPAL_PERMISSIONS_CONTEXT_KEY } from './context-keys.js';
import { InMemoryRateLimitStore } from './stores/in-memory-rate-limit-store.js';
import { networkEgress } from './tool-policies.js';
import { type ConnectorPolicies, type PermissionManifest, type ToolCallContext } from './types.js';

// The gate remembers what cannot change between calls (an egress verdict on a frozen declaration,
// a budget's storage key) and searches short permission lists instead of indexing them: each
// refusal must still come on every call, whichever way the answer was found.

function build(permissions: PermissionManifest, policies: ConnectorPolicies = {}, extra: { rateLimitStore?: InMemoryRateLimitStore } = {}) {
  const audit = new AuditLogger();
  const connector = createConnector({
    id: 'memo.check',
    description: 'memo check',
    inputSchema: z.object({ n: z.number() }),
    permissions,
    policies,
    audit,
    execute: async (input: { n: number }) => ({ n: input.n }),
    ...extra,
  });
  return { connector, audit };
}

function context(entries: Record<string, unknown>): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'bot', runId: 'run-1', entryPath: 'test' });
  for (const [k, v] of Object.entries(entries)) rc.set(k, v);
  return rc;
}

const codeOf = async (call: Promise<unknown>): Promise<string> =>
  call.then(
    () => 'ran',
    (error: { code?: string }) => error.code ?? 'threw',
  );

describe('required permissions, short and long lists', () => {
  it.each([
    ['a short list (searched)', 3],
    ['a long list (indexed)', 40],
  ])('refuses a caller missing one permission in %s, and counts what is missing', async (_what, size) => {
    const { connector, audit } = build({ sideEffect: 'read', requiredPermissions: ['orders:read', 'orders:price'] });
    const others = Array.from({ length: size - 1 }, (_, i) => `catalog:read-${i}`);
    const without = context({ [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: { principalId: 'u', permissions: [...others, 'orders:read'] } });
    expect(await codeOf(invokeConnector(connector, { n: 1 }, { requestContext: without }))).toBe('CONNECTOR.PERMISSION_MISSING');
    expect(audit.events().at(-1)?.detail).toMatchObject({ missing: 1 });
    const neither = context({ [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: { principalId: 'u', permissions: others } });
    expect(await codeOf(invokeConnector(connector, { n: 1 }, { requestContext: neither }))).toBe('CONNECTOR.PERMISSION_MISSING');
    expect(audit.events().at(-1)?.detail).toMatchObject({ missing: 2 });
    const both = context({ [PRINCIPAL_PERMISSIONS_CONTEXT_KEY]: { principalId: 'u', permissions: [...others, 'orders:price', 'orders:read'] } });
    expect(await codeOf(invokeConnector(connector, { n: 1 }, { requestContext: both }))).toBe('ran');
  });
});

describe('networkEgress remembers its verdict only on a frozen declaration', () => {
  const call = (egress: readonly string[]) => ({ manifest: { sideEffect: 'read', egress } }) as unknown as ToolCallContext;

  it('refuses a frozen declaration outside the allowlist on every call', () => {
    const evaluator = networkEgress({ allowedDomains: ['*.example.com'] });
    const outside = Object.freeze(['api.evil.test']);
    for (let i = 0; i < 3; i++) expect(evaluator.evaluate(undefined, call(outside))).toEqual({ allowed: false, code: 'CONNECTOR.EGRESS_NOT_ALLOWED' });
    const inside = Object.freeze(['api.example.com']);
    for (let i = 0; i < 3; i++) expect(evaluator.evaluate(undefined, call(inside))).toEqual({ allowed: true });
  });

  it('judges a declaration that can change again on each call', () => {
    const evaluator = networkEgress({ allowedDomains: ['*.example.com'] });
    const declared = ['api.example.com'];
    expect(evaluator.evaluate(undefined, call(declared))).toEqual({ allowed: true });
    declared.push('api.evil.test');
    expect(evaluator.evaluate(undefined, call(declared))).toEqual({ allowed: false, code: 'CONNECTOR.EGRESS_NOT_ALLOWED' });
  });
});

describe('rate-limit budgets by tenant', () => {
  it('keeps one budget per tenant: one tenant spending its budget leaves the other’s whole', async () => {
    const rateLimitStore = new InMemoryRateLimitStore();
    const { connector } = build({ sideEffect: 'read', rateLimit: '2/hour' }, {}, { rateLimitStore });
    const call = (tenant: string) => codeOf(invokeConnector(connector, { n: 1 }, { requestContext: context({ [ISOLATION_SCOPE_CONTEXT_KEY]: tenant }) }));
    expect([await call('acme'), await call('acme'), await call('acme')]).toEqual(['ran', 'ran', 'CONNECTOR.RATE_LIMITED']);
    expect([await call('globex'), await call('globex'), await call('globex')]).toEqual(['ran', 'ran', 'CONNECTOR.RATE_LIMITED']);
    expect(await call('acme')).toBe('CONNECTOR.RATE_LIMITED');
  });
});
