// HazelJS policies compiled onto the one gatekeeper engine. A HazelJS policy becomes a gatehouse
// policy (data: expressions, or `{ predicate }` names for function rules, which stay in-process),
// arranged so the engine reaches HazelJS's decisions:
// - every policy sits at one gatehouse priority: HazelJS lets a deny (then an approval, then an
//   allow) win whatever the priorities, which only break ties; the engine's precedence within one
//   priority is that same order;
// - a policy with `allowWhen` that does not hold denies (HazelJS: "allow predicate failed") unless
//   its `denyWhen` or `requireApprovalWhen` decided first: a companion policy `<id>:allow-failed`;
// - `defaultDecision: 'allow'` is a catch-all allow, the weakest effect, named `hazeljs.default-allow`.
import { GatehouseError, readOptions } from '@gatehouse/contracts';
import { evaluateExpression, type Expr, type ExpressionScope, type GatekeeperBundle, type GatekeeperCondition, type GatekeeperPolicy, type GatekeeperPredicate, parseExpression } from '../index.js';
import { type ToolClassification, type ToolInvocationContext } from './context.js';
import { configError } from './errors.js';

/** What a function rule is given: the (current) input, the trusted context, the tool's classification. */
export interface PolicyEvaluationContext<TInput = Record<string, unknown>> {
  readonly input: TInput;
  readonly context: ToolInvocationContext<TInput>;
  readonly classification?: ToolClassification;
}

// Method syntax keeps a rule written for a narrower input assignable to a policy list (bivariance).
/** A synchronous function rule, run in-process only. */
export type RuleFunction<TInput = Record<string, unknown>> = { rule(ctx: PolicyEvaluationContext<TInput>): boolean }['rule'];
/** A rule: a function (in-process) or a gatehouse expression (data: validated, signed, distributed). */
export type PolicyRule<TInput = Record<string, unknown>> = RuleFunction<TInput> | string;

/** HazelJS's `AgentGatekeeperPolicy`, as far as gatehouse can honour it (anything else is refused by name). */
export interface AgentGatekeeperPolicy<TInput = Record<string, unknown>> {
  readonly id: string;
  readonly version: string;
  /** Breaks ties between policies of the same outcome (HazelJS); never lets an allow outrank a deny. */
  readonly priority?: number;
  /** Annotations: carried nowhere, as in HazelJS. */
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly match?: {
    readonly agents?: readonly string[];
    /** `*`, `prefix*` or an exact name. */
    readonly tools?: readonly string[];
    readonly tenants?: readonly string[];
    readonly environments?: readonly string[];
  };
  readonly rules?: {
    readonly allowWhen?: PolicyRule<TInput>;
    readonly denyWhen?: PolicyRule<TInput>;
    readonly requireApprovalWhen?: PolicyRule<TInput>;
    /** Deny when a numeric `input.amount` exceeds it. */
    readonly maxTransactionAmount?: number;
    /** Deny when this input field is present and differs from the trusted tenant. */
    readonly enforceTenantField?: string;
    /** (agent-gatekeeper.yaml) deny when an input field equals a value. */
    readonly denyWhenFieldEquals?: readonly { readonly field: string; readonly value: string | number | boolean | null }[];
    /** (agent-gatekeeper.yaml) require approval when a numeric input field exceeds a threshold. */
    readonly requireApprovalWhenFieldGt?: readonly { readonly field: string; readonly threshold: number }[];
  };
}

export type DefaultDecision = 'allow' | 'deny';

/** The call a function rule runs for (set by the facade around each decision). */
export interface ActiveCall {
  readonly context: ToolInvocationContext<unknown>;
  readonly classification?: ToolClassification;
}

/** HazelJS policies on the gatekeeper engine: the bundle, the in-process predicates, and where each gatehouse policy came from. */
export interface CompiledHazelPolicies {
  readonly bundle: GatekeeperBundle;
  readonly predicates: Readonly<Record<string, GatekeeperPredicate>>;
  /** Gatehouse policy id → the HazelJS policy it came from (`id` undefined for the default allow). */
  readonly origins: ReadonlyMap<string, { readonly id?: string; readonly version: string; readonly priority: number; readonly kind: 'rules' | 'allow-failed' | 'default' }>;
  /** Whether any policy can require approval (then an approval provider is needed). */
  readonly mayRequireApproval: boolean;
}

export interface CompileOptions {
  readonly policySetId?: string;
  readonly defaultDecision?: DefaultDecision;
  /** `in-process`: function rules become registered predicates; `refuse`: GATEKEEPER.FUNCTION_RULE (a bundle to publish). */
  readonly functions: 'in-process' | 'refuse';
  /** The call a function rule runs for; a rule asked outside one faults (fail closed). */
  readonly active?: () => ActiveCall | undefined;
}

