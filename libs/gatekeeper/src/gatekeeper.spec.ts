import { describe, expect, it, jest } from '@jest/globals';
import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { compileGatekeeperBundle, createGatekeeper, followPolicyBundles, type GatekeeperContext, type GatekeeperOptions } from './index.js';

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

function thrownCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof GatehouseError ? error.code : 'not-a-gatehouse-error';
  }
  return undefined;
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
    expect(thrownCode(() => gatekeeper({ mode: 'enforcing' as never }))).toBe('GATEKEEPER.INVALID_MODE');
    expect(thrownCode(() => gatekeeper({ mode: 'Audit' as never }))).toBe('GATEKEEPER.INVALID_MODE');
    expect(thrownCode(() => gatekeeper({ mode: undefined }))).toBeUndefined();
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

const base = { version: '1', match: {} };
function bundleOf(...policies: { id: string; priority: number; match?: Record<string, string[]>; rules: Record<string, unknown> }[]) {
  return { policySetId: 'set', policies: policies.map((p) => ({ ...base, ...p })) };
}
const call = (tool: string, input: JsonValue = {}, identity: GatekeeperContext['identity'] = { agent: 'agent-1', tenant: 't1', environment: 'prod' }): GatekeeperContext => ({
  identity,
  call: { tool },
  input,
});

describe('match', () => {
  const gk = createGatekeeper({
    bundle: bundleOf(
      { id: 'payments', priority: 1, match: { tools: ['payments.*'] }, rules: { allowWhen: 'true' } },
      { id: 'any-agent', priority: 1, match: { agents: ['*'], tools: ['search'] }, rules: { allowWhen: 'true' } },
      { id: 'exact', priority: 1, match: { tools: ['mail.send'], tenants: ['t1', 't2'], environments: ['prod'] }, rules: { allowWhen: 'true' } },
    ),
  });
  it.each([
    ['payments.refund', 'allow'],
    ['payments.', 'deny'],
    ['payments', 'deny'],
    ['paymentsx.refund', 'deny'],
    ['search', 'allow'],
    ['mail.send', 'allow'],
    ['mail.sendx', 'deny'],
  ])('%s → %s', (tool, effect) => {
    expect(gk.evaluate(call(tool)).effect).toBe(effect);
  });

  it('does not let * match an absent identity field', () => {
    expect(gk.evaluate(call('search', {}, { tenant: 't1' })).effect).toBe('deny');
    expect(gk.evaluate(call('mail.send', {}, { agent: 'a', tenant: 't3', environment: 'prod' })).effect).toBe('deny');
  });
});

describe('precedence', () => {
  it('deny beats require-approval beats rewrite beats allow within one priority', () => {
    const rules = { allowWhen: 'true', rewrite: { set: { x: 1 } }, requireApprovalWhen: 'input.a == 1', denyWhen: 'input.b == 1' };
    const gk = createGatekeeper({ bundle: bundleOf({ id: 'p', priority: 1, rules }), validateInput: () => true });
    expect(gk.evaluate(call('t', { a: 1, b: 1 })).effect).toBe('deny');
    expect(gk.evaluate(call('t', { a: 1 })).effect).toBe('require-approval');
    expect(gk.evaluate(call('t', { x: 0 })).effect).toBe('rewrite');
    const allowOnly = createGatekeeper({ bundle: bundleOf({ id: 'p', priority: 1, rules: { allowWhen: 'true' } }) });
    expect(allowOnly.evaluate(call('t')).effect).toBe('allow');
  });

  it('applies precedence across policies of the same priority, whatever their order', () => {
    const a = { id: 'a-allow', priority: 5, rules: { allowWhen: 'true' } };
    const z = { id: 'z-deny', priority: 5, rules: { denyWhen: 'true' } };
    for (const bundle of [bundleOf(a, z), bundleOf(z, a)]) {
      expect(createGatekeeper({ bundle }).evaluate(call('t'))).toMatchObject({ effect: 'deny', policyId: 'z-deny' });
    }
  });

  it('lets the highest priority that fired decide; a lower priority whose rules did not fire is passed over', () => {
    const bundle = bundleOf(
      { id: 'exception', priority: 100, match: { tenants: ['t1'] }, rules: { allowWhen: 'input.amount < 10' } },
      { id: 'baseline', priority: 1, rules: { denyWhen: 'true' } },
    );
    const gk = createGatekeeper({ bundle });
    expect(gk.evaluate(call('t', { amount: 5 }))).toMatchObject({ effect: 'allow', policyId: 'exception' });
    expect(gk.evaluate(call('t', { amount: 50 }))).toMatchObject({ effect: 'deny', policyId: 'baseline' });
  });
});

