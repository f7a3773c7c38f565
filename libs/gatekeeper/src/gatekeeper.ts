// The gatekeeper: compiles a validated bundle once (conditions parsed, predicates resolved,
// policies grouped by priority) and decides tool calls against it. One pure decision function;
// evaluate records, simulate and explain only compute.
import { GatehouseError, type JsonValue, readOptions } from '@gatehouse/contracts';
import { evaluateExpression, parseExpression, type Expr, type ExpressionScope, valuesEqual } from './expression.js';
import { buildMatchIndex, candidatePolicies, compilePattern, MATCH_FIELDS, patternMatches, type CompiledPattern, type MatchField, type MatchIndex, type MatchValues } from './match-index.js';
import { parseGatekeeperBundle, type GatekeeperBundle, type GatekeeperCondition, type GatekeeperPolicy } from './schema.js';

/**
 * `enforce` (default): decisions applied, default deny, fail closed. `audit`: evaluated and
 * recorded, then allowed, unless the call itself is malformed (GATEKEEPER.CALL_INVALID,
 * GATEKEEPER.INPUT_TOO_DEEP: denied in audit mode too). `disabled`: bypassed.
 */
export type GatekeeperMode = 'enforce' | 'audit' | 'disabled';
export const GATEKEEPER_MODES: readonly GatekeeperMode[] = Object.freeze(['enforce', 'audit', 'disabled']);

export type GatekeeperEffect = 'allow' | 'deny' | 'require-approval' | 'rewrite';
export type GatekeeperRuleId = 'allowWhen' | 'denyWhen' | 'requireApprovalWhen' | 'rewrite';

/** Trusted identity, supplied by host code from request context — never read from tool arguments. */
export interface GatekeeperIdentity {
  readonly agent?: string;
  readonly tenant?: string;
  readonly environment?: string;
  readonly actor?: { readonly id: string; readonly role: string };
  readonly runId?: string;
}

/** What is decided: trusted `identity` and `call` from the host, untrusted `input` (the tool arguments). */
export interface GatekeeperContext {
  readonly identity: GatekeeperIdentity;
  readonly call: { readonly tool: string };
  readonly input: JsonValue;
}

/** The bundle version a decision was made under. */
export interface BundleVersion {
  readonly policySetId: string;
  readonly revision?: number;
}

export interface GatekeeperDecision {
  readonly effect: GatekeeperEffect;
  readonly mode: GatekeeperMode;
  readonly policyId?: string;
  readonly policyVersion?: string;
  readonly ruleId?: GatekeeperRuleId;
  readonly bundle: BundleVersion;
  /** A static reason, safe for logs (no input content). */
  readonly reason: string;
  /** Set when the decision failed closed on an evaluation fault (stable code). */
  readonly fault?: string;
  /** For `rewrite` (and `require-approval` reached after a rewrite): the input the tool would get. */
  readonly rewrittenInput?: JsonValue;
  /** How many rewrites were applied. */
  readonly rewrites?: number;
  /** In audit mode: what enforce mode would have decided (the effect itself is then `allow`). */
  readonly wouldHave?: Omit<GatekeeperDecision, 'mode' | 'wouldHave' | 'bundle'>;
}

/** A registered predicate: a pure function of the scope and the policy's literal arguments. */
export type GatekeeperPredicate = (scope: ExpressionScope, args: readonly JsonValue[]) => boolean;

/** Re-validates a rewritten input against the tool's input schema. */
export type GatekeeperInputValidator = (input: JsonValue, call: { readonly tool: string }) => boolean;

export interface GatekeeperOptions {
  /** The bundle: an object or JSON/YAML text, validated by `GatekeeperBundleSchema`. */
  readonly bundle: GatekeeperBundle | string | unknown;
  /** The bundle's revision (from the policy service), carried by every decision. */
  readonly revision?: number;
  /** Default `enforce`; anything but the three modes is `GATEKEEPER.INVALID_MODE`. */
  readonly mode?: GatekeeperMode;
  /** Registered predicates, referenced by `{ predicate: name, args }`. */
  readonly predicates?: Readonly<Record<string, GatekeeperPredicate>>;
  /** Required for rewrites to take effect: without it a rewrite denies (fail closed). */
  readonly validateInput?: GatekeeperInputValidator;
  /** Most rewrite → re-validate → re-evaluate rounds (default 3); one more denies. */
  readonly maxRewrites?: number;
  /** Called with every decision `evaluate` makes (never by simulate or explain); a throw denies in enforce mode. */
  readonly onDecision?: (decision: GatekeeperDecision, ctx: GatekeeperContext) => void;
}

/** The outcome of `decideFromFacts`: an effect, or undetermined without the tool arguments. */
export type FactsDecision =
  | { readonly determined: true; readonly effect: GatekeeperEffect; readonly policyId?: string; readonly ruleId?: GatekeeperRuleId; readonly bundle: BundleVersion }
  | { readonly determined: false; readonly policyId: string; readonly bundle: BundleVersion };

export type PolicyExplanationStatus = 'decided' | 'outranked' | 'no-rule-fired' | 'lower-priority' | 'not-matched' | 'fault';