export const DEFAULT_ALLOW_POLICY = 'hazeljs.default-allow';
const POLICY_KEYS = ['id', 'version', 'priority', 'metadata', 'match', 'rules'];
const MATCH_KEYS = ['agents', 'tools', 'tenants', 'environments'];
const RULE_KEYS = ['allowWhen', 'denyWhen', 'requireApprovalWhen', 'maxTransactionAmount', 'enforceTenantField', 'denyWhenFieldEquals', 'requireApprovalWhenFieldGt'];
/** HazelJS keys gatehouse does not take, and what to use instead. */
const REFUSED: Readonly<Record<string, string>> = {
  rewrite: 'a declarative rewrite ({ when, set, remove }) in a gatehouse bundle with createGatekeeper({ validateInput }): a function rewrite cannot be re-validated or distributed',
  stripFields: "a declarative rewrite's remove list in a gatehouse bundle",
  redactFields: "the tool's redactFields (gatehouse records no arguments at all)",
  rateLimit: "a connector's manifest rateLimit (shared across processes by the idempotency ledger)",
  costBudget: "a connector's manifest rateLimit",
  invocationBudget: "a connector's manifest rateLimit",
  agentVersions: 'a policy per agent id, or a function rule reading context.agentVersion',
  roles: 'a function rule reading context.roles',
  trustLevels: 'a function rule reading context.trustLevel',
  delegatedUsers: 'a function rule reading context.delegatedUserId',
  classifications: 'a function rule reading classification',
  timeWindows: 'a function rule reading context.timestamp',
};

type Part = { readonly expr: string; readonly parsed: Expr } | { readonly fn: RuleFunction<unknown> };
type Rule = 'allowWhen' | 'denyWhen' | 'requireApprovalWhen';

function readKeys(where: string, value: unknown, known: readonly string[]): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw configError(`${where} must be an object`, { field: where });
  for (const key of Object.keys(value)) {
    if (key in REFUSED) throw configError(`${where}.${key} is not supported by gatehouse: use ${REFUSED[key]}`, { field: `${where}.${key}` });
  }
  try {
    return { ...readOptions(where, value, known) };
  } catch (cause) {
    throw configError(cause instanceof Error ? cause.message : `${where}: unknown key`, { field: where });
  }
}

/** A string literal of the expression language (only the escapes it knows). */
function quote(text: string, field: string): string {
  // Control characters other than \n and \t have no escape in the expression language.
  if ([...text].some((c) => (c < ' ' && c !== '\n' && c !== '\t') || c === '\u007f')) throw configError(`${field} holds a control character the expression language cannot write`, { field });
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t')}"`;
}

function numberLiteral(value: unknown, field: string): string {
  const text = String(value);
  if (typeof value !== 'number' || !Number.isFinite(value) || !/^-?\d+(\.\d+)?$/.test(text)) throw configError(`${field} must be a plain finite number`, { field });
  return text;
}

function literal(value: unknown, field: string): string {
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return quote(value, field);
  return numberLiteral(value, field);
}

const inputField = (name: unknown, field: string): string => {
  if (typeof name !== 'string' || name.length === 0) throw configError(`${field} must name an input field`, { field });
  return `input[${quote(name, field)}]`;
};

function expressionPart(source: string, policyId: string, field: string): Part {
  try {
    return { expr: source, parsed: parseExpression(source) };
  } catch (cause) {
    if (!(cause instanceof GatehouseError)) throw cause;
    throw new GatehouseError(cause.code, `${cause.message} (policy ${policyId}, ${field})`, { category: 'validation', details: { ...cause.details, policyId, field }, cause });
  }
}

function rulePart(rule: unknown, policyId: string, field: string, functions: CompileOptions['functions']): Part {
  if (typeof rule === 'string') return expressionPart(rule, policyId, field);
  if (typeof rule !== 'function') throw configError(`policy ${policyId}: ${field} must be a function or an expression string`, { policyId, field });
  if (functions === 'refuse') {
    throw new GatehouseError('GATEKEEPER.FUNCTION_RULE', `policy ${policyId}: ${field} is a function, which cannot be signed or distributed: write it as an expression, or keep it in the agent process (AgentGatekeeper)`, {
      category: 'validation',
      details: { policyId, field },
    });
  }
  // A promise is not a decision: HazelJS awaited async rules; gatehouse decides synchronously.
  if (Object.prototype.toString.call(rule) === '[object AsyncFunction]') throw configError(`policy ${policyId}: ${field} must be synchronous`, { policyId, field });
  return { fn: rule as RuleFunction<unknown> };
}

