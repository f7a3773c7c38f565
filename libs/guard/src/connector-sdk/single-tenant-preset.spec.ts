import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { createConnector, invokeConnector } from './connector.js';
import { IDEMPOTENCY_KEY_CONTEXT_KEY } from './context-keys.js';
import { type SingleTenantConnectorPoliciesOptions, singleTenantConnectorPolicies, SingleTenantPresetError } from './single-tenant-preset.js';
import { InMemoryIdempotencyStore } from './stores/in-memory-idempotency-store.js';
import { createLedgerStores } from './stores/ledger-client.js';
import { crossWorkflowIsolation, tenantIsolation } from './tool-policies.js';
import { type ConnectorPolicies, type PermissionManifest } from './types.js';

// breakwater's singleTenantConnectorPolicies over gatehouse's durable ledger stores and audit export.

/** A ledger service that answers every request: reserved keys, recorded results, budgets left. */
function fakeLedger() {
  const paths: string[] = [];
  const fetch = (async (url: URL) => {
    const path = new URL(String(url)).pathname;
    paths.push(path);
    const body = path.endsWith('/reservations') ? { status: 'reserved', leaseToken: 'lease-1', takenOver: false } : path.endsWith('/consumptions') ? { allowed: true, remaining: 9, resetAt: 0 } : {};
    return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
  }) as unknown as typeof globalThis.fetch;
  return { paths, stores: createLedgerStores({ baseUrl: 'http://ledger.internal:4103', apiKey: 'lk_preset-test-key-0123456789', fetch }) };
}

const exported = () => new AuditLogger({ sink: () => undefined });
const base = (): SingleTenantConnectorPoliciesOptions => ({
  audit: { mode: 'production', logger: exported() },
  egress: { allowedDomains: ['*.example-crm.com'] },
  permissions: { principalPermissions: 'configured' },
});

function build(permissions: PermissionManifest, policies: ConnectorPolicies, extra: Record<string, unknown> = {}) {
  return createConnector({
    id: 'crm.update',
    description: 'Update one CRM account',
    inputSchema: z.object({ accountId: z.string() }),
    permissions,
    policies,
    execute: async ({ accountId }) => ({ updated: accountId }),
    ...extra,
  });
}

function refusal(make: () => unknown): SingleTenantPresetError | string {
  try {
    make();
  } catch (error) {
    return error instanceof SingleTenantPresetError ? error : `not a SingleTenantPresetError: ${String(error)}`;
  }
  return 'accepted';
}

describe('singleTenantConnectorPolicies refuses to build without what a deployment needs', () => {
  it.each([
    ['no egress allowlist', { audit: base().audit, permissions: base().permissions }, 'CONNECTOR.PRESET_INCOMPLETE', 'egress'],
    ['no audit posture', { egress: base().egress, permissions: base().permissions }, 'CONNECTOR.PRESET_INCOMPLETE', 'audit'],
    ['a production logger that exports nothing', { ...base(), audit: { mode: 'production', logger: new AuditLogger() } }, 'CONNECTOR.PRESET_INCOMPLETE', 'audit.logger.sink'],
    ['a production posture without a logger', { ...base(), audit: { mode: 'production' } }, 'CONNECTOR.PRESET_INCOMPLETE', 'audit.logger'],
    ['a development posture without the explicit opt-out', { ...base(), audit: { mode: 'development' } }, 'CONNECTOR.PRESET_INVALID', 'audit.allowUnaudited'],
    ['no principal-permission wiring', { audit: base().audit, egress: base().egress }, 'CONNECTOR.PRESET_INCOMPLETE', 'permissions'],
    ['an in-memory idempotency store as the durable one', { ...base(), durableStores: { idempotency: new InMemoryIdempotencyStore() } }, 'CONNECTOR.PRESET_INVALID', 'durableStores.idempotency'],
    ['tenantIsolation(), which contradicts one organization', { ...base(), evaluators: [crossWorkflowIsolation(), tenantIsolation()] }, 'CONNECTOR.PRESET_INVALID', 'evaluators[1]'],
    ["breakwater's legacy-key acknowledgement, which has nothing to acknowledge here", { ...base(), idempotencyKeyMigration: 'legacy-writers-drained' }, 'CONNECTOR.PRESET_INVALID', 'options'],
    ["breakwater's writePermissions", { ...base(), writePermissions: { destructiveRequiresApproval: true } }, 'CONNECTOR.PRESET_INVALID', 'options'],
  ])('%s', (_what, options, code, field) => {
    const error = refusal(() => singleTenantConnectorPolicies(options as never));
    expect(error).toMatchObject({ code, field, details: { field } });
  });

  it('names an unknown option in its message, and never an option value', () => {
    const error = refusal(() => singleTenantConnectorPolicies({ ...base(), writePermissions: { requireApproval: ['secret-connector-name'] } } as never));
    expect((error as Error).message).toMatch(/unknown option "writePermissions"/);
    expect((error as Error).message).not.toContain('secret-connector-name');
  });

  it('builds a frozen policy set from the egress allowlist, the export and the wiring, with the development opt-out too', () => {
    const preset = singleTenantConnectorPolicies(base());
    expect(Object.isFrozen(preset)).toBe(true);
    expect(preset.networkEgress?.allowedDomains).toEqual(['*.example-crm.com']);
    expect(() => singleTenantConnectorPolicies({ ...base(), audit: { mode: 'development', allowUnaudited: true } })).not.toThrow();
  });
});

