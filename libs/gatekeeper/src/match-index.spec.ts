// The policy index against a plain scan (issue 22): random bundles and calls, decided by the
// indexed gatekeeper and by a linear reference written here from the documented semantics, must
// give the same result object; and tool names built to sit next to another bucket must neither
// borrow that bucket's policies nor lose their own.
import { describe, expect, it } from '@jest/globals';
import { type JsonValue } from '@gatehouse/contracts';
import { seeded, type Random } from '@gatehouse/contracts/testing';
import { createGatekeeper, type GatekeeperContext, type GatekeeperDecision } from './gatekeeper.js';
import { buildMatchIndex, candidatePolicies, compilePattern, MATCH_FIELDS, type MatchField, type MatchValues } from './match-index.js';

type Input = { readonly n: number };

/** A condition as the bundle writes it, with what it means in plain TypeScript (or a throw). */
interface Condition {
  readonly text: string | { readonly predicate: string };
  readonly holds: (ctx: GatekeeperContext) => boolean;
  readonly readsInput: boolean;
}

const CONDITIONS: readonly Condition[] = [
  { text: 'true', holds: () => true, readsInput: false },
  { text: 'identity.actor.role == "admin"', holds: (c) => c.identity.actor?.role === 'admin', readsInput: false },
  { text: 'call.tool == "svc1.op"', holds: (c) => c.call.tool === 'svc1.op', readsInput: false },
  { text: 'input.n > 3', holds: (c) => (c.input as Input).n > 3, readsInput: true },
  { text: 'input.n > 7', holds: (c) => (c.input as Input).n > 7, readsInput: true },
  {
    text: { predicate: 'boom' },
    holds: () => {
      throw new Error('boom');
    },
    readsInput: true,
  },
];
const PREDICATES = {
  boom: (): boolean => {
    throw new Error('predicate fault');
  },
};

// Short strings over a tiny alphabet collide often: `1` vs `1.`, a lone surrogate vs the emoji it starts.
const ALPHABET = ['s', 'v', 'c', '1', '0', '.', 'é', '😀', '\ud83d'] as const;
const RULE_IDS = ['denyWhen', 'requireApprovalWhen', 'allowWhen'] as const;
const REASONS = { deny: 'denied by policy', 'require-approval': 'approval required by policy', allow: 'allowed by policy' } as const;
const EFFECT = { denyWhen: 'deny', requireApprovalWhen: 'require-approval', allowWhen: 'allow' } as const;
const STRENGTH = { deny: 2, 'require-approval': 1, allow: 0 } as const;

interface TestPolicy {
  readonly id: string;
  readonly version: string;
  readonly priority: number;
  readonly match: Partial<Record<MatchField, string[]>>;
  readonly rules: Partial<Record<(typeof RULE_IDS)[number], Condition>>;
}

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

function name(random: Random, maxLength: number): string {
  let out = '';
  for (let i = Math.floor(random() * (maxLength + 1)); i > 0; i--) out += pick(random, ALPHABET);
  return out;
}

function pattern(random: Random): string {
  const roll = random();
  if (roll < 0.1) return '*';
  const base = name(random, 4);
  if (base === '' || roll < 0.5) return `${base}*`;
  return base;
}

function randomPolicy(random: Random, i: number, conditions: readonly Condition[]): TestPolicy {
  const match: Partial<Record<MatchField, string[]>> = {};
  for (const field of MATCH_FIELDS) {
    if (random() < 0.35) continue;
    match[field] = Array.from({ length: 1 + Math.floor(random() * 3) }, () => pattern(random));
  }
  const rules: Partial<Record<(typeof RULE_IDS)[number], Condition>> = {};
  for (const ruleId of RULE_IDS) if (random() < 0.5) rules[ruleId] = pick(random, conditions);
  if (Object.keys(rules).length === 0) rules.allowWhen = conditions[0]!;
  // Ids out of creation order, so the id tie-break inside a priority is exercised.
  return { id: `p${Math.floor(random() * 1e6)}-${i}`, version: `${i}`, priority: pick(random, [0, 0, 1, 2, 5]), match, rules };
}

