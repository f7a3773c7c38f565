// Decision latency of the declarative gatekeeper for 10, 100 and 1,000 policies, next to a
// hand-written TypeScript function that makes the same decisions over the same policies and next
// to Cedar (the peer a user would pick instead) over the same policies, all measured in the same
// run so the printed ratios are comparable across machines. A second policy mix (told apart by
// agent and tenant, not by tool) keeps the figures from resting on one input shape; each mix
// also records how latency grows from 100 to 1,000 policies (issue 22: the index keeps it flat).
import { recordBenchFigure, peerPackage } from '../../../../tools/bench-results.mjs';
import { createGatekeeper, type Gatekeeper, type GatekeeperContext, type GatekeeperEffect } from '../gatekeeper/index.js';
import { cedarPeer, type CedarDecision } from './cedar-peer.js';
import { BY_AGENT_AND_TENANT, BY_TOOL, type BenchMix } from './gatekeeper-bench-policies.js';

const WARM_UP_CALLS = 2_000;
const TIMED_CALLS = 20_000;
// Cedar takes milliseconds a call at 1,000 policies: it is timed (and checked) on the first
// 1,000 of the same calls, so the run stays within a minute.
const CEDAR_WARM_UP_CALLS = 100;
const CEDAR_CALLS = 1_000;
const SEED = 0x6a7e_2026;
const BENCHMARK = 'guard: gatekeeper';
const SOURCE = 'libs/guard/src/bench/gatekeeper.bench.ts';
const QUANTILES = ['p50', 'p99'] as const;

interface Latency {
  readonly p50: number;
  readonly p99: number;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** Times `decide` on each context (after `warmUp` untimed calls) and keeps what it answered. */
function measure<T>(decide: (ctx: GatekeeperContext) => T, contexts: readonly GatekeeperContext[], warmUp = WARM_UP_CALLS): Latency & { results: T[] } {
  for (let i = 0; i < warmUp; i++) decide(contexts[i % contexts.length]!);
  const samples = new Float64Array(contexts.length);
  const results: T[] = new Array<T>(contexts.length);
  for (let i = 0; i < contexts.length; i++) {
    const started = process.hrtime.bigint();
    results[i] = decide(contexts[i]!);
    samples[i] = Number(process.hrtime.bigint() - started) / 1_000;
  }
  samples.sort();
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99), results };
}

function effectCounts(effects: readonly GatekeeperEffect[]): string {
  const counts = new Map<GatekeeperEffect, number>();
  for (const effect of effects) counts.set(effect, (counts.get(effect) ?? 0) + 1);
  return [...counts.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([e, c]) => `${e}=${c}`).join(' ');
}

/**
 * Calls on which Cedar decides otherwise than the gatekeeper: another effect, or a gatekeeper
 * policy that is not among Cedar's determining ones (a default deny must have none in either).
 */
function cedarDisagreements(gatekeeper: Gatekeeper, answers: readonly CedarDecision[], contexts: readonly GatekeeperContext[]): number {
  let disagreements = 0;
  for (const [i, theirs] of answers.entries()) {
    const ours = gatekeeper.evaluate(contexts[i]!);
    const samePolicy = ours.policyId === undefined ? theirs.policyIds.length === 0 : theirs.policyIds.includes(ours.policyId);
    if (ours.effect !== theirs.effect || !samePolicy) disagreements++;
  }
  return disagreements;
}

const latency = (l: Latency): string => `p50 ${l.p50.toFixed(2)} µs p99 ${l.p99.toFixed(2)} µs`;
const ratio = (a: Latency, b: Latency): string => `ratio p50 ${(a.p50 / b.p50).toPrecision(2)}x p99 ${(a.p99 / b.p99).toPrecision(2)}x`;

function recordCedar(mix: BenchMix, n: number, declarative: Latency, cedar: Latency): void {
  for (const quantile of QUANTILES) {
    recordBenchFigure({
      benchmark: BENCHMARK,
      source: SOURCE,
      case: `${mix.label}${n.toLocaleString('en')} policies`,
      metric: `decision latency ${quantile}`,
      unit: 'µs',
      value: declarative[quantile],
      baseline: 'Cedar (wasm, in process), the same policies, checked to agree',
      baselineValue: cedar[quantile],
      peer: peerPackage('@cedar-policy/cedar-wasm'),
      target: { on: 'ratio', atMost: 0.02, source: 'issue 22: ≥ 50x faster than Cedar at every size' },
    });
  }
}

