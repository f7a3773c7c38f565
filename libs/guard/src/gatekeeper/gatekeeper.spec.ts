import { describe, expect, it, jest } from '@jest/globals';
import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { createGatekeeper, type GatekeeperContext, type GatekeeperOptions } from './index.js';

const refund = {
  policySetId: 'payments',
  policies: [
    {
      id: 'refund-small',
      version: '1.0.0',
      priority: 100,
      match: { agents: ['refund-agent'], tools: ['stripe.*'], environments: ['production'] },
      rules: {
        allowWhen: 'input.amount <= 100 and input.tenantId == identity.tenant',
        requireApprovalWhen: 'input.amount > 50',
      },
    },
  ],
};

function ctx(input: JsonValue, overrides: Partial<GatekeeperContext> = {}): GatekeeperContext {
  return {
    identity: { agent: 'refund-agent', tenant: 'tenant-a', environment: 'production', actor: { id: 'u1', role: 'support' } },
    call: { tool: 'stripe.refund' },
    input,
    ...overrides,
  };
}

function gatekeeper(options: Partial<GatekeeperOptions> = {}) {
  return createGatekeeper({ bundle: refund, revision: 7, ...options });
}

describe('createGatekeeper', () => {
  it('allows a call a policy allows, and names the policy, rule and bundle version', () => {
    const decision = gatekeeper().evaluate(ctx({ amount: 40, tenantId: 'tenant-a' }));
    expect(decision).toMatchObject({ effect: 'allow', policyId: 'refund-small', ruleId: 'allowWhen', bundle: { policySetId: 'payments', revision: 7 }, mode: 'enforce' });
  });

  it('requires approval over allow at the same priority (HazelJS refund example)', () => {
    const decision = gatekeeper().evaluate(ctx({ amount: 80, tenantId: 'tenant-a' }));
    expect(decision).toMatchObject({ effect: 'require-approval', ruleId: 'requireApprovalWhen' });
  });

  it('denies by default when no policy allows', () => {
    const decision = gatekeeper().evaluate(ctx({ amount: 500, tenantId: 'tenant-a' }));
    expect(decision).toMatchObject({ effect: 'require-approval' });
    const other = gatekeeper().evaluate(ctx({ amount: 10, tenantId: 'tenant-b' }));
    expect(other).toMatchObject({ effect: 'deny', reason: 'no policy allows this call (default deny)' });
    expect(other.policyId).toBeUndefined();
  });

  it('throws a typed error for an invalid mode, never falling back', () => {
    expect(() => gatekeeper({ mode: 'enforcing' as never })).toThrow(GatehouseError);
    try {
      gatekeeper({ mode: 'Audit' as never });
    } catch (error) {
      expect((error as GatehouseError).code).toBe('GATEKEEPER.INVALID_MODE');
    }
  });

  it('simulate and explain never record a decision', () => {
    const onDecision = jest.fn();
    const gk = gatekeeper({ onDecision });
    gk.simulate(ctx({ amount: 40, tenantId: 'tenant-a' }));
    gk.explain(ctx({ amount: 40, tenantId: 'tenant-a' }));
    expect(onDecision).not.toHaveBeenCalled();
    gk.evaluate(ctx({ amount: 40, tenantId: 'tenant-a' }));
    expect(onDecision).toHaveBeenCalledTimes(1);
  });
});