/** The parts of each rule of one policy: its own rule, then the declarative rules that add to it. */
function partsOf(id: string, rules: Record<string, unknown>, functions: CompileOptions['functions']): Record<Rule, Part[]> {
  const parts: Record<Rule, Part[]> = { allowWhen: [], denyWhen: [], requireApprovalWhen: [] };
  for (const rule of ['allowWhen', 'denyWhen', 'requireApprovalWhen'] as const) {
    if (rules[rule] !== undefined) parts[rule].push(rulePart(rules[rule], id, `rules.${rule}`, functions));
  }
  const add = (rule: Rule, source: string, field: string) => parts[rule].push(expressionPart(source, id, field));
  if (rules['maxTransactionAmount'] !== undefined) add('denyWhen', `input.amount > ${numberLiteral(rules['maxTransactionAmount'], 'rules.maxTransactionAmount')}`, 'rules.maxTransactionAmount');
  if (rules['enforceTenantField'] !== undefined) add('denyWhen', `${inputField(rules['enforceTenantField'], 'rules.enforceTenantField')} != identity.tenant`, 'rules.enforceTenantField');
  for (const [list, rule] of [['denyWhenFieldEquals', 'denyWhen'], ['requireApprovalWhenFieldGt', 'requireApprovalWhen']] as const) {
    const entries = rules[list];
    if (entries === undefined) continue;
    if (!Array.isArray(entries)) throw configError(`policy ${id}: rules.${list} must be a list`, { policyId: id, field: `rules.${list}` });
    entries.forEach((entry: unknown, i) => {
      const field = `rules.${list}.${i}`;
      const e = readKeys(field, entry, list === 'denyWhenFieldEquals' ? ['field', 'value'] : ['field', 'threshold']);
      const source = list === 'denyWhenFieldEquals' ? `${inputField(e['field'], field)} == ${literal(e['value'], field)}` : `${inputField(e['field'], field)} > ${numberLiteral(e['threshold'], field)}`;
      add(rule, source, field);
    });
  }
  return parts;
}

function patterns(list: unknown, field: string, policyId: string): string[] | undefined {
  if (list === undefined) return undefined;
  if (!Array.isArray(list) || !list.every((p) => typeof p === 'string' && p.length > 0)) throw configError(`policy ${policyId}: match.${field} must be a list of names`, { policyId, field: `match.${field}` });
  // HazelJS treats `*` as a wildcard in tools only; elsewhere it is a literal name, which the engine would read as "any".
  const ok = (p: string) => (field === 'tools' ? /^[^*\s]*\*?$/.test(p) : !p.includes('*'));
  if (!list.every(ok)) {
    const allowed = field === 'tools' ? "'*' or a trailing '*' (prefix*)" : 'exact names (no wildcard)';
    throw configError(`policy ${policyId}: match.${field} takes ${allowed}`, { policyId, field: `match.${field}` });
  }
  // HazelJS: an empty list constrains nothing.
  return list.length === 0 ? undefined : [...(list as string[])];
}

/**
 * Compiles HazelJS-shaped policies onto the gatekeeper engine. Throws HAZELJS.CONFIG naming the
 * field for what gatehouse does not take, GATEKEEPER.FUNCTION_RULE for a function when `functions`
 * is `refuse`, and the engine's expression errors (with the policy and field).
 */
