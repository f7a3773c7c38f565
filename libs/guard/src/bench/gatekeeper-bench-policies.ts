// The policy mixes the gatekeeper bench measures, each written twice: as a gatekeeper bundle and
// as a Cedar policy set making the same decisions. Two mixes so that no figure rests on one input
// shape: `by tool` (one policy per tool family, what the index buckets by tool prefix) and `by
// agent and tenant` (policies that set no tool, or a wildcard tool, and are told apart by agent
// prefix and tenant).
//
// Cedar has no priorities: a forbid always wins. Both mixes are therefore built so that priority
// and forbid-overrides agree: the top level holds deny-only guards, and below it no two policies
// match one call (their agent or tool prefixes are disjoint), so the levels 0-9 each policy carries
// never have to break a tie. The bench checks every call against Cedar, so a mix that broke this
// would stop the run instead of printing a ratio.
import { type JsonValue } from '@gatehouse/contracts';
import { type GatekeeperContext, type GatekeeperEffect } from '../gatekeeper/index.js';
import { type Random, seeded } from './seeded-random.js';

/** One Cedar policy, with the gatekeeper policy and effect it stands for. */
export interface CedarRule {
  readonly text: string;
  readonly effect: GatekeeperEffect;
  readonly policyId: string;
}

/** A mix at one size: the bundle, the same policies in Cedar (keyed by Cedar policy id) and the calls. */
export interface BenchPolicies {
  readonly bundle: Record<string, JsonValue>;
  readonly cedar: Readonly<Record<string, CedarRule>>;
  /** The same decisions hand-written, where the mix has them. */
  readonly hand?: (ctx: GatekeeperContext) => GatekeeperEffect;
}

export interface BenchMix {
  /** Prefix of the printed line and the recorded case ('' for the original mix, whose rows keep their names). */
  readonly label: string;
  readonly sizes: readonly number[];
  policies(n: number): BenchPolicies;
  calls(n: number, count: number, seed: number): GatekeeperContext[];
}

const PRIORITY_LEVELS = 10;
const MATCH_KEYS = { agents: 'agent', tools: 'tool', tenants: 'tenant' } as const;
type MatchBlock = Partial<Record<keyof typeof MATCH_KEYS, readonly string[]>>;

const quoted = (value: string): string => JSON.stringify(value);

/** A gatekeeper match pattern in Cedar: `*` any present value, `p*` a longer value starting with p, else equal. */
function cedarPattern(key: string, pattern: string): string {
  if (pattern === '*') return 'true';
  if (!pattern.endsWith('*')) return `context.${key} == ${quoted(pattern)}`;
  // Cedar's `like "p*"` also takes "p" itself; the gatekeeper's `p*` wants something after p.
  return `(context.${key} like ${quoted(pattern)} && context.${key} != ${quoted(pattern.slice(0, -1))})`;
}

/** A match block in Cedar: every field the policy sets, on a context that leaves out absent identity fields. */
export function cedarMatch(match: MatchBlock): string {
  const parts = Object.entries(match).map(([field, patterns]) => {
    const key = MATCH_KEYS[field as keyof typeof MATCH_KEYS];
    return `context has ${key} && (${patterns.map((p) => cedarPattern(key, p)).join(' || ')})`;
  });
  return parts.length === 0 ? 'true' : parts.join(' && ');
}

/** Adds one gatekeeper policy and its Cedar rules: deny and approval as forbids, allow as a permit. */
function addPolicy(
  out: { declarative: JsonValue[]; cedar: Record<string, CedarRule> },
  policy: { id: string; priority: number; match: MatchBlock; rules: Partial<Record<'denyWhen' | 'requireApprovalWhen' | 'allowWhen', readonly [string, string]>> },
): void {
  const rules: Record<string, string> = {};
  const when = cedarMatch(policy.match);
  const effects = { denyWhen: ['deny', 'forbid'], requireApprovalWhen: ['require-approval', 'forbid'], allowWhen: ['allow', 'permit'] } as const;
  for (const [ruleId, [condition, cedarCondition]] of Object.entries(policy.rules)) {
    const [effect, cedarEffect] = effects[ruleId as keyof typeof effects];
    rules[ruleId] = condition;
    out.cedar[`${policy.id}.${effect}`] = { effect, policyId: policy.id, text: `${cedarEffect} (principal, action, resource) when { ${when} && ${cedarCondition} };` };
  }
  out.declarative.push({ id: policy.id, version: '1', priority: policy.priority, match: policy.match as JsonValue, rules });
}