function recordHand(n: number, declarative: Latency, hand: Latency): void {
  for (const quantile of QUANTILES) {
    recordBenchFigure({
      benchmark: BENCHMARK,
      source: SOURCE,
      case: `${n.toLocaleString('en')} policies`,
      metric: `decision latency ${quantile}`,
      unit: 'µs',
      value: declarative[quantile],
      baseline: 'a hand-written function making the same decisions (checked to agree)',
      baselineValue: hand[quantile],
    });
  }
}

/** One mix at one size: prints its line, records its figures, returns the gatekeeper's latency. */
function benchSize(mix: BenchMix, n: number): Latency {
  const { bundle, cedar: cedarRules, hand } = mix.policies(n);
  const gatekeeper = createGatekeeper({ bundle, revision: 1 });
  const cedar = cedarPeer(cedarRules);
  const contexts = mix.calls(n, TIMED_CALLS, SEED);
  const declarative = measure((ctx) => gatekeeper.evaluate(ctx).effect, contexts);
  const cedarContexts = contexts.slice(0, CEDAR_CALLS);
  const peer = measure((ctx) => cedar.decide(ctx), cedarContexts, CEDAR_WARM_UP_CALLS);
  const cedarDiffer = cedarDisagreements(gatekeeper, peer.results, cedarContexts);
  // A peer that decides differently is not doing the same work: no ratio against it.
  if (cedarDiffer > 0) throw new Error(`gatekeeper bench: ${cedarDiffer} decisions of ${mix.label}${n} policies differ from Cedar`);
  let line = `gatekeeper: ${mix.label}${String(n).padStart(5)} policies  evaluate ${latency(declarative)} | `;
  if (hand !== undefined) {
    let handDiffer = 0;
    for (const ctx of contexts) if (gatekeeper.evaluate(ctx).effect !== hand(ctx)) handDiffer++;
    // A baseline that decides differently is not doing the same work: no ratio against it.
    if (handDiffer > 0) throw new Error(`gatekeeper bench: ${handDiffer} decisions differ from the hand-written baseline`);
    const baseline = measure(hand, contexts);
    line += `hand-written baseline ${latency(baseline)} | ${ratio(declarative, baseline)} | `;
    recordHand(n, declarative, baseline);
  }
  line +=
    `Cedar ${latency(peer)} | ${ratio(declarative, peer)} ` +
    `(${contexts.length} calls: ${effectCounts(declarative.results)}; Cedar on the first ${cedarContexts.length}: ${effectCounts(peer.results.map((r) => r.effect))}; disagreements 0)`;
  console.log(line);
  recordCedar(mix, n, declarative, peer);
  return declarative;
}

function recordGrowth(mix: BenchMix, at100: Latency, at1000: Latency): void {
  console.log(`gatekeeper: ${mix.label}1,000 vs 100 policies  p50 ${at1000.p50.toFixed(2)} / ${at100.p50.toFixed(2)} µs = ${(at1000.p50 / at100.p50).toFixed(2)}x (target ≤ 2x)`);
  recordBenchFigure({
    benchmark: BENCHMARK,
    source: SOURCE,
    case: `${mix.label}1,000 vs 100 policies`,
    metric: 'decision latency p50',
    unit: 'µs',
    value: at1000.p50,
    baseline: 'the gatekeeper at 100 policies, same run',
    baselineValue: at100.p50,
    target: { on: 'ratio', atMost: 2, source: 'issue 22: index policies by tool, agent and tenant' },
  });
}

/** Prints p50/p99 decision latency (µs) of `evaluate` per mix and size, next to the hand-written baseline and Cedar. */
export async function benchGatekeeper(): Promise<void> {
  for (const mix of [BY_TOOL, BY_AGENT_AND_TENANT]) {
    const bySize = new Map<number, Latency>();
    for (const n of mix.sizes) bySize.set(n, benchSize(mix, n));
    recordGrowth(mix, bySize.get(100)!, bySize.get(1_000)!);
  }
  await Promise.resolve();
}
