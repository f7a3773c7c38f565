import { describe, expect, it } from '@jest/globals';
import { type JsonValue } from '@gatehouse/contracts';
import { z } from 'zod';
import { compileGatekeeperBundle, createGatekeeper, gatekeeperGuardrail, type GatekeeperOptions } from '../gatekeeper/index.js';
import {
  AgentGatekeeper,
  type AgentGatekeeperPolicy,
  CompositeAuditSink,
  fromFunction,
  GatekeeperConfigurationError,
  GatekeeperDeniedError,
  GatekeeperExecutionError,
  GatekeeperPolicyError,
  GatekeeperValidationError,
  InMemoryAuditSink,
  toGatekeeperBundle,
} from './index.js';
import { context, gatekeeper, type Refund, refundPolicy, refundTool, refusal, thrown } from './spec-support.testing.js';
import { withoutRandomIds } from '../guardrails/leak-records.testing.js';

// The seed README's refund policy (spec-support.testing.ts), as a HazelJS user writes it, behind gatekeeper().
describe('AgentGatekeeper.execute (row 1)', () => {
  it('runs the tool a policy allows, after recording the decision, and records nothing of the input', async () => {
    const { gk, sink } = gatekeeper();
    const ran: number[] = [];
    const result = await gk.execute({ context: context({ amount: 40, tenantId: 'tenant-a', note: 'card 4111 1111 1111 1111' }), tool: refundTool(ran) });
    expect(result.output).toEqual({ refunded: 40 });
    expect(result.decision).toMatchObject({ outcome: 'allow', policyIds: ['refund-agent-stripe-policy'], reason: 'allowed by policy' });
    expect(ran).toEqual([40]);
    expect(sink.events.map((e) => e.code)).toEqual(['GUARDRAIL.ALLOWED', 'HAZELJS.TOOL_COMPLETED']);
    expect(sink.events[0]).toMatchObject({ boundary: 'guardrail', resource: 'tool:stripe.refund', context: { tenant: 'tenant-a', agentId: 'refund-agent', runId: 'run-1' }, detail: { invocationId: 'inv-1' } });
    expect(sink.events[0]?.detections).toEqual(expect.arrayContaining(['gatekeeper.allow', 'gatekeeper.bundle:hazeljs@-', 'gatekeeper.policy:refund-agent-stripe-policy']));
    expect(withoutRandomIds(JSON.stringify(sink.events))).not.toContain('4111');
  });

  it('denies by default when no policy applies, and never runs the tool', async () => {
    const { gk, sink } = gatekeeper();
    const ran: number[] = [];
    const error = await refusal(gk.execute({ context: context({ amount: 40, tenantId: 'tenant-a' }, { environment: 'staging' }), tool: refundTool(ran) }));
    expect(error).toBeInstanceOf(GatekeeperDeniedError);
    expect(error).toMatchObject({ code: 'HAZELJS.DENIED', message: 'the gatekeeper denied the call', details: { decisionCode: 'HAZELJS.DEFAULT_DENY', policyIds: [], invocationId: 'inv-1' } });
    expect(ran).toEqual([]);
    expect(sink.events.map((e) => [e.code, e.decision])).toEqual([['GUARDRAIL.DENIED', 'denied']]);
  });

  it('takes identity from the trusted context only: an argument naming another tenant or agent changes nothing', async () => {
    const { gk } = gatekeeper();
    const ran: number[] = [];
    const spoofed = await refusal(gk.execute({ context: context({ amount: 40, tenantId: 'tenant-b', agentId: 'refund-agent' } as JsonValue), tool: refundTool(ran) }));
    expect(spoofed.details).toMatchObject({ decisionCode: 'HAZELJS.DENIED', policyIds: ['refund-agent-stripe-policy'] });
    const otherAgent = await refusal(gk.execute({ context: context({ amount: 40, tenantId: 'tenant-a' }, { agentId: 'intern-agent' }), tool: refundTool(ran) }));
    expect(otherAgent.details).toMatchObject({ decisionCode: 'HAZELJS.DEFAULT_DENY' });
    expect(ran).toEqual([]);
  });

  it('refuses to run a tool other than the one the context names (the decision was about that one)', async () => {
    const { gk } = gatekeeper();
    const wipe = fromFunction('db.wipe', async () => 'wiped', { classification: 'destructive' });
    const error = await refusal(gk.execute({ context: context({ amount: 1, tenantId: 'tenant-a' }), tool: wipe as never }));
    expect(error).toBeInstanceOf(GatekeeperValidationError);
    expect(error.details).toMatchObject({ field: 'toolName' });
  });

  it('refuses a context field it does not know (a misspelt tenantID is not a missing tenant)', async () => {
    const { gk } = gatekeeper();
    const error = await refusal(gk.execute({ context: { ...context({ amount: 1, tenantId: 'tenant-a' }), tenantID: 'tenant-a' } as never, tool: refundTool() }));
    expect(error).toMatchObject({ code: 'HAZELJS.VALIDATION', details: { field: 'tenantID' } });
  });

  it('wraps a tool failure as HAZELJS.EXECUTION with a static message, its error only as the cause', async () => {
    const { gk, sink } = gatekeeper();
    const failing = fromFunction('stripe.refund', async () => {
      throw new Error('card 4111 1111 1111 1111 declined');
    });
    const error = await refusal(gk.execute({ context: context({ amount: 10, tenantId: 'tenant-a' }), tool: failing }));
    expect(error).toBeInstanceOf(GatekeeperExecutionError);
    expect(error.message).toBe('tool execution failed');
    expect(JSON.stringify(error.safeDetails)).not.toContain('4111');
    expect(sink.events.map((e) => e.code)).toEqual(['GUARDRAIL.ALLOWED', 'HAZELJS.EXECUTION']);
  });

  it('checks the output schema and redacts the sensitive output keys the tool names', async () => {
    const { gk } = gatekeeper();
    const lookup = fromFunction('stripe.refund', async () => ({ id: 're_1', card: { number: '4111', token: 'tok_live' }, last4: '1111' }), { redactFields: ['number'], outputSchema: z.object({ id: z.string(), card: z.object({ number: z.string(), token: z.string() }), last4: z.string() }) });
    const result = await gk.execute({ context: context({ amount: 10, tenantId: 'tenant-a' }), tool: lookup });
    expect(result.output).toEqual({ id: 're_1', card: { number: '[REDACTED]', token: '[REDACTED]' }, last4: '1111' });
    const wrongShape = fromFunction('stripe.refund', async () => ({ id: 1 }), { outputSchema: z.object({ id: z.string() }) as never });
    expect(await refusal(gk.execute({ context: context({ amount: 10, tenantId: 'tenant-a' }), tool: wrongShape }))).toMatchObject({ code: 'HAZELJS.VALIDATION', details: { field: 'output' } });
  });

  it('evaluates and simulates without running the tool, recording or asking anyone', async () => {
    const { gk, sink, approvals } = gatekeeper();
    expect(await gk.evaluate(context({ amount: 80, tenantId: 'tenant-a' }))).toMatchObject({ outcome: 'require_approval', policyIds: ['refund-agent-stripe-policy'] });
    const simulated = await gk.simulate(context({ amount: 40, tenantId: 'tenant-b' }));
    expect(simulated.decision).toMatchObject({ outcome: 'deny', code: 'HAZELJS.DENIED', reason: 'allow predicate failed' });
    expect(simulated.matchedPolicies).toEqual([{ id: 'refund-agent-stripe-policy', version: '1.0.0', priority: 100 }]);
    expect(simulated.explanation).toEqual(['policy refund-agent-stripe-policy: no-rule-fired', 'policy refund-agent-stripe-policy (allowWhen failed): decided']);
    expect(sink.events).toEqual([]);
    expect(approvals.gateway.records).toEqual([]);
  });
});