describe('modes', () => {
  const bundle = bundleOf({ id: 'deny-big', priority: 1, rules: { denyWhen: 'input.amount > 100', allowWhen: 'true' } });

  it('enforce denies and fails closed on a predicate fault', () => {
    const gk = createGatekeeper({
      bundle: bundleOf({ id: 'p', priority: 1, rules: { allowWhen: { predicate: 'flaky' } } }),
      predicates: { flaky: () => { throw new Error('down'); } },
    });
    expect(gk.evaluate(call('t'))).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.PREDICATE_FAILED', policyId: 'p' });
    const notBoolean = createGatekeeper({ bundle: bundleOf({ id: 'p', priority: 1, rules: { allowWhen: { predicate: 'odd' } } }), predicates: { odd: () => 'yes' as never } });
    expect(notBoolean.evaluate(call('t'))).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.PREDICATE_NOT_BOOLEAN' });
  });

  it('enforce fails closed on a malformed context', () => {
    const gk = createGatekeeper({ bundle });
    expect(gk.evaluate({ identity: {}, input: {} } as unknown as GatekeeperContext)).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.CALL_INVALID' });
  });

  it('audit mode still denies a call that is malformed, as HazelJS blocks a call that fails structural validation', () => {
    const gk = createGatekeeper({ bundle, mode: 'audit' });
    const deep = (n: number): JsonValue => (n === 0 ? 1 : { a: deep(n - 1) });
    const malformed: unknown[] = [
      { identity: {}, input: {} },
      { identity: {}, call: { tool: '' }, input: {} },
      { identity: {}, call: { tool: 7 }, input: {} },
      { identity: null, call: { tool: 't' }, input: {} },
      { identity: { tenant: ['a', 'b'] }, call: { tool: 't' }, input: {} },
      { identity: { actor: { id: 'u' } }, call: { tool: 't' }, input: {} },
      { identity: {}, call: { tool: 't' } },
      'not a context',
    ];
    for (const ctx of malformed) expect(gk.evaluate(ctx as GatekeeperContext)).toMatchObject({ effect: 'deny', mode: 'audit', fault: 'GATEKEEPER.CALL_INVALID' });
    // Arguments nested past what a rewrite can copy are the call's fault too.
    const rewriting = createGatekeeper({ bundle: bundleOf({ id: 'r', priority: 1, rules: { allowWhen: 'true', rewrite: { set: { rows: 1 } } } }), mode: 'audit', validateInput: () => true });
    expect(rewriting.evaluate(call('t', deep(100)))).toMatchObject({ effect: 'deny', mode: 'audit', fault: 'GATEKEEPER.INPUT_TOO_DEEP' });
    // A well-formed call the policies would deny is still only recorded in audit mode.
    expect(gk.evaluate(call('t', { amount: 500 }))).toMatchObject({ effect: 'allow', mode: 'audit', wouldHave: { effect: 'deny' } });
    // disabled bypasses evaluation, the shape included.
    expect(createGatekeeper({ bundle, mode: 'disabled' }).evaluate({} as GatekeeperContext).effect).toBe('allow');
  });

  it('audit evaluates, records what would happen, then allows', () => {
    const records: unknown[] = [];
    const gk = createGatekeeper({ bundle, mode: 'audit', onDecision: (d) => records.push(d) });
    const decision = gk.evaluate(call('t', { amount: 500 }));
    expect(decision).toMatchObject({ effect: 'allow', mode: 'audit', wouldHave: { effect: 'deny', policyId: 'deny-big', ruleId: 'denyWhen' } });
    expect(records).toEqual([decision]);
  });

  it('disabled bypasses evaluation and keeps a minimal record', () => {
    const predicate = jest.fn(() => false);
    const records: unknown[] = [];
    const gk = createGatekeeper({
      bundle: bundleOf({ id: 'p', priority: 1, rules: { denyWhen: { predicate: 'p' } } }),
      mode: 'disabled',
      predicates: { p: predicate },
      onDecision: (d) => records.push(d),
    });
    expect(gk.evaluate(call('t'))).toEqual({ effect: 'allow', mode: 'disabled', bundle: { policySetId: 'set' }, reason: 'gatekeeper disabled' });
    expect(predicate).not.toHaveBeenCalled();
    expect(records).toHaveLength(1);
  });

  it('denies in enforce mode when the decision cannot be recorded', () => {
    const gk = createGatekeeper({ bundle, onDecision: () => { throw new Error('sink down'); } });
    expect(gk.evaluate(call('t', { amount: 1 }))).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.RECORD_FAILED' });
  });

  it('simulate can ask for another mode, but not an invalid one', () => {
    const gk = createGatekeeper({ bundle, mode: 'audit' });
    expect(gk.simulate(call('t', { amount: 500 }), { mode: 'enforce' }).effect).toBe('deny');
    expect(thrownCode(() => gk.simulate(call('t'), { mode: 'off' as never }))).toBe('GATEKEEPER.INVALID_MODE');
  });
});

