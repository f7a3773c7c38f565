// Turns the figures the benchmarks appended to GATEHOUSE_BENCH_RESULTS (tools/bench-results.mjs)
// into docs/benchmarks.json (the records plus the machine they were measured on) and
// docs/benchmarks.md (rendered from that JSON alone). infra/scripts/bench.sh calls it at the end
// of `npm run bench`; test/src/benchmarks-report.spec.ts renders the committed JSON again and
// requires the committed Markdown byte for byte, so the Markdown cannot be edited by hand.
//   node tools/bench-report.mjs --results <file.jsonl> --out-dir docs [--seconds <wall time>]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_LIMITS, limitOf } from './bench-limits.mjs';
import { benchRecordProblems } from './bench-results.mjs';

/** Reads a results file: one record per line, each checked; a bad line fails with its number. */
export function readBenchResults(file) {
  const lines = readFileSync(file, 'utf8').split('\n').filter((line) => line.trim() !== '');
  if (lines.length === 0) throw new Error(`${file}: no benchmark figures`);
  return lines.map((line, i) => {
    let record;
    try {
      record = JSON.parse(line);
    } catch {
      throw new Error(`${file}:${i + 1}: not JSON`);
    }
    const problems = benchRecordProblems(record);
    if (problems.length > 0) throw new Error(`${file}:${i + 1}: ${problems.join('; ')}`);
    return record;
  });
}

/** The report: the records and the machine and Node they were measured on (taken now, on it). */
export function benchReport(results, { wallSeconds, date = new Date() } = {}) {
  const cpus = os.cpus();
  return {
    generatedBy: 'npm run bench',
    date: date.toISOString(),
    node: process.version,
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() || 'unknown',
      totalMemoryBytes: os.totalmem(),
      os: `${os.type()} ${os.release()} ${os.arch()}`,
    },
    ...(wallSeconds === undefined ? {} : { wallSeconds }),
    results,
  };
}