describe('function-valued rules (row 3)', () => {
  it('gives a rule the input and the trusted context, and a rule cannot change the input it judges', async () => {
    const seen: unknown[] = [];
    const mutating: AgentGatekeeperPolicy<Refund> = { id: 'mutates', version: '1', rules: { allowWhen: ({ input, context: c }) => {
      seen.push(c.tenantId, c.invocationId);
      (input as { amount: number }).amount = 1; // strict mode: frozen, so this throws, and the rule faults
      return true;
    } } };
    const { gk } = gatekeeper({ policies: [mutating] });
    const ran: number[] = [];
    const error = await refusal(gk.execute({ context: context({ amount: 500, tenantId: 'tenant-a' }), tool: refundTool(ran) }));
    expect(error.details).toMatchObject({ decisionCode: 'HAZELJS.POLICY', fault: 'GATEKEEPER.PREDICATE_FAILED' });
    expect(seen).toEqual(['tenant-a', 'inv-1']);
    expect(ran).toEqual([]);
  });

  it('fails closed on a rule that throws or answers a promise, and refuses an async rule at construction', async () => {
    const throwing: AgentGatekeeperPolicy = { id: 'throws', version: '1', rules: { allowWhen: () => { throw new Error('boom'); } } };
    const promising: AgentGatekeeperPolicy = { id: 'promises', version: '1', rules: { allowWhen: (() => Promise.reject(new Error('late'))) as never } };
    for (const policy of [throwing, promising]) {
      const { gk } = gatekeeper({ policies: [policy] });
      expect(await gk.evaluate(context({ amount: 1, tenantId: 'tenant-a' }))).toMatchObject({ outcome: 'deny', code: 'HAZELJS.POLICY' });
    }
    const asyncRule: AgentGatekeeperPolicy = { id: 'async', version: '1', rules: { allowWhen: (async () => true) as never } };
    expect(thrown(() => new AgentGatekeeper({ policies: [asyncRule], auditSink: new InMemoryAuditSink() }))).toMatchObject({ code: 'HAZELJS.CONFIG', details: { policyId: 'async', field: 'rules.allowWhen' } });
  });

  it('keeps HazelJS precedence: a deny anywhere beats an allow at a higher priority, and a failing allowWhen denies', async () => {
    const vip: AgentGatekeeperPolicy<Refund> = { id: 'vip-allow', version: '1', priority: 1000, rules: { allowWhen: () => true } };
    const cap: AgentGatekeeperPolicy<Refund> = { id: 'cap', version: '1', priority: 1, rules: { denyWhen: 'input.amount > 1000' } };
    const { gk } = gatekeeper({ policies: [vip, cap, refundPolicy] });
    expect(await gk.evaluate(context({ amount: 5000, tenantId: 'tenant-a' }))).toMatchObject({ outcome: 'deny', policyIds: ['cap'], reason: 'denied by policy' });
    // refund-agent-stripe-policy's allowWhen fails for tenant-b: that deny beats vip-allow, as in HazelJS.
    expect(await gk.evaluate(context({ amount: 40, tenantId: 'tenant-b' }))).toMatchObject({ outcome: 'deny', policyIds: ['refund-agent-stripe-policy'], reason: 'allow predicate failed' });
    // requireApprovalWhen decides before allowWhen is asked: 500 needs a person, it is not an allow-failed deny.
    expect(await gk.evaluate(context({ amount: 500, tenantId: 'tenant-a' }))).toMatchObject({ outcome: 'require_approval' });
  });

  it('takes a rule written as a gatehouse expression (data) beside function rules', async () => {
    const expression: AgentGatekeeperPolicy = { id: 'expr', version: '1', match: { tools: ['stripe.*'] }, rules: { allowWhen: 'input.amount <= 100 and input.tenantId == identity.tenant' } };
    const { gk } = gatekeeper({ policies: [expression] });
    expect(await gk.evaluate(context({ amount: 40, tenantId: 'tenant-a' }))).toMatchObject({ outcome: 'allow', policyIds: ['expr'] });
    expect(await gk.evaluate(context({ amount: 40, tenantId: 'tenant-b' }))).toMatchObject({ outcome: 'deny', reason: 'allow predicate failed' });
    expect(thrown(() => gatekeeper({ policies: [{ ...expression, rules: { allowWhen: 'input.amount >> 1' } }] }))).toMatchObject({ code: 'GATEKEEPER.EXPRESSION_SYNTAX', details: { policyId: 'expr', field: 'rules.allowWhen', position: expect.any(Number) } });
  });

  it('names a function rule in the bundle (data) and keeps the function in this process only', () => {
    const { gk } = gatekeeper();
    const policy = gk.bundle.policies.find((p) => p.id === 'refund-agent-stripe-policy');
    expect(policy?.rules).toEqual({ allowWhen: { predicate: 'hazeljs:refund-agent-stripe-policy:allowWhen' }, requireApprovalWhen: { predicate: 'hazeljs:refund-agent-stripe-policy:requireApprovalWhen' } });
    expect(compileGatekeeperBundle(gk.bundle).predicates).toEqual(['hazeljs:refund-agent-stripe-policy:allow-failed', 'hazeljs:refund-agent-stripe-policy:allowWhen', 'hazeljs:refund-agent-stripe-policy:requireApprovalWhen']);
  });

  it('fails closed when the engine is asked outside a facade call (no trusted context for the rule)', async () => {
    const { gk } = gatekeeper();
    const verdict = await gatekeeperGuardrail(gk.gatekeeper, { environment: 'production' }).check({
      placement: 'tool-args', value: { amount: 40, tenantId: 'tenant-a' }, tool: { id: 'stripe.refund' }, context: { agentId: 'refund-agent', tenant: 'tenant-a' }, signal: new AbortController().signal,
    });
    expect(verdict.action).toBe('deny');
    expect(verdict.detections).toContain('gatekeeper.fault:GATEKEEPER.PREDICATE_FAILED');
  });

  it('refuses a function where a bundle is validated or published: it cannot be signed or distributed', () => {
    expect(thrown(() => toGatekeeperBundle({ policies: [refundPolicy] }))).toMatchObject({ code: 'GATEKEEPER.FUNCTION_RULE', details: { policyId: 'refund-agent-stripe-policy', field: 'rules.allowWhen' } });
    const handedOver = { policySetId: 'payments', policies: [{ id: 'p', version: '1', priority: 0, match: {}, rules: { allowWhen: () => true } }] };
    expect(thrown(() => compileGatekeeperBundle(handedOver))).toMatchObject({ code: 'GATEKEEPER.FUNCTION_RULE', details: { field: 'policies.0.rules.allowWhen' } });
    expect(thrown(() => createGatekeeper({ bundle: handedOver }))).toMatchObject({ code: 'GATEKEEPER.FUNCTION_RULE' });
  });

  it('refuses what it cannot honour, by name: a function rewrite, budgets, role and classification matches', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ rules: { rewrite: () => ({}) } }, 'rules.rewrite'],
      [{ rules: { rateLimit: { max: 1, windowMs: 1000 } } }, 'rules.rateLimit'],
      [{ match: { roles: ['admin'] }, rules: { allowWhen: 'true' } }, 'match.roles'],
      [{ match: { classifications: ['destructive'] }, rules: { denyWhen: 'true' } }, 'match.classifications'],
      [{ match: { agents: ['*'] }, rules: { allowWhen: 'true' } }, 'match.agents'],
      [{ match: { tools: ['*.refund'] }, rules: { allowWhen: 'true' } }, 'match.tools'],
    ];
    for (const [extra, field] of cases) {
      const error = thrown(() => new AgentGatekeeper({ policies: [{ id: 'p', version: '1', ...extra } as never], auditSink: new InMemoryAuditSink() }));
      expect([error.code, String(error.details['field'])]).toEqual(['HAZELJS.CONFIG', expect.stringContaining(field.split('.')[1]!)]);
    }
  });
});