describe('load-time errors', () => {
  it('reports a condition syntax error with the policy, rule and position', () => {
    let error: GatehouseError | undefined;
    try {
      createGatekeeper({ bundle: bundleOf({ id: 'bad', priority: 1, rules: { allowWhen: 'input.a ==' } }) });
    } catch (e) {
      error = e as GatehouseError;
    }
    expect(error?.code).toBe('GATEKEEPER.EXPRESSION_SYNTAX');
    expect(error?.details).toMatchObject({ policyId: 'bad', field: 'rules.allowWhen', position: 10 });
  });

  it('compileGatekeeperBundle finds what a load would refuse, without the guard: expressions in rules, rewrite conditions and computed values', () => {
    const error = (bundle: unknown) => {
      try {
        compileGatekeeperBundle(bundle);
      } catch (e) {
        return e instanceof GatehouseError ? { code: e.code, details: e.details } : 'not-a-gatehouse-error';
      }
      return undefined;
    };
    expect(error(bundleOf({ id: 'bad', priority: 1, rules: { allowWhen: 'input.a ==' } }))).toEqual({ code: 'GATEKEEPER.EXPRESSION_SYNTAX', details: expect.objectContaining({ policyId: 'bad', field: 'rules.allowWhen', position: 10 }) });
    expect(error(bundleOf({ id: 'w', priority: 1, rules: { allowWhen: 'true', rewrite: { when: 'input.__proto__ == 1', set: { a: 1 } } } }))).toMatchObject({ code: 'GATEKEEPER.EXPRESSION_FORBIDDEN_PATH', details: { policyId: 'w', field: 'rules.rewrite.when' } });
    expect(error(bundleOf({ id: 's', priority: 1, rules: { allowWhen: 'true', rewrite: { set: { a: { expr: 'input.b +' } } } } }))).toMatchObject({ code: 'GATEKEEPER.EXPRESSION_SYNTAX', details: { policyId: 's', field: 'rules.rewrite.set.a' } });
    expect(error({ policySetId: 'set', policies: [{ id: 'x' }] })).toMatchObject({ code: 'GATEKEEPER.BUNDLE_INVALID' });
    // Predicates are the guard's code: listed, and what else the bundle says still compiles.
    const { bundle, predicates } = compileGatekeeperBundle(bundleOf({ id: 'p', priority: 1, rules: { allowWhen: { predicate: 'b' }, denyWhen: { predicate: 'a' }, requireApprovalWhen: 'input.amount > 5' } }));
    expect([bundle.policies.length, predicates]).toEqual([1, ['a', 'b']]);
    // What it accepts, a gatekeeper loads (given the predicates).
    expect(createGatekeeper({ bundle, predicates: { a: () => false, b: () => true } }).evaluate(ctx({ amount: 1 }, { call: { tool: 'x' } })).effect).toBe('allow');
  });

  it('every gatekeeper factory refuses an option it does not know, naming it', () => {
    const unknown = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return e instanceof GatehouseError ? [e.code, e.message] : 'not-a-gatehouse-error';
      }
      return undefined;
    };
    // What a HazelJS user passes: an audit sink and a default decision, never silently dropped.
    expect(unknown(() => createGatekeeper({ bundle: refund, auditSink: () => undefined } as GatekeeperOptions))).toEqual(['GATEKEEPER.INVALID_OPTIONS', expect.stringContaining('unknown option "auditSink"')]);
    expect(unknown(() => createGatekeeper({ bundle: refund, defaultDecision: 'allow' } as GatekeeperOptions))).toEqual(['GATEKEEPER.INVALID_OPTIONS', expect.stringContaining('unknown option "defaultDecision"')]);
    const gk = gatekeeper();
    expect(unknown(() => followPolicyBundles(gk, 'payments', { onChange: () => undefined } as never))).toEqual(['GATEKEEPER.INVALID_OPTIONS', expect.stringContaining('unknown option "onChange"')]);
    // gatekeeperGuardrail, the guard's adapter, is checked the same way in @gatehouse/guard's guardrail spec.
  });

  it('refuses an unregistered predicate', () => {
    expect(thrownCode(() => createGatekeeper({ bundle: bundleOf({ id: 'p', priority: 1, rules: { allowWhen: { predicate: 'toString' } } }) }))).toBe('GATEKEEPER.UNKNOWN_PREDICATE');
  });
});

