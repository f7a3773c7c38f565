// Quality, not speed: for every piiSecrets detector, how many lines of the clean corpus (real
// code and configuration, no PII, no secrets) it lets through, and how many labelled positives
// of the dirty set it finds. The same-run baseline of each figure is its total, so the ratio
// is the pass rate (clean) or the recall (dirty), comparable across runs and machines.
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { PII_SECRETS_DETECTOR_IDS, piiSecrets } from '../policy-engine/policies/pii-secrets.js';
import type { PolicyContext, PolicyEvaluator } from '../policy-engine/types.js';
import { readCleanCorpus, type CorpusFile } from './corpus/clean-corpus.js';
import { dirtySamples } from './corpus/dirty-set.js';

const BENCHMARK = 'guard: detector quality';
const SOURCE = 'libs/guard/src/bench/detector-quality.bench.ts';
const CONTEXT: PolicyContext = {
  phase: 'output',
  channel: 'answer',
  offset: 0,
  segmentLength: 0,
  previousSegmentLength: 0,
  final: true,
  signal: new AbortController().signal,
};

/** Prints and records each detector's clean-corpus pass rate and dirty-set recall. */
export async function benchDetectorQuality(): Promise<void> {
  const files = readCleanCorpus();
  const samples = dirtySamples();
  const lines = files.flatMap((file) => file.text.split('\n').filter((line) => line.trim() !== ''));
  for (const id of PII_SECRETS_DETECTOR_IDS) {
    const policy = piiSecrets({ detectors: [id] });
    const flaggedLines = await countFlagged(policy, lines);
    const flaggedFiles = await countFlaggedFiles(policy, files);
    const positives = samples.filter((sample) => sample.detector === id).map((sample) => sample.text);
    const detected = await countFlagged(policy, positives);
    recordBenchFigure({
      benchmark: BENCHMARK,
      source: SOURCE,
      case: `${id} on the clean corpus (${files.length} files, ${lines.length.toLocaleString('en')} lines)`,
      metric: `${id}: clean lines not flagged`,
      unit: 'lines',
      value: lines.length - flaggedLines,
      baseline: 'every line of the clean corpus',
      baselineValue: lines.length,
      note: `${flaggedLines} lines flagged; ${flaggedFiles} of ${files.length} files flagged whole`,
    });
    recordBenchFigure({
      benchmark: BENCHMARK,
      source: SOURCE,
      case: `${id} on the dirty set (${positives.length} samples)`,
      metric: `${id}: positives detected`,
      unit: 'samples',
      value: detected,
      baseline: 'every labelled positive',
      baselineValue: positives.length,
    });
    console.log(
      `detector-quality: ${id} clean ${flaggedLines}/${lines.length} lines and ${flaggedFiles}/${files.length} files ` +
        `flagged; dirty ${detected}/${positives.length} detected (recall ${(detected / positives.length).toFixed(3)})`,
    );
  }
}

async function countFlagged(policy: PolicyEvaluator, texts: readonly string[]): Promise<number> {
  let flagged = 0;
  for (const text of texts) if (!(await policy.evaluate(text, CONTEXT)).allowed) flagged++;
  return flagged;
}

function countFlaggedFiles(policy: PolicyEvaluator, files: readonly CorpusFile[]): Promise<number> {
  return countFlagged(
    policy,
    files.map((file) => file.text),
  );
}