interface HandPolicy {
  readonly id: string;
  readonly priority: number;
  readonly toolPrefix: string;
  readonly denyAbove: number;
  readonly approveAbove: number;
}

/** The by-tool decisions, hand-written: what a team would code without a policy engine. */
function handDecide(hand: readonly HandPolicy[], ctx: GatekeeperContext): GatekeeperEffect {
  const input = ctx.input as { amount?: unknown; currency?: unknown; debug?: unknown };
  if (input.debug === true) return 'deny';
  const tool = ctx.call.tool;
  const { agent, tenant, actor } = ctx.identity;
  if (agent === undefined || !agent.startsWith('agent-') || agent.length <= 6 || (tenant !== 't1' && tenant !== 't2')) return 'deny';
  let level = -1;
  let best: GatekeeperEffect | undefined;
  const amount = typeof input.amount === 'number' ? input.amount : undefined;
  const allow = (actor?.role === 'support' || actor?.role === 'admin') && input.currency === 'EUR';
  for (const p of hand) {
    if (!tool.startsWith(p.toolPrefix) || tool.length <= p.toolPrefix.length || p.priority < level) continue;
    const effect = amount !== undefined && amount > p.denyAbove ? 'deny' : amount !== undefined && amount > p.approveAbove ? 'require-approval' : allow ? 'allow' : undefined;
    if (effect === undefined) continue;
    const rank = effect === 'deny' ? 2 : effect === 'require-approval' ? 1 : 0;
    const bestRank = best === 'deny' ? 2 : best === 'require-approval' ? 1 : best === 'allow' ? 0 : -1;
    if (p.priority > level) {
      level = p.priority;
      best = effect;
    } else if (rank > bestRank) best = effect;
  }
  return best ?? 'deny';
}

/** Per tool family a policy with deny/approval thresholds and a role+currency allow; one catch-all debug guard on top. */
function byToolPolicies(n: number): BenchPolicies {
  const out = { declarative: [] as JsonValue[], cedar: {} as Record<string, CedarRule> };
  const hand: HandPolicy[] = [];
  for (let i = 0; i < n - 1; i++) {
    const p: HandPolicy = { id: `p${String(i).padStart(4, '0')}`, priority: i % PRIORITY_LEVELS, toolPrefix: `svc${i}.`, denyAbove: 1_000 + i, approveAbove: 500 + i };
    hand.push(p);
    addPolicy(out, {
      id: p.id,
      priority: p.priority,
      match: { agents: ['agent-*'], tools: [`svc${i}.*`], tenants: ['t1', 't2'] },
      rules: {
        denyWhen: [`input.amount > ${p.denyAbove}`, `context.amount > ${p.denyAbove}`],
        requireApprovalWhen: [`input.amount > ${p.approveAbove}`, `context.amount > ${p.approveAbove}`],
        allowWhen: ['identity.actor.role in ["support", "admin"] and input.currency == "EUR"', '["support", "admin"].contains(context.role) && context.currency == "EUR"'],
      },
    });
  }
  addPolicy(out, { id: 'zz-debug', priority: PRIORITY_LEVELS, match: { tools: ['*'] }, rules: { denyWhen: ['input.debug == true', 'context.debug == true'] } });
  return { bundle: { policySetId: 'bench', policies: out.declarative }, cedar: out.cedar, hand: (ctx) => handDecide(hand, ctx) };
}