describe('trusted identity', () => {
  const bundle = bundleOf(
    { id: 'admins', priority: 10, rules: { allowWhen: 'identity.actor.role == "admin" and identity.tenant == "t1"' } },
    { id: 'own-tenant', priority: 5, match: { tenants: ['t1'] }, rules: { allowWhen: 'input.tenantId == identity.tenant' } },
  );
  const gk = createGatekeeper({ bundle });

  it('an argument named identity or actor does not impersonate', () => {
    const input = { identity: { actor: { id: 'root', role: 'admin' }, tenant: 't1' }, actor: { role: 'admin' }, tenantId: 't2' };
    const decision = gk.evaluate(call('t', input, { agent: 'a', tenant: 't2', actor: { id: 'u', role: 'viewer' } }));
    expect(decision.effect).toBe('deny');
  });

  it('the trusted identity decides', () => {
    expect(gk.evaluate(call('t', {}, { agent: 'a', tenant: 't1', actor: { id: 'u', role: 'admin' } })).policyId).toBe('admins');
    expect(gk.evaluate(call('t', { tenantId: 't1' }, { agent: 'a', tenant: 't1', actor: { id: 'u', role: 'viewer' } })).policyId).toBe('own-tenant');
  });

  it('extra fields smuggled into the identity object are not readable', () => {
    const smuggle = createGatekeeper({ bundle: bundleOf({ id: 'p', priority: 1, rules: { allowWhen: 'identity.superuser == true' } }) });
    expect(smuggle.evaluate(call('t', {}, { agent: 'a', superuser: true } as never)).effect).toBe('deny');
  });
});