function bundleOf(policies: readonly TestPolicy[]): JsonValue {
  return {
    policySetId: 'prop',
    policies: policies.map((p) => ({
      id: p.id,
      version: p.version,
      priority: p.priority,
      match: p.match,
      rules: Object.fromEntries(Object.entries(p.rules).map(([ruleId, c]) => [ruleId, c.text])),
    })),
  } as JsonValue;
}

function randomCall(random: Random): GatekeeperContext {
  const optional = (value: string): string | undefined => (random() < 0.15 ? undefined : value);
  const agent = optional(name(random, 5));
  const tenant = optional(name(random, 5));
  const environment = optional(name(random, 5));
  return {
    identity: {
      ...(agent === undefined ? {} : { agent }),
      ...(tenant === undefined ? {} : { tenant }),
      ...(environment === undefined ? {} : { environment }),
      actor: { id: 'u1', role: random() < 0.5 ? 'admin' : 'viewer' },
    },
    // Mostly non-empty: an empty tool is refused before any policy is looked at.
    call: { tool: random() < 0.03 ? '' : `${name(random, 5)}${random() < 0.1 ? '*' : ''}` || 's' },
    input: { n: Math.floor(random() * 10) },
  };
}

/** The documented semantics, written out again: `*` any present value, `x*` a longer value starting with x, else equal. */
function referenceMatches(patternText: string, value: string | undefined): boolean {
  if (value === undefined) return false;
  if (patternText === '*') return true;
  if (patternText.endsWith('*')) {
    const prefix = patternText.slice(0, -1);
    return value.length > prefix.length && value.startsWith(prefix);
  }
  return patternText === value;
}

function valuesOf(ctx: Omit<GatekeeperContext, 'input'>): MatchValues {
  return { agents: ctx.identity.agent, tools: ctx.call.tool, tenants: ctx.identity.tenant, environments: ctx.identity.environment };
}

function referenceMatched(policies: readonly TestPolicy[], values: MatchValues): TestPolicy[] {
  const byPriority = [...policies].sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return byPriority.filter((p) => MATCH_FIELDS.every((field) => p.match[field] === undefined || p.match[field].some((x) => referenceMatches(x, values[field]))));
}

/**
 * A linear scan, as the gatekeeper decided before the index: policies highest priority first;
 * the first fault ends it (deny); else the highest level where a rule fired decides, strongest
 * effect first, the first policy in order on a tie; nothing fired is the default deny.
 */
function referenceDecision(policies: readonly TestPolicy[], ctx: GatekeeperContext): GatekeeperDecision {
  const base = { mode: 'enforce', bundle: { policySetId: 'prop', revision: 1 } } as const;
  if (ctx.call.tool === '') {
    return { ...base, effect: 'deny', reason: 'the call is malformed: no trusted identity, tool or input to decide on (denied in every mode)', fault: 'GATEKEEPER.CALL_INVALID' };
  }
  let level: number | undefined;
  let winner: { policy: TestPolicy; ruleId: (typeof RULE_IDS)[number] } | undefined;
  for (const policy of referenceMatched(policies, valuesOf(ctx))) {
    if (level !== undefined && policy.priority < level) break;
    let fired: (typeof RULE_IDS)[number] | undefined;
    try {
      for (const ruleId of RULE_IDS) if (fired === undefined && policy.rules[ruleId]?.holds(ctx) === true) fired = ruleId;
      for (const ruleId of RULE_IDS) policy.rules[ruleId]?.holds(ctx);
    } catch {
      return { ...base, effect: 'deny', policyId: policy.id, policyVersion: policy.version, reason: 'policy evaluation failed (fail closed)', fault: 'GATEKEEPER.PREDICATE_FAILED' };
    }
    if (fired === undefined) continue;
    level = policy.priority;
    if (winner === undefined || STRENGTH[EFFECT[fired]] > STRENGTH[EFFECT[winner.ruleId]]) winner = { policy, ruleId: fired };
  }
  if (winner === undefined) return { ...base, effect: 'deny', reason: 'no policy allows this call (default deny)' };
  const effect = EFFECT[winner.ruleId];
  return { ...base, effect, policyId: winner.policy.id, policyVersion: winner.policy.version, ruleId: winner.ruleId, reason: REASONS[effect] };
}