describe('a connector built with the preset', () => {
  it('refuses a declared idempotency key or rate limit without the durable store for it, naming it', () => {
    const preset = singleTenantConnectorPolicies(base());
    expect(refusal(() => build({ sideEffect: 'write', idempotencyKey: true }, preset))).toMatchObject({ code: 'CONNECTOR.PRESET_INCOMPLETE', field: 'durableStores.idempotency', details: { connectorId: 'crm.update' } });
    expect(refusal(() => build({ sideEffect: 'write', rateLimit: '10/hour' }, preset))).toMatchObject({ code: 'CONNECTOR.PRESET_INCOMPLETE', field: 'durableStores.rateLimit' });
  });

  it('refuses required permissions when the host does not project them', () => {
    const preset = singleTenantConnectorPolicies({ ...base(), permissions: { principalPermissions: 'not-configured' } });
    expect(refusal(() => build({ sideEffect: 'read', requiredPermissions: ['crm.accounts.write'] }, preset))).toMatchObject({ code: 'CONNECTOR.PRESET_INCOMPLETE', field: 'permissions.principalPermissions' });
  });

  it('refuses declared egress outside the organization allowlist', () => {
    const preset = singleTenantConnectorPolicies(base());
    expect(() => build({ sideEffect: 'read', egress: ['api.elsewhere.example'] }, preset)).toThrow(/outside the organization allowlist/);
  });

  it('runs on the durable stores and records every decision to the export', async () => {
    const { paths, stores } = fakeLedger();
    const exportedEvents: string[] = [];
    const logger = new AuditLogger({ sink: (event) => void exportedEvents.push(event.code) });
    const preset = singleTenantConnectorPolicies({ ...base(), audit: { mode: 'production', logger }, durableStores: { idempotency: stores.idempotencyStore, rateLimit: stores.rateLimitStore } });
    const tool = build({ sideEffect: 'write', idempotencyKey: true, rateLimit: '10/hour', egress: ['api.example-crm.com'] }, preset);
    const rc = new RequestContext();
    rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
    rc.set(IDEMPOTENCY_KEY_CONTEXT_KEY, 'update-a-1');
    await expect(invokeConnector(tool, { accountId: 'a-1' }, { requestContext: rc })).resolves.toEqual({ updated: 'a-1' });
    expect(paths).toEqual(['/v1/idempotency/reservations', '/v1/rate/consumptions', '/v1/idempotency/completions']);
    expect(exportedEvents).toEqual(['CONNECTOR.ALLOWED']);
  });

  it('refuses a preset whose members were replaced after it was built: weakened destructive approval, swapped evaluators, a forged copy', () => {
    const preset = singleTenantConnectorPolicies(base());
    expect(refusal(() => build({ sideEffect: 'destructive' }, { ...preset, destructiveRequiresApproval: false }))).toMatchObject({ code: 'CONNECTOR.PRESET_TAMPERED', field: 'policies.destructiveRequiresApproval' });
    expect(refusal(() => build({ sideEffect: 'read' }, { ...preset, evaluators: [] }))).toMatchObject({ code: 'CONNECTOR.PRESET_TAMPERED', field: 'policies.evaluators' });
    expect(refusal(() => build({ sideEffect: 'read' }, { ...preset, networkEgress: { allowedDomains: ['*'] } }))).toMatchObject({ code: 'CONNECTOR.PRESET_TAMPERED', field: 'policies.networkEgress' });
    const symbol = Object.getOwnPropertySymbols(preset)[0] as symbol;
    expect(refusal(() => build({ sideEffect: 'read' }, { ...preset, [symbol]: { forged: true } } as never))).toMatchObject({ code: 'CONNECTOR.PRESET_TAMPERED', field: 'policies' });
    // A copy left as it was is the same preset.
    expect(refusal(() => build({ sideEffect: 'read' }, { ...preset }))).toBe('accepted');
  });

  it('keeps destructive approval on', async () => {
    const tool = build({ sideEffect: 'destructive' }, singleTenantConnectorPolicies(base()));
    const rc = new RequestContext();
    rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
    await expect(invokeConnector(tool, { accountId: 'a-1' }, { requestContext: rc })).rejects.toMatchObject({ code: 'CONNECTOR.APPROVAL_REQUIRED' });
  });

  it('refuses a connector that brings its own store or logger, which would bypass the preset', () => {
    const preset = singleTenantConnectorPolicies(base());
    expect(refusal(() => build({ sideEffect: 'write', idempotencyKey: true }, preset, { idempotencyStore: new InMemoryIdempotencyStore() }))).toMatchObject({ code: 'CONNECTOR.PRESET_INVALID', field: 'idempotencyStore' });
    expect(refusal(() => build({ sideEffect: 'read' }, preset, { audit: new AuditLogger() }))).toMatchObject({ code: 'CONNECTOR.PRESET_INVALID', field: 'audit' });
  });

  it('with requireEgressEnforcement refuses a connector whose egress is declaration-only', () => {
    const preset = singleTenantConnectorPolicies({ ...base(), requireEgressEnforcement: true });
    expect(refusal(() => build({ sideEffect: 'read', egressEnforcement: 'declaration-only' }, preset))).toMatchObject({ code: 'CONNECTOR.PRESET_INVALID', field: 'permissions.egressEnforcement' });
    expect(refusal(() => build({ sideEffect: 'read' }, preset))).toBe('accepted');
  });
});