describe('rewrite with bounded re-validation', () => {
  const clamp = bundleOf({
    id: 'clamp',
    priority: 1,
    rules: { allowWhen: 'input.limit <= 100', rewrite: { when: 'input.limit > 100', set: { limit: 100, 'options.dryRun': true }, remove: ['debug'] } },
  });

  it('rewrites, re-validates and re-evaluates the rewritten input', () => {
    const seen: unknown[] = [];
    const gk = createGatekeeper({ bundle: clamp, validateInput: (input, c) => seen.push([input, c]) > 0 });
    const decision = gk.evaluate(call('export', { limit: 5000, debug: true }));
    expect(decision).toMatchObject({ effect: 'rewrite', policyId: 'clamp', ruleId: 'rewrite', rewrittenInput: { limit: 100, options: { dryRun: true } }, rewrites: 1 });
    expect(seen).toEqual([[{ limit: 100, options: { dryRun: true } }, { tool: 'export' }]]);
    expect(gk.evaluate(call('export', { limit: 5 })).effect).toBe('allow');
  });

  it('does not change the caller input', () => {
    const input = { limit: 5000, debug: true };
    createGatekeeper({ bundle: clamp, validateInput: () => true }).evaluate(call('export', input));
    expect(input).toEqual({ limit: 5000, debug: true });
  });

  it('denies when the rewritten input fails re-validation, or no validator is configured', () => {
    expect(createGatekeeper({ bundle: clamp, validateInput: () => false }).evaluate(call('export', { limit: 5000 }))).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.REWRITE_INVALID' });
    expect(createGatekeeper({ bundle: clamp, validateInput: () => { throw new Error('x'); } }).evaluate(call('export', { limit: 5000 })).effect).toBe('deny');
    expect(createGatekeeper({ bundle: clamp }).evaluate(call('export', { limit: 5000 }))).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.REWRITE_UNVALIDATED' });
  });

  it('denies when rewrites do not settle within the bound', () => {
    const bundle = bundleOf({ id: 'grow', priority: 1, rules: { rewrite: { set: { n: { expr: 'input.n + 1' } } } } });
    const validate = jest.fn(() => true);
    const decision = createGatekeeper({ bundle, validateInput: validate, maxRewrites: 3 }).evaluate(call('t', { n: 0 }));
    expect(decision).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.REWRITE_BOUND_EXCEEDED' });
    expect(validate).toHaveBeenCalledTimes(3);
  });

  it('settles on an idempotent rewrite', () => {
    const bundle = bundleOf({ id: 'dry', priority: 1, rules: { rewrite: { set: { dryRun: true } } } });
    expect(createGatekeeper({ bundle, validateInput: () => true }).evaluate(call('t', { a: 1 }))).toMatchObject({ effect: 'rewrite', rewrittenInput: { a: 1, dryRun: true } });
  });

  it('lets a deny on the rewritten input win', () => {
    const bundle = bundleOf(
      { id: 'rw', priority: 1, rules: { rewrite: { when: 'input.to endsWith "@old.example"', set: { to: 'blocked@new.example' } } } },
      { id: 'block', priority: 1, rules: { denyWhen: 'input.to startsWith "blocked@"' } },
    );
    expect(createGatekeeper({ bundle, validateInput: () => true }).evaluate(call('t', { to: 'x@old.example' }))).toMatchObject({ effect: 'deny', policyId: 'block' });
  });
});