export function compileHazelPolicies(policies: unknown, options: CompileOptions): CompiledHazelPolicies {
  if (!Array.isArray(policies)) throw configError('policies must be a list', { field: 'policies' });
  const out: GatekeeperPolicy[] = [];
  const predicates: Record<string, GatekeeperPredicate> = {};
  const origins = new Map<string, { id?: string; version: string; priority: number; kind: 'rules' | 'allow-failed' | 'default' }>();
  let mayRequireApproval = false;
  const condition = (name: string, parts: readonly Part[]): GatekeeperCondition => {
    if (parts.every((p) => 'expr' in p)) return parts.map((p) => `(${(p as { expr: string }).expr})`).join(' or ');
    predicates[name] = (scope) => anyHolds(parts, scope, options.active) as boolean;
    return { predicate: name };
  };
  policies.forEach((raw: unknown, index) => {
    const p = readKeys(`policies.${index}`, raw, POLICY_KEYS);
    const id = p['id'];
    if (typeof id !== 'string' || id.length === 0) throw configError(`policies.${index}.id is required`, { field: `policies.${index}.id` });
    if (typeof p['version'] !== 'string' || p['version'].length === 0) throw configError(`policy ${id}: version is required`, { policyId: id, field: 'version' });
    const priority = p['priority'] ?? 0;
    if (typeof priority !== 'number' || !Number.isFinite(priority)) throw configError(`policy ${id}: priority must be a number`, { policyId: id, field: 'priority' });
    const m = p['match'] === undefined ? {} : readKeys(`policy ${id}: match`, p['match'], MATCH_KEYS);
    const match = Object.fromEntries(MATCH_KEYS.flatMap((f) => {
      const list = patterns(m[f], f, id);
      return list === undefined ? [] : [[f, list]];
    }));
    if (p['rules'] === undefined) return; // HazelJS: a policy without rules decides nothing.
    const parts = partsOf(id, readKeys(`policy ${id}: rules`, p['rules'], RULE_KEYS), options.functions);
    const base = { version: p['version'], priority: 0, match };
    const rules: Record<string, GatekeeperCondition> = {};
    for (const rule of ['denyWhen', 'requireApprovalWhen', 'allowWhen'] as const) {
      if (parts[rule].length > 0) rules[rule] = condition(`hazeljs:${id}:${rule}`, parts[rule]);
    }
    if (Object.keys(rules).length === 0) return;
    if (rules['requireApprovalWhen'] !== undefined) mayRequireApproval = true;
    out.push({ id, ...base, rules });
    origins.set(id, { id, version: p['version'], priority, kind: 'rules' });
    if (parts.allowWhen.length > 0) {
      const failedId = `${id}:allow-failed`;
      out.push({ id: failedId, ...base, rules: { denyWhen: allowFailed(failedId, parts, predicates, options.active) } });
      origins.set(failedId, { id, version: p['version'], priority, kind: 'allow-failed' });
    }
  });
  if (options.defaultDecision === 'allow') {
    out.push({ id: DEFAULT_ALLOW_POLICY, version: '1', priority: 0, match: {}, rules: { allowWhen: 'true' } });
    origins.set(DEFAULT_ALLOW_POLICY, { version: '1', priority: Number.NEGATIVE_INFINITY, kind: 'default' });
  }
  return { bundle: { policySetId: options.policySetId ?? 'hazeljs', policies: out }, predicates, origins, mayRequireApproval };
}

/** `allowWhen` did not hold, and neither did `requireApprovalWhen`: HazelJS's "allow predicate failed" deny. */
function allowFailed(name: string, parts: Record<Rule, Part[]>, predicates: Record<string, GatekeeperPredicate>, active: CompileOptions['active']): GatekeeperCondition {
  const all = [...parts.requireApprovalWhen, ...parts.allowWhen];
  if (all.every((p) => 'expr' in p)) {
    const join = (list: readonly Part[]) => list.map((p) => `(${(p as { expr: string }).expr})`).join(' or ');
    return parts.requireApprovalWhen.length === 0 ? `not (${join(parts.allowWhen)})` : `not (${join(parts.requireApprovalWhen)}) and not (${join(parts.allowWhen)})`;
  }
  const key = `hazeljs:${name}`;
  predicates[key] = (scope) => {
    for (const list of [parts.requireApprovalWhen, parts.allowWhen]) {
      const held = anyHolds(list, scope, active);
      // A rule that answered something other than a boolean is handed on: the engine faults on it.
      if (held !== false) return held === true ? false : (held as boolean);
    }
    return true;
  };
  return { predicate: key };
}

/** `true` when a part holds, `false` when none does, or the first non-boolean a function answered. */
function anyHolds(parts: readonly Part[], scope: ExpressionScope, active: CompileOptions['active']): unknown {
  for (const part of parts) {
    const result = 'expr' in part ? evaluateExpression(part.parsed, scope) === true : runRule(part.fn, scope, active);
    if (result !== false) return result;
  }
  return false;
}

function runRule(fn: RuleFunction<unknown>, scope: ExpressionScope, active: CompileOptions['active']): unknown {
  const call = active?.();
  // Outside a facade call (the engine used directly, a guardrail) there is no trusted context to give the rule.
  if (call === undefined) throw new Error('no active call');
  const context = Object.freeze({ ...call.context, input: scope.input });
  const result: unknown = fn(Object.freeze({ input: scope.input, context, ...(call.classification === undefined ? {} : { classification: call.classification }) }));
  // A returned promise is not a decision (it faults); its rejection must not go unhandled.
  if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') (result as Promise<unknown>).then(undefined, () => undefined);
  return result;
}