export interface PolicyExplanation {
  readonly policyId: string;
  readonly version: string;
  readonly priority: number;
  readonly status: PolicyExplanationStatus;
  /** For `not-matched`: the first match field that did not match. */
  readonly field?: 'agents' | 'tools' | 'tenants' | 'environments';
  /** For evaluated policies: each rule and whether its condition held. */
  readonly rules?: readonly { readonly ruleId: GatekeeperRuleId; readonly result: 'true' | 'false' | 'fault' }[];
}

export interface GatekeeperExplanation {
  readonly decision: GatekeeperDecision;
  /** Policy ids whose match block matched the call. */
  readonly matched: readonly string[];
  /** Every policy, highest priority first, with why it did or did not decide (for the first round). */
  readonly policies: readonly PolicyExplanation[];
}

export interface Gatekeeper {
  readonly mode: GatekeeperMode;
  /** The bundle version currently in force. */
  version(): BundleVersion;
  /** The ids of the policies of the bundle in force (what a decision's `policyId` can be). */
  policyIds(): readonly string[];
  /** Decides a call and reports it to `onDecision`. Never throws. */
  evaluate(ctx: GatekeeperContext): GatekeeperDecision;
  /** The decision `evaluate` would make (in `mode`, default the gatekeeper's), with no record, no tool and no approval. */
  simulate(ctx: GatekeeperContext, options?: { readonly mode?: GatekeeperMode }): GatekeeperDecision;
  /** The decision plus, per policy, why it matched or not; no record, no tool, no approval. */
  explain(ctx: GatekeeperContext): GatekeeperExplanation;
  /**
   * What the bundle (in enforce mode) decides for a call known only by its trusted facts — a
   * recorded decision, which never holds the tool arguments. `undetermined` when the outcome
   * could depend on the arguments (a rule that reads `input`, a predicate, a rewrite).
   */
  decideFromFacts(facts: Omit<GatekeeperContext, 'input'>): FactsDecision;
  /** Validates and compiles `bundle`, then swaps it in atomically; on any error the old bundle stays and the error is thrown. */
  load(bundle: GatekeeperBundle | string | unknown, revision?: number): BundleVersion;
}

interface CompiledCondition {
  readonly test: (scope: ExpressionScope) => boolean;
  /** Whether the outcome can depend on the tool arguments (a predicate sees them, so it can). */
  readonly readsInput: boolean;
}

interface CompiledRewrite {
  readonly when?: CompiledCondition;
  readonly set: readonly { readonly path: readonly string[]; readonly value: JsonValue | Expr; readonly computed: boolean }[];
  readonly remove: readonly (readonly string[])[];
}

interface CompiledPolicy {
  readonly source: GatekeeperPolicy;
  /** Only the match fields the policy sets, in MATCH_FIELDS order. */
  readonly match: readonly { readonly field: MatchField; readonly patterns: readonly CompiledPattern[] }[];
  readonly rules: readonly { readonly ruleId: Exclude<GatekeeperRuleId, 'rewrite'>; readonly condition: CompiledCondition }[];
  readonly rewrite?: CompiledRewrite;
}

interface CompiledBundle {
  readonly version: BundleVersion;
  /** Policies sorted by priority (descending), then id, for a deterministic order. */
  readonly policies: readonly CompiledPolicy[];
  readonly policyIds: readonly string[];
  /** The same policies indexed by their match patterns: evaluate and decideFromFacts look at candidates only. */
  readonly index: MatchIndex<CompiledPolicy>;
}

const EFFECT_OF: Readonly<Record<GatekeeperRuleId, GatekeeperEffect>> = {
  denyWhen: 'deny',
  requireApprovalWhen: 'require-approval',
  rewrite: 'rewrite',
  allowWhen: 'allow',
};
/** Precedence within one priority: deny > require-approval > rewrite > allow. */
const STRENGTH: Readonly<Record<GatekeeperEffect, number>> = { deny: 3, 'require-approval': 2, rewrite: 1, allow: 0 };
const DEFAULT_MAX_REWRITES = 3;

const REASONS = {
  allow: 'allowed by policy',
  deny: 'denied by policy',
  'require-approval': 'approval required by policy',
  rewrite: 'input rewritten by policy',
  noPolicy: 'no policy allows this call (default deny)',
  fault: 'policy evaluation failed (fail closed)',
  rewriteBound: 'rewrite bound exceeded (fail closed)',
  rewriteInvalid: 'rewritten input failed re-validation',
  rewriteUnvalidated: 'rewritten input cannot be re-validated: no validator configured (fail closed)',
  disabled: 'gatekeeper disabled',
  recordFailed: 'decision could not be recorded (fail closed)',
  unavailable: 'the policy bundles no longer follow the log (fail closed)',
  callInvalid: 'the call is malformed: no trusted identity, tool or input to decide on (denied in every mode)',
} as const;

/** Thrown inside a round to fail it closed; never escapes the gatekeeper. */
class EvaluationFault extends Error {
  constructor(readonly code: string, readonly policyId: string | undefined) {
    super(code);
  }
}

