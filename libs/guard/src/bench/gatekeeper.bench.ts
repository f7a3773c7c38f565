// Decision latency of the declarative gatekeeper for 10, 100 and 1,000 policies, next to a
// hand-written TypeScript function that makes the same decisions over the same policies,
// measured in the same run so the printed ratio is comparable across machines.
import { type JsonValue } from '@gatehouse/contracts';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { createGatekeeper, type GatekeeperContext, type GatekeeperEffect } from '../gatekeeper/index.js';

const SIZES = [10, 100, 1_000] as const;
const WARM_UP_CALLS = 2_000;
const TIMED_CALLS = 20_000;
const SEED = 0x6a7e_2026;
const PRIORITY_LEVELS = 10;

interface HandPolicy {
  readonly id: string;
  readonly priority: number;
  readonly toolPrefix: string;
  readonly denyAbove: number;
  readonly approveAbove: number;
}

/** The bundle: per tool family, a policy with deny/approval thresholds and a role+currency allow; one catch-all guard. */
function policies(n: number): { bundle: Record<string, JsonValue>; hand: HandPolicy[] } {
  const hand: HandPolicy[] = [];
  const declarative: JsonValue[] = [];
  for (let i = 0; i < n - 1; i++) {
    const p: HandPolicy = { id: `p${String(i).padStart(4, '0')}`, priority: i % PRIORITY_LEVELS, toolPrefix: `svc${i}.`, denyAbove: 1_000 + i, approveAbove: 500 + i };
    hand.push(p);
    declarative.push({
      id: p.id,
      version: '1',
      priority: p.priority,
      match: { agents: ['agent-*'], tools: [`svc${i}.*`], tenants: ['t1', 't2'] },
      rules: {
        denyWhen: `input.amount > ${p.denyAbove}`,
        requireApprovalWhen: `input.amount > ${p.approveAbove}`,
        allowWhen: 'identity.actor.role in ["support", "admin"] and input.currency == "EUR"',
      },
    });
  }
  declarative.push({ id: 'zz-debug', version: '1', priority: PRIORITY_LEVELS, match: { tools: ['*'] }, rules: { denyWhen: 'input.debug == true' } });
  return { bundle: { policySetId: 'bench', policies: declarative }, hand };
}

/** The same decisions, hand-written: what a team would code without a policy engine. */
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

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function calls(n: number, count: number): GatekeeperContext[] {
  const next = random(SEED + n);
  return Array.from({ length: count }, () => ({
    identity: { agent: next() < 0.95 ? 'agent-7' : 'rogue', tenant: next() < 0.9 ? 't1' : 't3', actor: { id: 'u1', role: next() < 0.8 ? 'support' : 'viewer' } },
    call: { tool: `svc${Math.floor(next() * n * 1.1)}.op` },
    input: { amount: Math.floor(next() * 2_000), currency: next() < 0.9 ? 'EUR' : 'USD', debug: next() < 0.01 },
  }));
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function measure(decide: (ctx: GatekeeperContext) => GatekeeperEffect, contexts: readonly GatekeeperContext[]): { p50: number; p99: number; counts: Map<GatekeeperEffect, number> } {
  for (let i = 0; i < WARM_UP_CALLS; i++) decide(contexts[i % contexts.length]!);
  const samples = new Float64Array(contexts.length);
  const counts = new Map<GatekeeperEffect, number>();
  for (let i = 0; i < contexts.length; i++) {
    const started = process.hrtime.bigint();
    const effect = decide(contexts[i]!);
    samples[i] = Number(process.hrtime.bigint() - started) / 1_000;
    counts.set(effect, (counts.get(effect) ?? 0) + 1);
  }
  samples.sort();
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99), counts };
}

/** Prints p50/p99 decision latency (µs) of `evaluate` for 10/100/1,000 policies next to the hand-written baseline. */
export async function benchGatekeeper(): Promise<void> {
  for (const n of SIZES) {
    const { bundle, hand } = policies(n);
    const gatekeeper = createGatekeeper({ bundle, revision: 1 });
    const contexts = calls(n, TIMED_CALLS);
    let disagreements = 0;
    for (const ctx of contexts) if (gatekeeper.evaluate(ctx).effect !== handDecide(hand, ctx)) disagreements++;
    const declarative = measure((ctx) => gatekeeper.evaluate(ctx).effect, contexts);
    const baseline = measure((ctx) => handDecide(hand, ctx), contexts);
    const mix = [...declarative.counts.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([e, c]) => `${e}=${c}`).join(' ');
    console.log(
      `gatekeeper: ${String(n).padStart(5)} policies  evaluate p50 ${declarative.p50.toFixed(2)} µs p99 ${declarative.p99.toFixed(2)} µs | ` +
        `hand-written baseline p50 ${baseline.p50.toFixed(2)} µs p99 ${baseline.p99.toFixed(2)} µs | ` +
        `ratio p50 ${(declarative.p50 / baseline.p50).toFixed(1)}x p99 ${(declarative.p99 / baseline.p99).toFixed(1)}x ` +
        `(${contexts.length} calls: ${mix}; disagreements ${disagreements})`,
    );
    // A baseline that decides differently is not doing the same work: no ratio against it.
    if (disagreements > 0) throw new Error(`gatekeeper bench: ${disagreements} decisions differ from the hand-written baseline`);
    for (const quantile of ['p50', 'p99'] as const) {
      recordBenchFigure({
        benchmark: 'guard: gatekeeper',
        source: 'libs/guard/src/bench/gatekeeper.bench.ts',
        case: `${n.toLocaleString('en')} policies`,
        metric: `decision latency ${quantile}`,
        unit: 'µs',
        value: declarative[quantile],
        baseline: 'a hand-written function making the same decisions (checked to agree)',
        baselineValue: baseline[quantile],
      });
    }
  }
  await Promise.resolve();
}