describe('explain', () => {
  const bundle = bundleOf(
    { id: 'top-deny', priority: 100, match: { tools: ['db.*'] }, rules: { denyWhen: 'input.table == "users"' } },
    { id: 'other-tool', priority: 100, match: { tools: ['mail.*'] }, rules: { allowWhen: 'true' } },
    { id: 'other-tenant', priority: 50, match: { tools: ['db.*'], tenants: ['t9'] }, rules: { allowWhen: 'true' } },
    { id: 'mid-allow', priority: 50, match: { tools: ['db.*'] }, rules: { allowWhen: 'true' } },
    { id: 'mid-approval', priority: 50, match: { tools: ['db.*'] }, rules: { requireApprovalWhen: 'input.rows > 10' } },
    { id: 'low', priority: 1, rules: { allowWhen: 'true' } },
  );
  const gk = createGatekeeper({ bundle, revision: 3 });

  it('names the matched policies, the deciding rule and why each other policy did not decide', () => {
    const explanation = gk.explain(call('db.query', { table: 'orders', rows: 50 }));
    expect(explanation.decision).toMatchObject({ effect: 'require-approval', policyId: 'mid-approval', ruleId: 'requireApprovalWhen', bundle: { policySetId: 'set', revision: 3 } });
    expect(explanation.matched).toEqual(['top-deny', 'mid-allow', 'mid-approval', 'low']);
    const byId = Object.fromEntries(explanation.policies.map((p) => [p.policyId, p]));
    expect(byId['top-deny']).toMatchObject({ status: 'no-rule-fired', rules: [{ ruleId: 'denyWhen', result: 'false' }] });
    expect(byId['other-tool']).toMatchObject({ status: 'not-matched', field: 'tools' });
    expect(byId['other-tenant']).toMatchObject({ status: 'not-matched', field: 'tenants' });
    expect(byId['mid-allow']).toMatchObject({ status: 'outranked', rules: [{ ruleId: 'allowWhen', result: 'true' }] });
    expect(byId['mid-approval']).toMatchObject({ status: 'decided' });
    expect(byId['low']).toMatchObject({ status: 'lower-priority' });
    expect(explanation.policies.map((p) => p.priority)).toEqual([100, 100, 50, 50, 50, 1]);
  });

  it('lets a higher-priority deny decide, and reports the default deny when nothing matched', () => {
    const explanation = gk.explain(call('db.query', { table: 'users' }, { agent: 'a', tenant: 't1' }));
    expect(explanation.decision).toMatchObject({ effect: 'deny', policyId: 'top-deny' });
    const none = createGatekeeper({ bundle: bundleOf({ id: 'p', priority: 1, match: { tools: ['x'] }, rules: { allowWhen: 'true' } }) }).explain(call('y'));
    expect(none.decision.reason).toBe('no policy allows this call (default deny)');
    expect(none.matched).toEqual([]);
  });

  it('simulate and explain take no tool and never run an executor they are handed', () => {
    const execute = jest.fn();
    const smuggled = { ...call('db.query', { table: 'orders' }), tool: { execute }, execute } as unknown as GatekeeperContext;
    gk.simulate(smuggled);
    gk.explain(smuggled);
    gk.evaluate(smuggled);
    gk.decideFromFacts(smuggled);
    expect(execute).not.toHaveBeenCalled();
    expect(gk.simulate.length).toBe(2);
    expect(gk.explain.length).toBe(1);
    expect(Object.keys(gk).sort()).toEqual(['decideFromFacts', 'evaluate', 'explain', 'load', 'mode', 'policyIds', 'simulate', 'version']);
  });
});

describe('load (hot reload)', () => {
  const v1 = bundleOf({ id: 'p', priority: 1, rules: { allowWhen: 'true' } });
  const v2 = bundleOf({ id: 'p', priority: 1, rules: { denyWhen: 'true' } });

  it('swaps the bundle and stamps decisions with the new revision', () => {
    const gk = createGatekeeper({ bundle: v1, revision: 1 });
    expect(gk.evaluate(call('t'))).toMatchObject({ effect: 'allow', bundle: { revision: 1 } });
    expect(gk.load(v2, 2)).toEqual({ policySetId: 'set', revision: 2 });
    expect(gk.evaluate(call('t'))).toMatchObject({ effect: 'deny', bundle: { revision: 2 } });
  });

  it('keeps the old bundle when the new one is invalid or stale', () => {
    const gk = createGatekeeper({ bundle: v1, revision: 5 });
    expect(thrownCode(() => gk.load({ policySetId: 'set', policies: [{ id: 'p' }] }, 6))).toBe('GATEKEEPER.BUNDLE_INVALID');
    expect(thrownCode(() => gk.load(bundleOf({ id: 'p', priority: 1, rules: { allowWhen: 'input ==' } }), 6))).toBe('GATEKEEPER.EXPRESSION_SYNTAX');
    expect(thrownCode(() => gk.load(v2, 4))).toBe('GATEKEEPER.STALE_REVISION');
    expect(gk.version()).toEqual({ policySetId: 'set', revision: 5 });
    expect(gk.evaluate(call('t')).effect).toBe('allow');
  });

  it('accepts YAML text', () => {
    const gk = createGatekeeper({ bundle: v1 });
    gk.load('policySetId: set\npolicies:\n  - { id: p, version: "1", priority: 1, match: {}, rules: { denyWhen: "true" } }\n', 9);
    expect(gk.evaluate(call('t'))).toMatchObject({ effect: 'deny', bundle: { revision: 9 } });
  });
});