export function assertGatekeeperMode(mode: unknown): GatekeeperMode {
  if (mode === undefined) return 'enforce';
  if (typeof mode === 'string' && (GATEKEEPER_MODES as readonly string[]).includes(mode)) return mode as GatekeeperMode;
  throw new GatehouseError('GATEKEEPER.INVALID_MODE', 'gatekeeper mode must be enforce, audit or disabled', {
    category: 'validation',
    details: { allowed: [...GATEKEEPER_MODES] },
  });
}

function compileError(code: string, message: string, policyId: string, field: string, cause?: unknown): GatehouseError {
  const inner = cause instanceof GatehouseError ? cause.details : {};
  return new GatehouseError(code, `${message} (policy ${policyId}, ${field})`, {
    category: 'validation',
    details: { ...inner, policyId, field },
    cause,
  });
}

/** Compiled expression conditions of one bundle by their text: policies that repeat a condition share one. */
type ConditionCache = Map<string, CompiledCondition>;

function compileCondition(
  condition: GatekeeperCondition,
  policyId: string,
  field: string,
  predicates: Readonly<Record<string, GatekeeperPredicate>>,
  shared: ConditionCache,
): CompiledCondition {
  if (typeof condition === 'string') {
    // One AST per distinct text keeps a large bundle's working set small: a call over 1,000
    // policies that repeat an allow rule walks one hot tree, not one cold copy per policy. Only
    // expressions are shared; a predicate's condition carries its policy id for its fault.
    const known = shared.get(condition);
    if (known !== undefined) return known;
    let expr: Expr;
    try {
      expr = parseExpression(condition);
    } catch (cause) {
      const code = cause instanceof GatehouseError ? cause.code : 'GATEKEEPER.EXPRESSION_SYNTAX';
      throw compileError(code, cause instanceof Error ? cause.message : 'invalid condition', policyId, field, cause);
    }
    const compiled: CompiledCondition = { test: (scope) => evaluateExpression(expr, scope) === true, readsInput: readsInputPath(expr) };
    shared.set(condition, compiled);
    return compiled;
  }
  const name = condition.predicate;
  const predicate = Object.hasOwn(predicates, name) ? predicates[name] : undefined;
  if (typeof predicate !== 'function') {
    throw compileError('GATEKEEPER.UNKNOWN_PREDICATE', 'condition names a predicate that is not registered', policyId, field);
  }
  const args = Object.freeze([...(condition.args ?? [])]);
  return {
    readsInput: true,
    test: (scope) => {
      let result: unknown;
      try {
        result = predicate(scope, args);
      } catch {
        throw new EvaluationFault('GATEKEEPER.PREDICATE_FAILED', policyId);
      }
      if (typeof result !== 'boolean') throw new EvaluationFault('GATEKEEPER.PREDICATE_NOT_BOOLEAN', policyId);
      return result;
    },
  };
}

function compilePolicy(policy: GatekeeperPolicy, predicates: Readonly<Record<string, GatekeeperPredicate>>, shared: ConditionCache): CompiledPolicy {
  const rules: CompiledPolicy['rules'][number][] = [];
  for (const ruleId of ['denyWhen', 'requireApprovalWhen', 'allowWhen'] as const) {
    const condition = policy.rules[ruleId];
    if (condition !== undefined) rules.push({ ruleId, condition: compileCondition(condition, policy.id, `rules.${ruleId}`, predicates, shared) });
  }
  let rewrite: CompiledRewrite | undefined;
  const r = policy.rules.rewrite;
  if (r !== undefined) {
    const set = Object.entries(r.set ?? {}).map(([path, value]) => {
      if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 1 && typeof value['expr'] === 'string') {
        try {
          return { path: path.split('.'), value: parseExpression(value['expr']), computed: true };
        } catch (cause) {
          const code = cause instanceof GatehouseError ? cause.code : 'GATEKEEPER.EXPRESSION_SYNTAX';
          throw compileError(code, cause instanceof Error ? cause.message : 'invalid expression', policy.id, `rules.rewrite.set.${path}`, cause);
        }
      }
      return { path: path.split('.'), value: value as JsonValue, computed: false };
    });
    rewrite = {
      ...(r.when === undefined ? {} : { when: compileCondition(r.when, policy.id, 'rules.rewrite.when', predicates, shared) }),
      set,
      remove: (r.remove ?? []).map((p) => p.split('.')),
    };
  }
  const match = MATCH_FIELDS.flatMap((field) => {
    const patterns = policy.match[field];
    if (patterns === undefined) return [];
    return [{ field, patterns: patterns.map(compilePattern) }];
  });
  return { source: policy, match, rules, ...(rewrite === undefined ? {} : { rewrite }) };
}

/**
 * Compiles every condition and computed value of a bundle as a guard's `load` does, so a bundle no
 * guard could load is refused where it is validated or published, not found out where it is
 * enforced. Throws the load's typed error: the schema's (GATEKEEPER.BUNDLE_INVALID with each
 * path), or an expression's (GATEKEEPER.EXPRESSION_SYNTAX, _LIMIT, _FORBIDDEN_PATH with `policyId`,
 * `field` and `position`). Predicates are the guard's own code: their names are listed, not checked.
 */
