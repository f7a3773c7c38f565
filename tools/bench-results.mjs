// Benchmark figures as data. Every benchmark program prints its figures for people and, when
// GATEHOUSE_BENCH_RESULTS names a file, also appends each one to it as a JSON line, which
// tools/bench-report.mjs turns into docs/benchmarks.{json,md}. It lives at the workspace root,
// beside the renderer that reads the same records, because both a library (the guard) and
// services write them and a library may not import a service-side package.
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The variable naming the JSONL file the figures are appended to (unset: print only). */
export const BENCH_RESULTS_ENV = 'GATEHOUSE_BENCH_RESULTS';

const positive = (value) => typeof value === 'number' && Number.isFinite(value) && value > 0;
const text = (value) => typeof value === 'string' && value.trim() !== '';
const optionalNumber = (value) => value === undefined || (typeof value === 'number' && Number.isFinite(value));

/**
 * What is wrong with a record, or an empty list. A figure without a same-run baseline is not
 * a result: the ratio is what makes runs on different machines comparable.
 */
export function benchRecordProblems(record) {
  if (typeof record !== 'object' || record === null) return ['not an object'];
  const problems = [];
  for (const key of ['benchmark', 'source', 'case', 'metric', 'unit', 'baseline']) {
    if (!text(record[key])) problems.push(`${key} must be a non-empty string`);
  }
  for (const key of ['value', 'baselineValue', 'ratio']) {
    if (!positive(record[key])) problems.push(`${key} must be a positive finite number`);
  }
  if (positive(record.value) && positive(record.baselineValue) && positive(record.ratio)) {
    const expected = record.value / record.baselineValue;
    if (Math.abs(record.ratio - expected) > expected * 1e-9) problems.push('ratio must be value / baselineValue');
  }
  if (record.note !== undefined && !text(record.note)) problems.push('note must be a non-empty string when present');
  if (record.peer !== undefined && !/^\S+ \d+\.\d+\.\d+\S*$/.test(String(record.peer))) {
    problems.push('peer must be a package name and its installed version, "name 1.2.3" (peerPackage)');
  }
  const target = record.target;
  if (target !== undefined) {
    if (typeof target !== 'object' || target === null || (target.on !== 'value' && target.on !== 'ratio')) {
      problems.push('target.on must be "value" or "ratio"');
    } else if (!optionalNumber(target.atMost) || !optionalNumber(target.atLeast) || (target.atMost === undefined && target.atLeast === undefined)) {
      problems.push('target needs a finite atMost and/or atLeast');
    } else if (!text(target.source)) {
      problems.push('target.source must say where the target is stated');
    }
  }
  return problems;
}

/**
 * Completes a figure with its ratio (value / baselineValue), checks it, and appends it to the
 * results file when GATEHOUSE_BENCH_RESULTS is set. Returns the record (for the printed line).
 */
export function recordBenchFigure(figure, env = process.env) {
  const record = { ...figure, ratio: figure.value / figure.baselineValue };
  const problems = benchRecordProblems(record);
  if (problems.length > 0) {
    throw new Error(`benchmark figure ${figure.benchmark ?? '?'} / ${figure.case ?? '?'} / ${figure.metric ?? '?'}: ${problems.join('; ')}`);
  }
  const file = env[BENCH_RESULTS_ENV];
  if (file) appendFileSync(file, `${JSON.stringify(record)}\n`);
  return record;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * A peer as a figure names it: the package and the version installed in this workspace, read
 * from its own package.json (so a row says which release it was measured against, not which
 * one the lock file meant). Throws when the peer is not installed: the row cannot be measured.
 */
export function peerPackage(name) {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
  return `${name} ${manifest.version}`;
}
