// Throughput of the bounded content policies over a deterministic mixed corpus, next to a
// single `indexOf` scan of the same texts measured in the same run, so the printed ratio is
// comparable across machines even when the absolute figures are not.
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { denyPatterns, piiSecrets } from '../policy-engine/policies/index.js';
import type { PolicyContext, PolicyDecision, PolicyEvaluator } from '../policy-engine/types.js';
import { buildCorpus, DENIED_PHRASES, MIXED_CORPUS_SEED, segment } from './mixed-corpus.js';

const CORPUS_CHARS = 8_000_000;
const SEGMENT_CHARS = 4096;
const WARM_UP_PASSES = 1;
const TIMED_PASSES = 5;
// One indexOf pass over 8 MB takes about a millisecond: many passes keep timer resolution out of it.
const BASELINE_PASSES = 100;

/** Runs piiSecrets() + denyPatterns() over ~8 MB of mixed text and prints MB/s against an indexOf baseline. */
export async function benchContentPolicies(): Promise<void> {
  const texts = segment(buildCorpus(CORPUS_CHARS, MIXED_CORPUS_SEED), SEGMENT_CHARS);
  const bytes = texts.reduce((sum, text) => sum + Buffer.byteLength(text, 'utf8'), 0);
  const policies = [piiSecrets(), denyPatterns(DENIED_PHRASES)];

  let detections = new Map<string, number>();
  for (let i = 0; i < WARM_UP_PASSES; i++) detections = await runPolicies(policies, texts);
  const policyMs = await timed(TIMED_PASSES, () => runPolicies(policies, texts));

  // Absent from the corpus, and starting with a common letter, so the scan keeps stopping to compare.
  const needle = 'gatehouse-bench-needle';
  let sink = 0;
  for (let i = 0; i < WARM_UP_PASSES; i++) sink += indexOfScan(texts, needle);
  const baselineMs = await timed(BASELINE_PASSES, async () => {
    sink += indexOfScan(texts, needle);
  });

  const megabytes = bytes / 1e6;
  const policyRate = (megabytes * TIMED_PASSES) / (policyMs / 1000);
  const baselineRate = (megabytes * BASELINE_PASSES) / (baselineMs / 1000);
  const total = [...detections.values()].reduce((sum, n) => sum + n, 0);
  recordBenchFigure({
    benchmark: 'guard: content policies',
    source: 'libs/guard/src/bench/content-policies.bench.ts',
    case: `${megabytes.toFixed(1)} MB mixed corpus, ${texts.length.toLocaleString('en')} texts`,
    metric: 'piiSecrets + denyPatterns throughput',
    unit: 'MB/s',
    value: policyRate,
    baseline: 'one indexOf scan of the same texts',
    baselineValue: baselineRate,
    note: `the baseline is the floor of reading the text once, not a competing detector (${total} detections per pass)`,
  });
  console.log(
    `content-policies: piiSecrets+denyPatterns ${policyRate.toFixed(1)} MB/s ` +
      `(baseline single indexOf scan ${baselineRate.toFixed(0)} MB/s, ` +
      `ratio ${(policyRate / baselineRate).toFixed(3)}), ` +
      `${megabytes.toFixed(1)} MB corpus, ${total} detections`,
  );
  const byId = [...detections.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, n]) => `${id}=${n}`)
    .join(' ');
  // The sink is printed so the baseline loop cannot be optimised away.
  console.log(
    `content-policies: detections by id ${byId} (${texts.length} texts of ${SEGMENT_CHARS} chars; sink ${sink})`,
  );
}

async function timed(passes: number, pass: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < passes; i++) await pass();
  return performance.now() - started;
}

async function runPolicies(
  policies: readonly PolicyEvaluator[],
  texts: readonly string[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const signal = new AbortController().signal;
  for (const text of texts) {
    const context: PolicyContext = {
      phase: 'output',
      channel: 'answer',
      offset: 0,
      segmentLength: text.length,
      previousSegmentLength: 0,
      final: true,
      signal,
    };
    for (const policy of policies) {
      const result = policy.evaluate(text, context);
      // Awaiting only real promises keeps the synchronous policies' cost free of microtask hops.
      const decision: PolicyDecision = result instanceof Promise ? await result : result;
      if (!decision.allowed) {
        for (const id of decision.detections ?? []) counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
  }
  return counts;
}

function indexOfScan(texts: readonly string[], needle: string): number {
  let found = 0;
  for (const text of texts) if (text.indexOf(needle) !== -1) found++;
  return found;
}