export function compileGatekeeperBundle(source: unknown): { readonly bundle: GatekeeperBundle; readonly predicates: readonly string[] } {
  const bundle = parseGatekeeperBundle(source);
  const names = new Set<string>();
  for (const { rules } of bundle.policies) {
    for (const condition of [rules.denyWhen, rules.requireApprovalWhen, rules.allowWhen, rules.rewrite?.when]) {
      if (condition !== undefined && typeof condition !== 'string') names.add(condition.predicate);
    }
  }
  // Parsed once above; each policy compiled as `load` compiles it.
  const stand = Object.fromEntries([...names].map((name) => [name, () => false]));
  const shared: ConditionCache = new Map();
  for (const policy of bundle.policies) compilePolicy(policy, stand, shared);
  return { bundle, predicates: [...names].sort() };
}

// Set by `followPolicyBundles` once it follows a watcher: the gatekeeper then asks, per decision,
// whether its bundles still follow the log. Internal to the library (not exported from the package).
const bundleSources = new WeakMap<Gatekeeper, (following: () => boolean) => void>();

/** Ties `gatekeeper`'s decisions to `following`: while it is false (or throws), every decision is a fail-closed deny. */
export function attachBundleSource(gatekeeper: Gatekeeper, following: () => boolean): void {
  const attach = bundleSources.get(gatekeeper);
  if (!attach) throw new GatehouseError('GATEKEEPER.INVALID_OPTIONS', 'not a gatekeeper made by createGatekeeper', { category: 'validation' });
  attach(following);
}

const isFollowing = (following: () => boolean): boolean => {
  try {
    return following();
  } catch {
    return false;
  }
};

function compileBundle(input: unknown, revision: number | undefined, predicates: Readonly<Record<string, GatekeeperPredicate>>): CompiledBundle {
  if (revision !== undefined && (!Number.isSafeInteger(revision) || revision < 0)) {
    throw new GatehouseError('GATEKEEPER.INVALID_REVISION', 'bundle revision must be a non-negative integer', { category: 'validation' });
  }
  const bundle = parseGatekeeperBundle(input);
  const shared: ConditionCache = new Map();
  const policies = bundle.policies
    .map((p) => compilePolicy(p, predicates, shared))
    .sort((a, b) => b.source.priority - a.source.priority || (a.source.id < b.source.id ? -1 : a.source.id > b.source.id ? 1 : 0));
  return Object.freeze({
    version: Object.freeze(revision === undefined ? { policySetId: bundle.policySetId } : { policySetId: bundle.policySetId, revision }),
    policies: Object.freeze(policies),
    policyIds: Object.freeze(policies.map((p) => p.source.id)),
    index: buildMatchIndex(policies),
  });
}

/** `*` matches any present value; `prefix*` a longer value starting with prefix; anything else exactly. */
export function matchesPattern(pattern: string, value: string | undefined): boolean {
  return patternMatches(compilePattern(pattern), value);
}

const matchValuesOf = (ctx: Omit<GatekeeperContext, 'input'>): MatchValues => ({
  agents: ctx.identity.agent,
  tools: ctx.call.tool,
  tenants: ctx.identity.tenant,
  environments: ctx.identity.environment,
});

function mismatchedField(policy: CompiledPolicy, values: MatchValues): MatchField | undefined {
  for (const { field, patterns } of policy.match) {
    const value = values[field];
    let hit = false;
    for (const pattern of patterns) {
      if (patternMatches(pattern, value)) {
        hit = true;
        break;
      }
    }
    if (!hit) return field;
  }
  return undefined;
}

/**
 * The copy a rewrite writes into: own enumerable data only, prototype-named keys and non-JSON
 * values dropped (not `cloneJson`, which copies a JSON value as it is), at most 64 levels.
 */
function copyForRewrite(value: unknown, depth = 0): JsonValue | undefined {
  if (depth > 64) throw new EvaluationFault('GATEKEEPER.INPUT_TOO_DEEP', undefined);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (Array.isArray(value)) return value.map((v) => copyForRewrite(v, depth + 1) ?? null);
  if (typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const key of Object.keys(value)) {
      if (key === '__proto__' || key === 'constructor' || key === 'prototype') continue;
      const v = copyForRewrite((value as Record<string, unknown>)[key], depth + 1);
      if (v !== undefined) out[key] = v;
    }
    return out;
  }
  return undefined;
}