describe('decideFromFacts (a recorded call, without its arguments)', () => {
  const facts = (tool: string, role = 'support', agent = 'refund-agent') => ({ identity: { agent, tenant: 'tenant-a', actor: { id: 'u1', role } }, call: { tool } });
  const gk = createGatekeeper({
    revision: 4,
    bundle: {
      policySetId: 'set',
      policies: [
        { id: 'freeze', version: '1', priority: 90, match: { tools: ['payments.*'] }, rules: { denyWhen: "identity.actor.role == 'intern'" } },
        { id: 'limit', version: '1', priority: 50, match: { tools: ['payments.refund'] }, rules: { denyWhen: 'input.amount > 100' } },
        { id: 'support-refunds', version: '1', priority: 50, match: { tools: ['payments.refund'] }, rules: { allowWhen: "identity.actor.role == 'support'" } },
        { id: 'reads', version: '1', priority: 10, match: { tools: ['orders.*'] }, rules: { allowWhen: 'true', requireApprovalWhen: "call.tool == 'orders.export'" } },
        { id: 'tagged', version: '1', priority: 5, match: { tools: ['tickets.*'] }, rules: { rewrite: { set: { tag: 'auto' } } } },
      ],
    },
  });

  it('decides exactly where no rule that could decide reads the arguments', () => {
    expect(gk.decideFromFacts(facts('orders.read'))).toEqual({ determined: true, effect: 'allow', policyId: 'reads', ruleId: 'allowWhen', bundle: { policySetId: 'set', revision: 4 } });
    expect(gk.decideFromFacts(facts('orders.export'))).toMatchObject({ determined: true, effect: 'require-approval', policyId: 'reads' });
    expect(gk.decideFromFacts(facts('payments.refund', 'intern'))).toMatchObject({ determined: true, effect: 'deny', policyId: 'freeze' });
    expect(gk.decideFromFacts(facts('shipping.label'))).toEqual({ determined: true, effect: 'deny', bundle: { policySetId: 'set', revision: 4 } });
  });

  it('is undetermined where a rule at the deciding level reads the arguments, a predicate or a rewrite could decide', () => {
    // `limit` (reads input.amount) sits at the level where support-refunds would allow.
    expect(gk.decideFromFacts(facts('payments.refund'))).toEqual({ determined: false, policyId: 'limit', bundle: { policySetId: 'set', revision: 4 } });
    expect(gk.decideFromFacts(facts('tickets.open'))).toMatchObject({ determined: false, policyId: 'tagged' });
    const withPredicate = createGatekeeper({ predicates: { business: () => true }, bundle: { policySetId: 'p', policies: [{ id: 'hours', version: '1', priority: 1, match: { tools: ['*'] }, rules: { allowWhen: { predicate: 'business' } } }] } });
    expect(withPredicate.decideFromFacts(facts('any.tool'))).toMatchObject({ determined: false, policyId: 'hours' });
  });

  it('agrees with evaluate on every determined decision, whatever the arguments', () => {
    for (const [tool, role] of [['orders.read', 'support'], ['orders.export', 'support'], ['payments.refund', 'intern'], ['shipping.label', 'support']] as const) {
      const known = gk.decideFromFacts(facts(tool, role));
      for (const input of [{}, { amount: 5 }, { amount: 5000 }, null] as JsonValue[]) {
        const decided = gk.evaluate({ ...facts(tool, role), input });
        expect(known).toMatchObject({ determined: true, effect: decided.effect });
      }
    }
  });
});
