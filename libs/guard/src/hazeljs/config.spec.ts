import { describe, expect, it } from '@jest/globals';
import { compileGatekeeperBundle, createGatekeeper, type GatekeeperContext } from '../gatekeeper/index.js';
import { parseGatekeeperConfig, toGatekeeperBundle } from './index.js';
import { thrown } from './spec-support.testing.js';

// agent-gatekeeper.yaml as HazelJS ships it (its example, less the classification match gatehouse refuses).
const CONFIG = `mode: enforce
defaultDecision: deny
policies:
  - id: refund-agent-stripe-policy
    version: "1.0.0"
    priority: 100
    match:
      agents: [refund-agent]
      tools: [stripe.refund]
      environments: [production]
    rules:
      maxTransactionAmount: 100
      enforceTenantField: tenantId
      requireApprovalWhenFieldGt:
        - field: amount
          threshold: 50
  - id: prod-deny-confirmed
    version: "1.0.0"
    priority: 1000
    match:
      environments: [production]
    rules:
      denyWhenFieldEquals:
        - field: confirm
          value: true
`;

const call = (input: Record<string, unknown>, tenant = 'tenant-a'): GatekeeperContext => ({ identity: { agent: 'refund-agent', tenant, environment: 'production' }, call: { tool: 'stripe.refund' }, input: input as never });

describe('agent-gatekeeper.yaml as a gatehouse bundle', () => {
  it('becomes data only: every declarative rule an expression, nothing the guard must register', () => {
    const converted = toGatekeeperBundle(CONFIG);
    expect(converted).toMatchObject({ mode: 'enforce', defaultDecision: 'deny', bundle: { policySetId: 'hazeljs' } });
    expect(converted.policies).toEqual([{ id: 'refund-agent-stripe-policy', version: '1.0.0', priority: 100 }, { id: 'prod-deny-confirmed', version: '1.0.0', priority: 1000 }]);
    expect(compileGatekeeperBundle(JSON.parse(JSON.stringify(converted.bundle))).predicates).toEqual([]);
    expect(converted.bundle.policies[0]?.rules).toEqual({ denyWhen: '(input.amount > 100) or (input["tenantId"] != identity.tenant)', requireApprovalWhen: '(input["amount"] > 50)' });
  });

  it('decides as HazelJS did: over the limit, another tenant or a confirm flag denies; above 50 needs a person; nothing applied denies', () => {
    const gk = createGatekeeper({ bundle: toGatekeeperBundle(CONFIG).bundle });
    expect(gk.evaluate(call({ amount: 500, tenantId: 'tenant-a' })).effect).toBe('deny');
    expect(gk.evaluate(call({ amount: 80, tenantId: 'tenant-b' })).effect).toBe('deny');
    expect(gk.evaluate(call({ amount: 10, tenantId: 'tenant-a', confirm: true })).effect).toBe('deny');
    expect(gk.evaluate(call({ amount: 80, tenantId: 'tenant-a' })).effect).toBe('require-approval');
    expect(gk.evaluate(call({ amount: 40, tenantId: 'tenant-a' }))).toMatchObject({ effect: 'deny', reason: 'no policy allows this call (default deny)' });
    const open = createGatekeeper({ bundle: toGatekeeperBundle(CONFIG.replace('defaultDecision: deny', 'defaultDecision: allow')).bundle });
    expect(open.evaluate(call({ amount: 40, tenantId: 'tenant-a' }))).toMatchObject({ effect: 'allow', policyId: 'hazeljs.default-allow' });
    expect(open.evaluate(call({ amount: 500, tenantId: 'tenant-a' })).effect).toBe('deny');
  });

  it('takes a policySetId, and allowWhen/denyWhen written as expressions', () => {
    const converted = toGatekeeperBundle({ policySetId: 'payments', policies: [{ id: 'p', version: '1', rules: { allowWhen: 'input.amount <= 10' } }] });
    expect(converted.bundle.policySetId).toBe('payments');
    expect(converted.bundle.policies.map((p) => [p.id, p.rules])).toEqual([['p', { allowWhen: '(input.amount <= 10)' }], ['p:allow-failed', { denyWhen: 'not ((input.amount <= 10))' }]]);
  });

  it('refuses what it cannot carry, by name: a classification match, a budget, an unknown key, text that is not YAML', () => {
    const classified = CONFIG.replace('      environments: [production]\n    rules:\n      denyWhenFieldEquals', '      environments: [production]\n      classifications: [destructive]\n    rules:\n      denyWhenFieldEquals');
    expect(classified).not.toBe(CONFIG);
    expect(thrown(() => toGatekeeperBundle(classified))).toMatchObject({ code: 'HAZELJS.CONFIG', details: { field: expect.stringContaining('classifications') } });
    expect(thrown(() => toGatekeeperBundle({ policies: [{ id: 'p', version: '1', rules: { invocationBudget: { max: 3 } } }] }))).toMatchObject({ code: 'HAZELJS.CONFIG', details: { field: expect.stringContaining('invocationBudget') } });
    expect(thrown(() => toGatekeeperBundle({ polices: [] }))).toMatchObject({ code: 'HAZELJS.CONFIG' });
    expect(thrown(() => toGatekeeperBundle({ mode: 'relaxed', policies: [] }))).toMatchObject({ code: 'GATEKEEPER.INVALID_MODE' });
    expect(thrown(() => parseGatekeeperConfig('policies: [\n'))).toMatchObject({ code: 'HAZELJS.CONFIG', details: { field: '(root)' } });
    expect(thrown(() => toGatekeeperBundle({ policies: [{ id: 'p', version: '1', rules: { denyWhenFieldEquals: [{ field: 'x', value: { nested: 1 } }] } }] }))).toMatchObject({ code: 'HAZELJS.CONFIG' });
  });

  it('writes a field name or value no expression can misread (quotes and backslashes are escaped)', () => {
    const tricky = 'a" or true or "b\\';
    const gk = createGatekeeper({ bundle: toGatekeeperBundle({ policies: [{ id: 'p', version: '1', rules: { denyWhenFieldEquals: [{ field: tricky, value: tricky }], allowWhen: 'true' } }] }).bundle });
    expect(gk.evaluate(call({ [tricky]: tricky })).effect).toBe('deny');
    expect(gk.evaluate(call({ [tricky]: 'other' })).effect).toBe('allow');
  });
});