function applyRewrite(rewrite: CompiledRewrite, input: JsonValue, scope: ExpressionScope, policyId: string): JsonValue {
  const root = copyForRewrite(input);
  if (root === null || typeof root !== 'object' || Array.isArray(root)) throw new EvaluationFault('GATEKEEPER.REWRITE_NOT_OBJECT', policyId);
  for (const { path, value, computed } of rewrite.set) {
    const next = computed ? evaluateExpression(value as Expr, scope) : copyForRewrite(value);
    if (next === undefined) throw new EvaluationFault('GATEKEEPER.REWRITE_VALUE_UNDEFINED', policyId);
    let target: Record<string, JsonValue> = root;
    for (const segment of path.slice(0, -1)) {
      const child = Object.hasOwn(target, segment) ? target[segment] : undefined;
      if (child === undefined) {
        const created: Record<string, JsonValue> = {};
        target[segment] = created;
        target = created;
      } else if (child !== null && typeof child === 'object' && !Array.isArray(child)) {
        target = child;
      } else {
        throw new EvaluationFault('GATEKEEPER.REWRITE_PATH_CONFLICT', policyId);
      }
    }
    target[path[path.length - 1]!] = next;
  }
  for (const path of rewrite.remove) {
    let target: JsonValue | undefined = root;
    for (const segment of path.slice(0, -1)) {
      target = target !== null && typeof target === 'object' && !Array.isArray(target) && Object.hasOwn(target, segment) ? target[segment] : undefined;
    }
    if (target !== null && typeof target === 'object' && !Array.isArray(target)) delete target[path[path.length - 1]!];
  }
  return root;
}

interface RoundResult {
  readonly effect: GatekeeperEffect;
  readonly policy?: CompiledPolicy;
  readonly ruleId?: GatekeeperRuleId;
  readonly reason: string;
  readonly fault?: string;
  readonly explanations: PolicyExplanation[];
  readonly matched: string[];
}

/**
 * One round over `policies` (the whole bundle, or a superset of the matching ones in bundle
 * order): the highest priority at which any matched policy's rule fired decides, by
 * deny > require-approval > rewrite > allow; nothing fired → default deny.
 */
function decideRound(bundle: CompiledBundle, policies: readonly CompiledPolicy[], ctx: GatekeeperContext, scope: ExpressionScope, explain: boolean): RoundResult {
  const explanations: PolicyExplanation[] = [];
  const matched: string[] = [];
  let decidedPriority: number | undefined;
  let winner: { policy: CompiledPolicy; ruleId: GatekeeperRuleId; effect: GatekeeperEffect } | undefined;
  const firedAtLevel: { policy: CompiledPolicy; explanationIndex: number }[] = [];
  let fault: { code: string; policyId: string | undefined } | undefined;

  const values = matchValuesOf(ctx);
  for (const policy of policies) {
    const p = policy.source;
    const field = mismatchedField(policy, values);
    if (field !== undefined) {
      if (explain) explanations.push({ policyId: p.id, version: p.version, priority: p.priority, status: 'not-matched', field });
      continue;
    }
    matched.push(p.id);
    if (decidedPriority !== undefined && p.priority < decidedPriority) {
      if (!explain) break;
      explanations.push({ policyId: p.id, version: p.version, priority: p.priority, status: 'lower-priority' });
      continue;
    }
    if (fault !== undefined && !explain) break;
    const results: { ruleId: GatekeeperRuleId; result: 'true' | 'false' | 'fault' }[] = [];
    let best: { ruleId: GatekeeperRuleId; effect: GatekeeperEffect } | undefined;
    const consider = (ruleId: GatekeeperRuleId, holds: () => boolean): void => {
      let result: boolean;
      try {
        result = holds();
      } catch (error) {
        results.push({ ruleId, result: 'fault' });
        fault ??= { code: error instanceof EvaluationFault ? error.code : 'GATEKEEPER.EVALUATION_FAILED', policyId: p.id };
        return;
      }
      results.push({ ruleId, result: result ? 'true' : 'false' });
      const effect = EFFECT_OF[ruleId];
      if (result && (best === undefined || STRENGTH[effect] > STRENGTH[best.effect])) best = { ruleId, effect };
    };
    for (const rule of policy.rules) consider(rule.ruleId, () => rule.condition.test(scope));
    const rewrite = policy.rewrite;
    if (rewrite !== undefined) consider('rewrite', () => (rewrite.when === undefined ? true : rewrite.when.test(scope)));
    const faulted = results.some((r) => r.result === 'fault');
    if (explain) {
      explanations.push({ policyId: p.id, version: p.version, priority: p.priority, status: faulted ? 'fault' : best === undefined ? 'no-rule-fired' : 'outranked', rules: results });
    }
    if (best !== undefined && !faulted) {
      decidedPriority = p.priority;
      if (explain) firedAtLevel.push({ policy, explanationIndex: explanations.length - 1 });
      if (winner === undefined || STRENGTH[best.effect] > STRENGTH[winner.effect]) winner = { policy, ...best };
    }
  }

  if (explain && winner !== undefined && fault === undefined) {
    const index = firedAtLevel.find((f) => f.policy === winner!.policy)?.explanationIndex;
    if (index !== undefined) explanations[index] = { ...explanations[index]!, status: 'decided' };
  }
  if (fault !== undefined) {
    return { effect: 'deny', reason: REASONS.fault, fault: fault.code, explanations, matched, ...policyRef(bundle, fault.policyId) };
  }
  if (winner === undefined) return { effect: 'deny', reason: REASONS.noPolicy, explanations, matched };
  return { effect: winner.effect, policy: winner.policy, ruleId: winner.ruleId, reason: REASONS[winner.effect], explanations, matched };
}