describe('defaultDecision (row 4)', () => {
  const narrow: AgentGatekeeperPolicy<Refund> = { id: 'cap', version: '1', rules: { denyWhen: ({ input }) => input.amount > 1000 } };

  it('deny (the default) refuses a call no policy allows', async () => {
    const { gk } = gatekeeper({ policies: [narrow], defaultDecision: undefined });
    expect(gk.defaultDecision).toBe('deny');
    expect(await gk.evaluate(context({ amount: 10, tenantId: 'tenant-a' }))).toMatchObject({ outcome: 'deny', code: 'HAZELJS.DEFAULT_DENY', policyIds: [] });
  });

  it('allow lets a call no policy decides run, named in the record; a deny or a failing allowWhen still wins', async () => {
    const { gk, sink } = gatekeeper({ policies: [narrow, refundPolicy], defaultDecision: 'allow' });
    const ran: number[] = [];
    const result = await gk.execute({ context: context({ amount: 10, tenantId: 'tenant-a' }, { environment: 'staging' }), tool: refundTool(ran) });
    expect(result.decision).toMatchObject({ outcome: 'allow', policyIds: [], reason: 'default allow' });
    expect(sink.events[0]?.detections).toContain('gatekeeper.policy:hazeljs.default-allow');
    expect(await gk.evaluate(context({ amount: 5000, tenantId: 'tenant-a' }, { environment: 'staging' }))).toMatchObject({ outcome: 'deny', policyIds: ['cap'] });
    expect(await gk.evaluate(context({ amount: 10, tenantId: 'tenant-b' }))).toMatchObject({ outcome: 'deny', reason: 'allow predicate failed' });
  });

  it('refuses any other value', () => {
    expect(thrown(() => gatekeeper({ defaultDecision: 'maybe' }))).toMatchObject({ code: 'HAZELJS.CONFIG', details: { field: 'defaultDecision' } });
  });
});

