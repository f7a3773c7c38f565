import { describe, expect, it } from '@jest/globals';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { RequestContext } from '@mastra/core/request-context';
import { AuditLogger } from '../audit/audit-logger.js';
import { scriptedModel } from '../testing/scripted-model.js';
import * as rbac from './index.js';
import { ACTOR_CONTEXT_KEY, actorFromRequestContext, AGENT_AUDIT_CONTEXT_KEY, decideRoleGate, getActor, isPermissionIdentifier, isPrincipalPermissions, parseActor, RBACMiddleware, ROLES } from './index.js';

// Compatibility tests for users of breakwater (docs/migrating/breakwater.md): the rbac rows.

/** A plain Mastra agent behind RBACMiddleware; resolves with what the model was asked, or the tripwire. */
async function callThrough(middleware: RBACMiddleware, requestContext: RequestContext): Promise<{ text: string; code: unknown }> {
  const agent = new Agent({ id: 'plain', name: 'plain', instructions: 'x', model: scriptedModel({ text: 'hello' }) as never, inputProcessors: [middleware] });
  new Mastra({ agents: { plain: agent }, logger: false });
  const result = await agent.generate('hi', { requestContext });
  return { text: result.tripwire ? '' : result.text, code: (result.tripwire?.metadata as { code?: unknown } | undefined)?.code };
}

const withActor = (actor: unknown): RequestContext => {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, actor);
  return rc;
};

describe('breakwater rbac exports', () => {
  it("ROLES lists breakwater's five role labels, frozen, and an allowlist built from it admits exactly those", () => {
    expect(ROLES).toEqual(['admin', 'builder', 'operator', 'reviewer', 'viewer']);
    expect(Object.isFrozen(ROLES)).toBe(true);
    const gate = { allowedRoles: ROLES };
    for (const role of ROLES) expect(decideRoleGate(parseActor({ id: 'u1', role }), gate).allowed).toBe(true);
    expect(decideRoleGate(parseActor({ id: 'u1', role: 'root' }), gate)).toMatchObject({ allowed: false, code: 'RBAC.ROLE_NOT_ALLOWED' });
  });

  it('getActor is the default actor lookup: the validated actor of the trusted context, or none', () => {
    expect(getActor).toBe(actorFromRequestContext);
    expect(getActor(withActor({ id: 'user-42', role: 'operator' }))).toEqual({ id: 'user-42', role: 'operator' });
    expect(getActor(withActor({ id: 'user-42', role: 'operator', isAdmin: true }))).toBeUndefined();
    expect(getActor(new RequestContext())).toBeUndefined();
  });

  it('isPermissionIdentifier accepts gatehouse resource:action and breakwater resource.action identifiers, nothing else', () => {
    for (const ok of ['refunds:create', 'crm.accounts.read', 'crm.read', 'reports:export.*']) expect(isPermissionIdentifier(ok)).toBe(true);
    for (const bad of ['crm', 'Crm.read', 'crm..read', 'crm read', 'crm.read ', '', 7, null, `a.${'b'.repeat(300)}`]) expect(isPermissionIdentifier(bad)).toBe(false);
  });

  it("the rbac subpath carries what breakwater's did: permissions, the projection key and the audit logger", () => {
    expect(rbac.PRINCIPAL_PERMISSIONS_CONTEXT_KEY).toBe('gatehouse.principalPermissions');
    expect(rbac.isPrincipalPermissions).toBe(isPrincipalPermissions);
    expect(new rbac.AuditLogger()).toBeInstanceOf(AuditLogger);
    expect(rbac.AGENT_AUDIT_CONTEXT_KEY).toBe(AGENT_AUDIT_CONTEXT_KEY);
  });
});

describe('RBACMiddleware with breakwater options', () => {
  it('takes the caller from a getActor hook of trusted host code, validated like any actor', async () => {
    const middleware = new RBACMiddleware({ allowedRoles: ['operator'], getActor: () => ({ id: 'svc-user', role: 'operator' }) });
    expect(await callThrough(middleware, new RequestContext())).toEqual({ text: 'hello', code: undefined });
  });

  it('denies when getActor throws or returns something that is not an actor', async () => {
    const throwing = new RBACMiddleware({
      allowedRoles: ['operator'],
      getActor: () => {
        throw new Error('session store down');
      },
    });
    const malformed = new RBACMiddleware({ allowedRoles: ['operator'], getActor: () => ({ id: 'u', role: 'operator', kind: 'robot' }) });
    for (const middleware of [throwing, malformed]) expect(await callThrough(middleware, withActor({ id: 'u', role: 'operator' }))).toEqual({ text: '', code: 'RBAC.NO_ACTOR' });
  });

  it('checks allowedPrincipalKinds before the role and consults no role for automated callers', async () => {
    const middleware = new RBACMiddleware({ allowedRoles: ['operator'], allowedPrincipalKinds: ['human', 'service'] });
    expect((await callThrough(middleware, withActor({ id: 'billing', role: 'viewer', kind: 'service' }))).code).toBeUndefined();
    expect((await callThrough(middleware, withActor({ id: 'bot', role: 'operator', kind: 'agent' }))).code).toBe('RBAC.KIND_NOT_ALLOWED');
  });

  it('refuses an option it does not know and a getActor that is not a function', () => {
    expect(() => new RBACMiddleware({ allowedRoles: ['operator'], roles: ['admin'] } as never)).toThrow(/RBACMiddleware: unknown option "roles"/);
    expect(() => new RBACMiddleware({ allowedRoles: ['operator'], getActor: 'ACTOR' } as never)).toThrow(/getActor must be a function/);
  });

  it('records an audit.context error before its decision when the audit context is malformed', async () => {
    const audit = new AuditLogger();
    const rc = withActor({ id: 'u', role: 'operator' });
    rc.set(AGENT_AUDIT_CONTEXT_KEY, { agentId: 'support', entryPath: 'http', principal: 'u' });
    await callThrough(new RBACMiddleware({ allowedRoles: ['operator'], audit }), rc);
    expect(audit.events().map((e) => `${e.boundary}:${e.action}:${e.code}`)).toEqual(['agent-entry:audit.context:AUDIT.CONTEXT_INVALID', 'agent-entry:agent.call:RBAC.ALLOWED']);
    expect(audit.events()[0]?.detail).toEqual({ problem: 'unknown-field' });
  });
});