function policyRef(bundle: CompiledBundle, policyId: string | undefined): { policy?: CompiledPolicy } {
  const policy = policyId === undefined ? undefined : bundle.policies.find((p) => p.source.id === policyId);
  return policy === undefined ? {} : { policy };
}

/** Trusted parts are copied field by field, so nothing from the input can stand in for them. */
function scopeOf(ctx: GatekeeperContext, input: JsonValue): ExpressionScope {
  const id = ctx.identity;
  const identity = Object.freeze({
    ...(id.agent === undefined ? {} : { agent: id.agent }),
    ...(id.tenant === undefined ? {} : { tenant: id.tenant }),
    ...(id.environment === undefined ? {} : { environment: id.environment }),
    ...(id.runId === undefined ? {} : { runId: id.runId }),
    ...(id.actor === undefined ? {} : { actor: Object.freeze({ id: id.actor.id, role: id.actor.role }) }),
  });
  return { input, identity, call: Object.freeze({ tool: ctx.call.tool }) };
}

function decide(bundle: CompiledBundle, ctx: GatekeeperContext, options: ResolvedOptions, explain: boolean): { decision: Omit<GatekeeperDecision, 'mode' | 'bundle'>; first?: RoundResult } {
  let input = ctx.input;
  let rewrites = 0;
  let lastRewrite: CompiledPolicy | undefined;
  let first: RoundResult | undefined;
  const ref = (policy: CompiledPolicy | undefined): { policyId?: string; policyVersion?: string } =>
    policy === undefined ? {} : { policyId: policy.source.id, policyVersion: policy.source.version };
  // Which policies can match depends on the trusted identity and tool only, not on the (rewritten)
  // input, so one lookup serves every round. Explain reports on every policy, so it scans them all.
  const candidates = explain ? bundle.policies : candidatePolicies(bundle.index, matchValuesOf(ctx));
  for (;;) {
    const scope = scopeOf(ctx, input);
    const round = decideRound(bundle, candidates, ctx, scope, explain && first === undefined);
    first ??= round;
    const rewritten = rewrites > 0 ? { rewrittenInput: input, rewrites } : {};
    if (round.fault !== undefined) return { decision: { effect: 'deny', ...ref(round.policy), reason: round.reason, fault: round.fault, ...rewritten }, first };
    if (round.effect !== 'rewrite') {
      if (round.effect === 'allow' && rewrites > 0) {
        return { decision: { effect: 'rewrite', ...ref(lastRewrite), ruleId: 'rewrite', reason: REASONS.rewrite, ...rewritten }, first };
      }
      return { decision: { effect: round.effect, ...ref(round.policy), ...(round.ruleId === undefined ? {} : { ruleId: round.ruleId }), reason: round.reason, ...rewritten }, first };
    }
    const policy = round.policy!;
    let next: JsonValue;
    try {
      next = applyRewrite(policy.rewrite!, input, scope, policy.source.id);
    } catch (error) {
      const code = error instanceof EvaluationFault ? error.code : 'GATEKEEPER.REWRITE_FAILED';
      return { decision: { effect: 'deny', ...ref(policy), ruleId: 'rewrite', reason: REASONS.fault, fault: code, ...rewritten }, first };
    }
    if (valuesEqual(next, input) && rewrites > 0) {
      // A fixpoint: the rewrite no longer changes anything, so the input it produced stands.
      return { decision: { effect: 'rewrite', ...ref(policy), ruleId: 'rewrite', reason: REASONS.rewrite, rewrittenInput: input, rewrites }, first };
    }
    if (rewrites >= options.maxRewrites) {
      return { decision: { effect: 'deny', ...ref(policy), ruleId: 'rewrite', reason: REASONS.rewriteBound, fault: 'GATEKEEPER.REWRITE_BOUND_EXCEEDED', rewrites }, first };
    }
    if (options.validateInput === undefined) {
      return { decision: { effect: 'deny', ...ref(policy), ruleId: 'rewrite', reason: REASONS.rewriteUnvalidated, fault: 'GATEKEEPER.REWRITE_UNVALIDATED' }, first };
    }
    let valid: unknown;
    try {
      valid = options.validateInput(next, { tool: ctx.call.tool });
    } catch {
      valid = false;
    }
    if (valid !== true) {
      return { decision: { effect: 'deny', ...ref(policy), ruleId: 'rewrite', reason: REASONS.rewriteInvalid, fault: 'GATEKEEPER.REWRITE_INVALID', rewrites: rewrites + 1 }, first };
    }
    input = next;
    rewrites++;
    lastRewrite = policy;
  }
}

interface ResolvedOptions {
  readonly predicates: Readonly<Record<string, GatekeeperPredicate>>;
  readonly validateInput?: GatekeeperInputValidator;
  readonly maxRewrites: number;
}