describe('auditSink, approvalProvider and defaultDecision are never dropped (row 7)', () => {
  it('createGatekeeper refuses each and says where it is honoured', () => {
    const bundle = { policySetId: 'p', policies: [] };
    for (const option of ['auditSink', 'approvalProvider', 'defaultDecision'] as const) {
      const error = thrown(() => createGatekeeper({ bundle, [option]: option === 'defaultDecision' ? 'deny' : {} } as unknown as GatekeeperOptions));
      expect(error).toMatchObject({ code: 'GATEKEEPER.INVALID_OPTIONS', details: { option, passTo: 'AgentGatekeeper from @gatehouse/guard/hazeljs' } });
      expect(error.message).toContain(`unknown option "${option}"`);
    }
  });

  it('a migrating user keeps every decision in their sink, allows and denials alike', async () => {
    const { gk, sink } = gatekeeper();
    await gk.execute({ context: context({ amount: 10, tenantId: 'tenant-a' }), tool: refundTool() });
    await refusal(gk.execute({ context: context({ amount: 10, tenantId: 'tenant-b' }), tool: refundTool() }));
    await refusal(gk.execute({ context: context({ amount: 80, tenantId: 'tenant-a' }), tool: refundTool() }));
    expect(sink.events.map((e) => e.code)).toEqual(['GUARDRAIL.ALLOWED', 'HAZELJS.TOOL_COMPLETED', 'GUARDRAIL.DENIED', 'GUARDRAIL.APPROVAL_REQUIRED', 'HAZELJS.APPROVAL_PENDING']);
  });

  it('never loses the audit trail quietly: a sink that fails fails the call closed in enforce mode, before the tool runs', async () => {
    const failing = { write: () => { throw new Error('disk full'); } };
    const flaky = new CompositeAuditSink([new InMemoryAuditSink(), async () => { throw new Error('collector down'); }]);
    for (const auditSink of [failing, flaky]) {
      const { gk } = gatekeeper({ auditSink });
      const ran: number[] = [];
      const error = await refusal(gk.execute({ context: context({ amount: 10, tenantId: 'tenant-a' }), tool: refundTool(ran) }));
      expect(error).toBeInstanceOf(GatekeeperPolicyError);
      expect(error).toMatchObject({ code: 'HAZELJS.POLICY', retryable: true });
      expect(ran).toEqual([]);
    }
  });

  it('goes on without the sink only when told to (audit.critical false), as HazelJS', async () => {
    const { gk } = gatekeeper({ auditSink: () => { throw new Error('down'); }, audit: { critical: false } });
    expect((await gk.execute({ context: context({ amount: 10, tenantId: 'tenant-a' }), tool: refundTool() })).output).toEqual({ refunded: 10 });
  });

  it('refuses a misspelt option, a HazelJS emit() sink, and the options it cannot honour, each by name', () => {
    expect(thrown(() => new AgentGatekeeper({ auditsink: new InMemoryAuditSink() } as never))).toMatchObject({ code: 'HAZELJS.CONFIG' });
    const emitOnly = thrown(() => new AgentGatekeeper({ auditSink: { emit: () => undefined } as never }));
    expect(emitOnly).toBeInstanceOf(GatekeeperConfigurationError);
    expect(emitOnly).toMatchObject({ details: { field: 'auditSink' } });
    for (const option of ['clock', 'idGenerator', 'policyTimeoutMs', 'maxRewritePasses']) {
      expect(thrown(() => new AgentGatekeeper({ [option]: 1, auditSink: new InMemoryAuditSink() } as never))).toMatchObject({ code: 'HAZELJS.CONFIG', details: { field: option } });
    }
    expect(thrown(() => new AgentGatekeeper({ audit: { critcal: true }, auditSink: new InMemoryAuditSink() } as never))).toMatchObject({ code: 'HAZELJS.CONFIG' });
  });

  it('needs an approval provider in enforce mode when a policy can require approval (no silent in-memory default)', () => {
    const error = thrown(() => new AgentGatekeeper({ policies: [refundPolicy], auditSink: new InMemoryAuditSink() }));
    expect(error).toMatchObject({ code: 'HAZELJS.CONFIG', details: { field: 'approvalProvider' } });
    expect(() => new AgentGatekeeper({ mode: 'audit', policies: [refundPolicy], auditSink: new InMemoryAuditSink() })).not.toThrow();
  });
});