function randomCase(seed: number, conditions: readonly Condition[]): { policies: TestPolicy[]; calls: GatekeeperContext[] } {
  const random = seeded(seed);
  const policies = Array.from({ length: 1 + Math.floor(random() * 40) }, (_, i) => randomPolicy(random, i, conditions));
  return { policies, calls: Array.from({ length: 40 }, () => randomCall(random)) };
}

describe('policy index', () => {
  it('decides 12,000 random calls over 300 random bundles exactly as a linear scan does', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const { policies, calls } = randomCase(seed, CONDITIONS);
      const gatekeeper = createGatekeeper({ bundle: bundleOf(policies), revision: 1, predicates: PREDICATES });
      for (const ctx of calls) {
        const decision = gatekeeper.evaluate(ctx);
        expect({ seed, ctx, decision }).toEqual({ seed, ctx, decision: referenceDecision(policies, ctx) });
        // explain walks every policy without the index: the same decision by the other path.
        expect(gatekeeper.explain(ctx).decision).toEqual(decision);
      }
    }
  });

  it('decides from facts alone as the linear scan does when no rule reads the arguments', () => {
    const factual = CONDITIONS.filter((c) => !c.readsInput);
    for (let seed = 1_001; seed <= 1_200; seed++) {
      const { policies, calls } = randomCase(seed, factual);
      const gatekeeper = createGatekeeper({ bundle: bundleOf(policies), revision: 1 });
      for (const { identity, call, input } of calls) {
        const expected = referenceDecision(policies, { identity, call, input });
        if (expected.fault !== undefined) continue;
        const facts = gatekeeper.decideFromFacts({ identity, call });
        expect({ seed, identity, call, facts }).toEqual({
          seed,
          identity,
          call,
          facts: { determined: true, effect: expected.effect, bundle: expected.bundle, ...(expected.policyId === undefined ? {} : { policyId: expected.policyId, ruleId: expected.ruleId }) },
        });
      }
    }
  });

  it('offers every matching policy as a candidate, in bundle order, and only bundle policies', () => {
    for (let seed = 2_001; seed <= 2_300; seed++) {
      const { policies, calls } = randomCase(seed, CONDITIONS);
      const indexable = policies.map((p) => ({
        id: p.id,
        match: MATCH_FIELDS.filter((f) => p.match[f] !== undefined).map((field) => ({ field, patterns: p.match[field]!.map(compilePattern) })),
      }));
      const index = buildMatchIndex(indexable);
      for (const ctx of calls) {
        const values = valuesOf(ctx);
        const positions = candidatePolicies(index, values).map((c) => indexable.indexOf(c));
        expect(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!))).toBe(true);
        const candidateIds = new Set(positions.map((p) => indexable[p]!.id));
        for (const matched of referenceMatched(policies, values)) expect({ seed, values, missing: matched.id, found: candidateIds.has(matched.id) }).toEqual({ seed, values, missing: matched.id, found: true });
      }
    }
  });
});

/** One policy per pattern; the one under test asks for approval above decoys that allow, so a decision names who matched. */
function neighbours(target: string, patterns: readonly string[]): unknown {
  return {
    policySetId: 'neighbours',
    policies: patterns.map((tool, i) => ({
      id: `n${i}`,
      version: '1',
      priority: tool === target ? 10 : 0,
      match: { tools: [tool] },
      rules: tool === target ? { requireApprovalWhen: 'true' } : { allowWhen: 'true' },
    })),
  };
}