// Faults of the call itself, not of a policy: audit mode still denies them (as HazelJS's does),
// since no policy judged the call and nothing can say it was safe to let through.
const STRUCTURAL_FAULTS: ReadonlySet<string> = new Set(['GATEKEEPER.CALL_INVALID', 'GATEKEEPER.INPUT_TOO_DEEP']);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether `ctx` has the shape a decision needs (trusted identity and call, some input): GATEKEEPER.CALL_INVALID when not. */
function structuralFault(ctx: unknown): string | undefined {
  if (!isRecord(ctx) || !isRecord(ctx['call']) || typeof ctx['call']['tool'] !== 'string' || ctx['call']['tool'] === '' || !isRecord(ctx['identity']) || ctx['input'] === undefined) return 'GATEKEEPER.CALL_INVALID';
  const identity = ctx['identity'];
  if ((['agent', 'tenant', 'environment', 'runId'] as const).some((field) => identity[field] !== undefined && typeof identity[field] !== 'string')) return 'GATEKEEPER.CALL_INVALID';
  const actor = identity['actor'];
  if (actor !== undefined && (!isRecord(actor) || typeof actor['id'] !== 'string' || typeof actor['role'] !== 'string')) return 'GATEKEEPER.CALL_INVALID';
  return undefined;
}

function applyMode(mode: GatekeeperMode, bundle: BundleVersion, decision: Omit<GatekeeperDecision, 'mode' | 'bundle'>): GatekeeperDecision {
  if (mode === 'enforce' || (decision.fault !== undefined && STRUCTURAL_FAULTS.has(decision.fault))) return Object.freeze({ ...decision, mode, bundle });
  return Object.freeze({ effect: 'allow', mode, bundle, reason: 'audit mode: recorded, not enforced', wouldHave: Object.freeze(decision) });
}

// Whether an expression reads the tool arguments anywhere.
function readsInputPath(expr: Expr): boolean {
  switch (expr.kind) {
    case 'literal':
      return false;
    case 'path':
      return expr.root === 'input';
    case 'array':
      return expr.items.some(readsInputPath);
    case 'not':
    case 'neg':
      return readsInputPath(expr.operand);
    default:
      return readsInputPath(expr.left) || readsInputPath(expr.right);
  }
}

/**
 * The round of `decideRound` on facts alone, exact where the arguments cannot matter: policies are
 * taken a priority level at a time; a level whose matched policies all decide without the
 * arguments is evaluated (and decides if a rule fired); a level with a policy that reads them is
 * undetermined, unless a rule that does not read them already denies there (nothing outranks a
 * deny within a level). Rewrites always read the arguments.
 */
function decideFromFacts(bundle: CompiledBundle, facts: Omit<GatekeeperContext, 'input'>): FactsDecision {
  const ctx: GatekeeperContext = { identity: facts.identity, call: facts.call, input: null };
  const scope = scopeOf(ctx, null);
  const values = matchValuesOf(ctx);
  const matched = candidatePolicies(bundle.index, values).filter((policy) => mismatchedField(policy, values) === undefined);
  for (let i = 0; i < matched.length; ) {
    const priority = matched[i]!.source.priority;
    const level: CompiledPolicy[] = [];
    for (; i < matched.length && matched[i]!.source.priority === priority; i++) level.push(matched[i]!);
    let best: { policy: CompiledPolicy; ruleId: GatekeeperRuleId; effect: GatekeeperEffect } | undefined;
    let reading: CompiledPolicy | undefined;
    for (const policy of level) {
      if (policy.rewrite !== undefined) reading ??= policy;
      for (const rule of policy.rules) {
        if (rule.condition.readsInput) {
          reading ??= policy;
          continue;
        }
        const effect = EFFECT_OF[rule.ruleId];
        if (rule.condition.test(scope) && (best === undefined || STRENGTH[effect] > STRENGTH[best.effect])) best = { policy, ruleId: rule.ruleId, effect };
      }
    }
    if (best !== undefined && (reading === undefined || best.effect === 'deny')) {
      return { determined: true, effect: best.effect, policyId: best.policy.source.id, ruleId: best.ruleId, bundle: bundle.version };
    }
    if (reading !== undefined) return { determined: false, policyId: reading.source.id, bundle: bundle.version };
  }
  return { determined: true, effect: 'deny', bundle: bundle.version };
}

const GATEKEEPER_OPTIONS = ['bundle', 'revision', 'mode', 'predicates', 'validateInput', 'maxRewrites', 'onDecision'] as const;

// HazelJS AgentGatekeeper options a migrating user may hand this API: the refusal says where they are honoured.
const HAZELJS_OPTIONS: ReadonlySet<string> = new Set(['auditSink', 'approvalProvider', 'defaultDecision', 'policies', 'audit']);

/**
 * Refuses an options object with a key `where` does not know (GATEKEEPER.INVALID_OPTIONS naming
 * it): a migrating user's `auditSink` or `defaultDecision` must not be dropped without a word, and
 * for HazelJS's options the error says where to pass them (`details.passTo`).
 */