describe('modes (row 8 and the mode table)', () => {
  it('audit: a call the policies deny runs, and the record says what enforce would have done', async () => {
    const { gk, sink } = gatekeeper({ mode: 'audit' });
    const ran: number[] = [];
    const result = await gk.execute({ context: context({ amount: 10, tenantId: 'tenant-b' }), tool: refundTool(ran) });
    expect(result.decision).toMatchObject({ outcome: 'allow', wouldHave: 'deny', reason: 'audit mode: recorded, not enforced' });
    expect(ran).toEqual([10]);
    expect(sink.events[0]).toMatchObject({ code: 'GUARDRAIL.OBSERVED', decision: 'observed' });
    expect(sink.events[0]?.detections).toContain('gatekeeper.deny');
  });

  it('audit: a call whose input fails the tool schema is blocked (HazelJS structural validation)', async () => {
    const { gk, sink } = gatekeeper({ mode: 'audit' });
    const ran: number[] = [];
    const typed = fromFunction<Refund, unknown>('stripe.refund', async (input) => ran.push(input.amount), { inputSchema: z.object({ amount: z.number(), tenantId: z.string() }) });
    const error = await refusal(gk.execute({ context: context({ amount: 'all of it', tenantId: 'tenant-a' }), tool: typed }));
    expect(error).toBeInstanceOf(GatekeeperValidationError);
    expect(error.details).toMatchObject({ field: 'input' });
    expect(ran).toEqual([]);
    expect(sink.events.map((e) => [e.code, e.decision])).toEqual([['HAZELJS.VALIDATION', 'denied']]);
  });

  it('audit: a call whose trusted identity is malformed is blocked by the engine (GATEKEEPER.CALL_INVALID)', async () => {
    const { gk, sink } = gatekeeper({ mode: 'audit' });
    const ran: number[] = [];
    const error = await refusal(gk.execute({ context: context({ amount: 10, tenantId: 'tenant-a' }, { tenantId: 42 as never }), tool: refundTool(ran) }));
    expect(error).toBeInstanceOf(GatekeeperValidationError);
    expect(error.details).toMatchObject({ fault: 'GATEKEEPER.CALL_INVALID' });
    expect(ran).toEqual([]);
    expect(sink.events[0]).toMatchObject({ code: 'GUARDRAIL.DENIED', decision: 'denied' });
  });

  it('audit: the gatekeeper guardrail denies a malformed call as well, and only observes a well-formed one', async () => {
    const engine = createGatekeeper({ bundle: { policySetId: 'p', policies: [] }, mode: 'audit' });
    const check = (toolId: string) => gatekeeperGuardrail(engine).check({ placement: 'tool-args', value: {}, tool: { id: toolId }, context: { tenant: 'acme' }, signal: new AbortController().signal });
    const malformed = await check('');
    expect(malformed.action).toBe('deny');
    expect(malformed.detections).toContain('gatekeeper.fault:GATEKEEPER.CALL_INVALID');
    expect((await check('stripe.refund')).action).toBe('observe');
  });

  it('disabled: runs without evaluating, and still records a minimal decision', async () => {
    const { gk, sink } = gatekeeper({ mode: 'disabled' });
    const result = await gk.execute({ context: context({ amount: 10, tenantId: 'tenant-b' }), tool: refundTool() });
    expect(result.decision).toMatchObject({ outcome: 'allow', reason: 'gatekeeper disabled', policyIds: [] });
    expect(sink.events.map((e) => e.code)).toEqual(['GUARDRAIL.ALLOWED', 'HAZELJS.TOOL_COMPLETED']);
  });

  it('refuses an unknown mode: never a fallback from enforce to audit', () => {
    expect(thrown(() => gatekeeper({ mode: 'permissive' }))).toMatchObject({ code: 'GATEKEEPER.INVALID_MODE' });
  });
});