// Fixed rules instead of toLocaleString, so the same JSON renders the same bytes on every Node.
function groupThousands(digits) {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Three significant figures, at most; whole numbers from 100 up, with thousands separators. */
export function formatFigure(value) {
  const magnitude = Math.abs(value);
  if (magnitude >= 100) return `${value < 0 ? '-' : ''}${groupThousands(String(Math.round(magnitude)))}`;
  if (magnitude >= 10) return value.toFixed(1);
  if (magnitude >= 1) return value.toFixed(2);
  if (magnitude === 0) return '0';
  return value.toPrecision(3);
}

function cell(value) {
  return String(value).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function row(cells) {
  return `| ${cells.map(cell).join(' | ')} |`;
}

function bound(target) {
  const unit = target.on === 'ratio' ? 'x' : '';
  const parts = [];
  if (target.atLeast !== undefined) parts.push(`≥ ${formatFigure(target.atLeast)}${unit}`);
  if (target.atMost !== undefined) parts.push(`≤ ${formatFigure(target.atMost)}${unit}`);
  return `${target.on === 'ratio' ? 'ratio ' : ''}${parts.join(' and ')} (${target.source})`;
}

/** True when the figure (or its ratio) meets every bound of its target. */
export function meetsTarget(record) {
  const { target } = record;
  const measured = target.on === 'ratio' ? record.ratio : record.value;
  return (target.atLeast === undefined || measured >= target.atLeast) && (target.atMost === undefined || measured <= target.atMost);
}

function table(records) {
  const targets = records.some((r) => r.target !== undefined);
  const head = ['case', 'metric', 'figure', 'baseline (same run)', 'baseline figure', 'ratio', ...(targets ? ['target', 'met'] : [])];
  const lines = [row(head), row(head.map(() => '---'))];
  for (const r of records) {
    const figure = `${formatFigure(r.value)} ${r.unit}`;
    const base = `${formatFigure(r.baselineValue)} ${r.unit}`;
    lines.push(row([r.case, r.metric, figure, r.baseline, base, `${formatFigure(r.ratio)}x`, ...(targets ? targetCells(r) : [])]));
  }
  return lines;
}

/** Whether a row answers to issue 22 (performance against peers): its target says so. */
export function isPeerTarget(record) {
  return record.target !== undefined && record.target.source.startsWith('issue 22');
}

function targetCells(r) {
  return r.target === undefined ? ['–', '–'] : [bound(r.target), meetsTarget(r) ? 'yes' : '**no**'];
}

// The rows a user compares with what they would pick instead: those measured against a peer package,
// and every row with an issue-22 target, whose peer is then the baseline the issue names (the bare
// execute, two raw HTTP round trips, the unguarded stream). A missed target gets what stands in the
// way and its profile (tools/bench-limits.mjs), or says it has none.
function peersSection(results, limits) {
  const peers = results.filter((r) => r.peer !== undefined || isPeerTarget(r));
  if (peers.length === 0) return [];
  const head = ['benchmark', 'case', 'metric', 'gatehouse', 'peer', 'peer figure', 'ratio', 'target', 'met'];
  const lines = [
    '',
    '## Against peers',
    '',
    'The rows below, gathered from the sections after them, measure a tool a user would pick instead, on the same',
    'inputs in the same run, checked to make the same decisions. The peer is named with the version installed here;',
    'where the issue compares with a floor instead of a package (a bare execute, raw HTTP round trips, an unguarded',
    'stream), that same-run baseline stands as the peer.',
    '',
    row(head),
    row(head.map(() => '---')),
    ...peers.map((r) =>
      row([
        r.benchmark, r.case, r.metric, `${formatFigure(r.value)} ${r.unit}`, r.peer ?? r.baseline, `${formatFigure(r.baselineValue)} ${r.unit}`,
        `${formatFigure(r.ratio)}x`, ...targetCells(r),
      ]),
    ),
  ];
  const missed = results.filter((r) => r.target !== undefined && !meetsTarget(r));
  if (missed.length > 0) {
    lines.push(
      '',
      '### What stands in the way',
      '',
      'Each row that missed its target in this run, with what its CPU profile shows (the profile says how it was made).',
      '',
      ...missed.map((r) => {
        const limit = limitOf(r, limits);
        const why = limit === undefined ? 'No profile yet.' : `${limit.standsInTheWay} Profile: [${limit.profile}](${path.posix.relative('docs', limit.profile)}).`;
        const measured = r.target.on === 'ratio' ? `${formatFigure(r.ratio)}x` : `${formatFigure(r.value)} ${r.unit}`;
        return `- **${r.benchmark}**, ${r.case}, ${r.metric}: ${measured} against ${bound(r.target)}. ${why}`;
      }),
    );
  }
  return lines;
}

const GIB = 1024 ** 3;

/** docs/benchmarks.md, from the report alone (no clock, no machine, no locale). */
export function renderBenchmarksMarkdown(report, { limits = BENCH_LIMITS } = {}) {
  const { machine } = report;
  const when = `${report.date.slice(0, 10)} ${report.date.slice(11, 16)} UTC`;
  const lines = [
    '# Benchmarks',
    '',
    '<!-- Generated by `npm run bench` (infra/scripts/bench.sh, tools/bench-report.mjs) from docs/benchmarks.json. Do not edit by hand: run `npm run bench` again. -->',
    '',
    `Generated by \`${report.generatedBy}\`; do not edit by hand — run the command again. The same figures, unrounded, are in`,
    '`docs/benchmarks.json`, and `test/src/benchmarks-report.spec.ts` fails when this file differs from what the',
    'renderer makes of them.',
    '',
    'Every figure is measured next to its baseline in the same run, on the same machine, in the same unit; the',
    'ratio is figure ÷ baseline (above 1 means more: slower for a latency, faster for a rate). The machine is',
    'shared and small, so absolute figures are noisy; the ratios are what compare across machines.',
    '',
    row(['run', '']),
    row(['---', '---']),
    row(['date', when]),
    row(['node', report.node]),
    row(['cores (`os.cpus().length`)', String(machine.cpus)]),
    row(['CPU', machine.cpuModel]),
    row(['memory', `${(machine.totalMemoryBytes / GIB).toFixed(1)} GiB`]),
    row(['OS', machine.os]),
    ...(report.wallSeconds === undefined ? [] : [row(['benchmarks wall time', `${Math.round(report.wallSeconds)} s`])]),
  ];
  lines.push(...peersSection(report.results, limits));
  const benchmarks = new Map();
  for (const r of report.results) {
    const group = benchmarks.get(r.benchmark) ?? [];
    group.push(r);
    benchmarks.set(r.benchmark, group);
  }
  for (const [name, records] of benchmarks) {
    const sources = [...new Set(records.map((r) => r.source))].map((s) => `\`${s}\``).join(', ');
    lines.push('', `## ${name}`, '', `Source: ${sources}.`, '', ...table(records));
    // A case's p50 and p99 rows share their note: say it once.
    const notes = [...new Set(records.filter((r) => r.note !== undefined).map((r) => `- ${r.case}: ${r.note}.`))];
    if (notes.length > 0) lines.push('', ...notes);
  }
  return `${lines.join('\n')}\n`;
}

function argument(args, name) {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args[i + 1];
}

function main(args) {
  const resultsFile = argument(args, '--results');
  const outDir = argument(args, '--out-dir');
  const seconds = argument(args, '--seconds');
  if (!resultsFile || !outDir) {
    console.error('usage: node tools/bench-report.mjs --results <file.jsonl> --out-dir <dir> [--seconds <wall time>]');
    process.exit(2);
  }
  const report = benchReport(readBenchResults(resultsFile), { wallSeconds: seconds === undefined ? undefined : Number(seconds) });
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'benchmarks.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.join(outDir, 'benchmarks.md'), renderBenchmarksMarkdown(report));
  console.log(`bench: ${report.results.length} figures written to ${path.join(outDir, 'benchmarks.md')} and benchmarks.json`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