function byToolCalls(n: number, count: number, seed: number): GatekeeperContext[] {
  const next = seeded(seed + n);
  return Array.from({ length: count }, () => ({
    identity: { agent: next() < 0.95 ? 'agent-7' : 'rogue', tenant: next() < 0.9 ? 't1' : 't3', actor: { id: 'u1', role: next() < 0.8 ? 'support' : 'viewer' } },
    call: { tool: `svc${Math.floor(next() * n * 1.1)}.op` },
    input: { amount: Math.floor(next() * 2_000), currency: next() < 0.9 ? 'EUR' : 'USD', debug: next() < 0.01 },
  }));
}

/** The original mix: what the index buckets by tool prefix. */
export const BY_TOOL: BenchMix = { label: '', sizes: [10, 100, 1_000], policies: byToolPolicies, calls: byToolCalls };

const TENANT_GROUPS = 20;
const TOOLS = ['db.read', 'db.write', 'mail.send', 'admin.reset', 'export.csv', 'files.get'] as const;

/**
 * Per team (an agent prefix) a policy over its tenant group and the shared tenant, one in five
 * limited to `db.*`, the rest to any tool; three deny-only guards on top with wildcard or prefix
 * tools and no agent, which no agent or tenant bucket can leave out.
 */
function byAgentPolicies(n: number): BenchPolicies {
  const out = { declarative: [] as JsonValue[], cedar: {} as Record<string, CedarRule> };
  for (let i = 0; i < n - 3; i++) {
    addPolicy(out, {
      id: `team${String(i).padStart(4, '0')}`,
      priority: i % PRIORITY_LEVELS,
      match: { agents: [`team${i}-*`], tenants: [`t${i % TENANT_GROUPS}`, 'shared'], ...(i % 5 === 0 ? { tools: ['db.*'] } : {}) },
      rules: {
        denyWhen: [`input.amount > ${1_000 + i}`, `context.amount > ${1_000 + i}`],
        requireApprovalWhen: ['input.amount > 500', 'context.amount > 500'],
        allowWhen: ['identity.actor.role in ["support", "admin"]', '["support", "admin"].contains(context.role)'],
      },
    });
  }
  const guard = (id: string, match: MatchBlock, deny: readonly [string, string]): void =>
    addPolicy(out, { id, priority: PRIORITY_LEVELS, match, rules: { denyWhen: deny } });
  guard('guard-admin', { tools: ['admin.*'] }, ['identity.actor.role != "admin"', 'context.role != "admin"']);
  guard('guard-debug', { tools: ['*'] }, ['input.debug == true', 'context.debug == true']);
  guard('guard-export', { tools: ['export.*'], tenants: ['shared'] }, ['true', 'true']);
  return { bundle: { policySetId: 'bench-by-agent', policies: out.declarative }, cedar: out.cedar };
}

function byAgentCall(next: Random, n: number): GatekeeperContext {
  const team = Math.floor(next() * n * 1.1);
  const roll = next();
  const tenant = roll < 0.7 ? `t${team % TENANT_GROUPS}` : roll < 0.85 ? 'shared' : 'elsewhere';
  const role = next() < 0.5 ? 'support' : next() < 0.5 ? 'admin' : 'viewer';
  return {
    identity: { agent: `team${team}-bot`, tenant, actor: { id: 'u1', role } },
    call: { tool: TOOLS[Math.floor(next() * TOOLS.length)]! },
    input: { amount: Math.floor(next() * 2_000), currency: 'EUR', debug: next() < 0.01 },
  };
}

/** The second mix: policies told apart by agent and tenant, tools mostly unset. */
export const BY_AGENT_AND_TENANT: BenchMix = {
  label: 'by agent and tenant: ',
  sizes: [100, 1_000],
  policies: byAgentPolicies,
  calls: (n, count, seed) => {
    const next = seeded(seed + n);
    return Array.from({ length: count }, () => byAgentCall(next, n));
  },
};