export function assertGatekeeperOptions(where: string, options: unknown, known: readonly string[]): void {
  try {
    readOptions(where, options, known);
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : `${where}: invalid options`;
    const hazel = isRecord(options) ? Object.keys(options).find((key) => !known.includes(key) && HAZELJS_OPTIONS.has(key)) : undefined;
    if (hazel === undefined) throw new GatehouseError('GATEKEEPER.INVALID_OPTIONS', message, { category: 'validation', cause });
    const passTo = 'AgentGatekeeper from @gatehouse/guard/hazeljs';
    throw new GatehouseError('GATEKEEPER.INVALID_OPTIONS', `${message}; "${hazel}" is a HazelJS AgentGatekeeper option: pass it to ${passTo}, which honours it`, {
      category: 'validation',
      details: { option: hazel, passTo },
      cause,
    });
  }
}

/**
 * Creates a gatekeeper over a validated bundle. Throws a GatehouseError at construction for an
 * invalid bundle, condition (with its position), unknown predicate or mode; never at evaluation.
 */
export function createGatekeeper(options: GatekeeperOptions): Gatekeeper {
  assertGatekeeperOptions('createGatekeeper', options, GATEKEEPER_OPTIONS);
  const mode = assertGatekeeperMode(options.mode);
  const maxRewrites = options.maxRewrites ?? DEFAULT_MAX_REWRITES;
  if (!Number.isSafeInteger(maxRewrites) || maxRewrites < 0 || maxRewrites > 100) {
    throw new GatehouseError('GATEKEEPER.INVALID_OPTIONS', 'maxRewrites must be an integer between 0 and 100', { category: 'validation', details: { field: 'maxRewrites' } });
  }
  const resolved: ResolvedOptions = {
    predicates: Object.freeze({ ...(options.predicates ?? {}) }),
    ...(options.validateInput === undefined ? {} : { validateInput: options.validateInput }),
    maxRewrites,
  };
  // The one mutable cell: a load swaps it in a single assignment after compiling succeeded.
  let current = compileBundle(options.bundle, options.revision, resolved.predicates);
  // Until a follower attaches its watcher, the bundle given here is the one in force.
  let following: () => boolean = () => true;

  const run = (ctx: GatekeeperContext, runMode: GatekeeperMode, explain: boolean): { decision: GatekeeperDecision; first?: RoundResult } => {
    const bundle = current;
    if (runMode === 'disabled') return { decision: Object.freeze({ effect: 'allow', mode: runMode, bundle: bundle.version, reason: REASONS.disabled }) };
    // The watcher stopped: the bundle held may no longer be the one in force, so nothing is allowed by it.
    if (!isFollowing(following)) return { decision: applyMode(runMode, bundle.version, { effect: 'deny', reason: REASONS.unavailable, fault: 'GATEKEEPER.BUNDLE_UNAVAILABLE' }) };
    const invalid = structuralFault(ctx);
    if (invalid !== undefined) return { decision: applyMode(runMode, bundle.version, { effect: 'deny', reason: REASONS.callInvalid, fault: invalid }) };
    try {
      const { decision, first } = decide(bundle, ctx, resolved, explain);
      return { decision: applyMode(runMode, bundle.version, decision), ...(first === undefined ? {} : { first }) };
    } catch {
      // A malformed context (e.g. a missing `call`) is a fault like any other: fail closed.
      return { decision: applyMode(runMode, bundle.version, { effect: 'deny', reason: REASONS.fault, fault: 'GATEKEEPER.EVALUATION_FAILED' }) };
    }
  };

  const gatekeeper: Gatekeeper = Object.freeze({
    mode,
    version: () => current.version,
    policyIds: () => current.policyIds,
    evaluate(ctx: GatekeeperContext): GatekeeperDecision {
      const { decision } = run(ctx, mode, false);
      if (options.onDecision === undefined) return decision;
      try {
        options.onDecision(decision, ctx);
        return decision;
      } catch {
        if (mode !== 'enforce') return decision;
        return Object.freeze({ effect: 'deny', mode, bundle: decision.bundle, reason: REASONS.recordFailed, fault: 'GATEKEEPER.RECORD_FAILED' });
      }
    },
    simulate(ctx: GatekeeperContext, simulateOptions?: { readonly mode?: GatekeeperMode }): GatekeeperDecision {
      return run(ctx, assertGatekeeperMode(simulateOptions?.mode ?? mode), false).decision;
    },
    explain(ctx: GatekeeperContext): GatekeeperExplanation {
      const { decision, first } = run(ctx, mode, true);
      return Object.freeze({ decision, matched: first?.matched ?? [], policies: first?.explanations ?? [] });
    },
    decideFromFacts(facts: Omit<GatekeeperContext, 'input'>): FactsDecision {
      return decideFromFacts(current, facts);
    },
    load(bundle: unknown, revision?: number): BundleVersion {
      const next = compileBundle(bundle, revision, resolved.predicates);
      const old = current.version;
      if (old.policySetId === next.version.policySetId && old.revision !== undefined && next.version.revision !== undefined && next.version.revision < old.revision) {
        throw new GatehouseError('GATEKEEPER.STALE_REVISION', 'bundle revision is older than the one in force', {
          category: 'conflict',
          details: { policySetId: old.policySetId, current: old.revision, offered: next.version.revision },
        });
      }
      current = next;
      return next.version;
    },
  });
  bundleSources.set(gatekeeper, (source) => {
    following = source;
  });
  return gatekeeper;
}