describe('policy index against names built to sit next to another bucket', () => {
  const patterns = ['svc1', 'svc1*', 'svc1.*', 'svc10.*', 'svc10', 'svc1.op', '*', '😀*', '\ud83d*', 'é*', 'e*'];
  const tools = ['svc1', 'svc1.', 'svc1.op', 'svc10', 'svc10.', 'svc10.op', 'svc100.op', 'svc1*', 'svc1.*', '*', 's', '😀', '😀x', '\ud83d', '\ud83dx', 'é', 'é.op', 'e\u0301.op', 'SVC1.op', ' svc1.op'];

  it('matches each tool with exactly the patterns the documented semantics give', () => {
    for (const target of patterns) {
      const gatekeeper = createGatekeeper({ bundle: neighbours(target, patterns) });
      for (const tool of tools) {
        const decision = gatekeeper.evaluate({ identity: { agent: 'a' }, call: { tool }, input: {} });
        expect({ target, tool, matched: decision.effect === 'require-approval' }).toEqual({ target, tool, matched: referenceMatches(target, tool) });
      }
    }
  });

  it('keeps svc1 apart from svc10.* and svc1.*, and svc10. out of svc10.*', () => {
    const gatekeeper = (target: string) => createGatekeeper({ bundle: neighbours(target, patterns) });
    const approvedFor = (target: string, tool: string) => gatekeeper(target).evaluate({ identity: {}, call: { tool }, input: {} }).effect === 'require-approval';
    expect(approvedFor('svc10.*', 'svc1')).toBe(false);
    expect(approvedFor('svc1.*', 'svc1')).toBe(false);
    expect(approvedFor('svc1*', 'svc1')).toBe(false);
    expect(approvedFor('svc1', 'svc1')).toBe(true);
    expect(approvedFor('svc10.*', 'svc10.')).toBe(false);
    expect(approvedFor('svc10.*', 'svc10.op')).toBe(true);
    expect(approvedFor('svc1.*', 'svc10.op')).toBe(false);
    expect(approvedFor('svc1*', 'svc10.op')).toBe(true);
  });

  it('treats a star inside a tool name as a character, never as a pattern', () => {
    const gatekeeper = createGatekeeper({ bundle: neighbours('svc1.*', patterns) });
    expect(gatekeeper.evaluate({ identity: {}, call: { tool: 'svc1.*' }, input: {} }).policyId).toBe('n2');
    expect(gatekeeper.evaluate({ identity: {}, call: { tool: 'svc*' }, input: {} }).policyId).not.toBe('n2');
  });

  it('refuses an empty tool before any policy, and decides one from facts by its wildcard policies only', () => {
    const gatekeeper = createGatekeeper({ bundle: neighbours('*', patterns) });
    expect(gatekeeper.evaluate({ identity: {}, call: { tool: '' }, input: {} })).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.CALL_INVALID' });
    expect(gatekeeper.decideFromFacts({ identity: {}, call: { tool: '' } })).toMatchObject({ determined: true, effect: 'require-approval', policyId: 'n6' });
    const withoutWildcard = createGatekeeper({ bundle: neighbours('svc1', patterns.filter((p) => p !== '*')) });
    expect(withoutWildcard.decideFromFacts({ identity: {}, call: { tool: '' } })).toMatchObject({ determined: true, effect: 'deny' });
  });

  it('leaves a policy out when the call lacks the identity field it matches on, and keeps one that sets no such field', () => {
    const bundle = {
      policySetId: 'absent',
      policies: [
        { id: 'by-agent', version: '1', priority: 5, match: { agents: ['*'] }, rules: { denyWhen: 'true' } },
        { id: 'anyone', version: '1', priority: 0, match: { tools: ['svc1.*'] }, rules: { allowWhen: 'true' } },
      ],
    };
    const gatekeeper = createGatekeeper({ bundle });
    expect(gatekeeper.evaluate({ identity: {}, call: { tool: 'svc1.op' }, input: {} }).policyId).toBe('anyone');
    expect(gatekeeper.evaluate({ identity: { agent: '' }, call: { tool: 'svc1.op' }, input: {} }).policyId).toBe('by-agent');
  });
});
