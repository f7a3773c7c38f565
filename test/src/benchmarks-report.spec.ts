import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BENCH_LIMITS, limitOf } from '../../tools/bench-limits.mjs';
import { type BenchReport, formatFigure, isPeerTarget, meetsTarget, renderBenchmarksMarkdown } from '../../tools/bench-report.mjs';
import { benchRecordProblems, peerPackage, recordBenchFigure } from '../../tools/bench-results.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const committed = JSON.parse(readFileSync(`${root}docs/benchmarks.json`, 'utf8')) as BenchReport;

describe('docs/benchmarks.md', () => {
  it('is exactly what the renderer makes of docs/benchmarks.json (regenerate with npm run bench, never edit by hand)', () => {
    expect(readFileSync(`${root}docs/benchmarks.md`, 'utf8')).toBe(renderBenchmarksMarkdown(committed));
  });

  it('holds figures of every benchmark program, each with a same-run baseline and its ratio', () => {
    const sources = new Set(committed.results.map((r) => r.source));
    expect([...sources].sort()).toEqual([
      'libs/guard/src/bench/agent-stream.bench.ts',
      'libs/guard/src/bench/audit-publish.bench.ts',
      'libs/guard/src/bench/connector.bench.ts',
      'libs/guard/src/bench/content-policies.bench.ts',
      'libs/guard/src/bench/detector-quality.bench.ts',
      'libs/guard/src/bench/gatekeeper.bench.ts',
      'libs/guard/src/bench/gateway-start.bench.ts',
      'libs/guard/src/bench/schema-guardrail.bench.ts',
      'libs/guard/src/bench/secrets-peer.bench.ts',
      'services/approval/src/bench/approval.bench.ts',
      'services/approval/src/bench/cold-start.bench.ts',
      'services/audit-export/src/bench/cold-start.bench.ts',
      'services/audit-export/src/bench/export.bench.ts',
      'services/audit-export/src/bench/scale-out.bench.ts',
      'services/idempotency-ledger/src/bench/cold-start.bench.ts',
      'services/idempotency-ledger/src/bench/ledger.bench.ts',
      'services/idempotency-ledger/src/bench/scale-out.bench.ts',
      'services/policy/src/bench/cold-start.bench.ts',
      'test/load/load.bench.mjs',
    ]);
    for (const record of committed.results) {
      expect({ figure: `${record.benchmark} / ${record.case} / ${record.metric}`, problems: benchRecordProblems(record) }).toEqual({
        figure: `${record.benchmark} / ${record.case} / ${record.metric}`,
        problems: [],
      });
    }
  });

  it('marks every issue-22 row that missed its target with what stands in the way and a profile that says how it was made', () => {
    const missed = committed.results.filter((r) => isPeerTarget(r) && !meetsTarget(r));
    const unexplained = missed.filter((r) => limitOf(r) === undefined).map((r) => `${r.benchmark} / ${r.case} / ${r.metric}`);
    expect(unexplained).toEqual([]);
    for (const limit of BENCH_LIMITS) {
      const profile = `${root}${limit.profile}`;
      expect({ profile: limit.profile, exists: existsSync(profile) }).toEqual({ profile: limit.profile, exists: true });
      const text = readFileSync(profile, 'utf8');
      expect({ profile: limit.profile, madeWith: text.includes('--cpu-prof') && text.includes('tools/profile-summary.mjs') }).toEqual({ profile: limit.profile, madeWith: true });
      // A limit names a row the benchmarks still record: renaming a row cannot leave its explanation behind.
      expect({ limit: `${limit.benchmark} / ${limit.metric}`, rows: committed.results.filter((r) => limitOf(r, [limit]) !== undefined).length > 0 }).toEqual({
        limit: `${limit.benchmark} / ${limit.metric}`,
        rows: true,
      });
    }
  });

  it('states the machine, the Node version and the date of the run', () => {
    expect(committed.generatedBy).toBe('npm run bench');
    expect(committed.machine.cpus).toBeGreaterThan(0);
    expect(committed.machine.totalMemoryBytes).toBeGreaterThan(0);
    expect(committed.node).toMatch(/^v22\./);
    expect(Number.isNaN(Date.parse(committed.date))).toBe(false);
  });
});

/** A report of `results` on an example machine, dated, as the renderer takes it. */
function reportOf(results: BenchReport['results']): BenchReport {
  return {
    generatedBy: 'npm run bench',
    date: '2026-12-01T10:20:30.000Z',
    node: 'v22.23.3',
    machine: { cpus: 2, cpuModel: 'Example CPU', totalMemoryBytes: 2 * 1024 ** 3, os: 'Linux 6.1 x64' },
    results,
  };
}

describe('benchmark figures', () => {
  const figure = {
    benchmark: 'example',
    source: 'example.bench.ts',
    case: 'one case',
    metric: 'latency p50',
    unit: 'ms',
    value: 3,
    baseline: 'the bare call',
    baselineValue: 2,
  };

  it('are recorded with their ratio to the baseline, and refused without a baseline', () => {
    expect(recordBenchFigure(figure, {}).ratio).toBe(1.5);
    expect(() => recordBenchFigure({ ...figure, baselineValue: 0 }, {})).toThrow(/baselineValue must be a positive finite number/);
    expect(() => recordBenchFigure({ ...figure, baseline: '' }, {})).toThrow(/baseline must be a non-empty string/);
    expect(benchRecordProblems({ ...figure, ratio: 2 })).toEqual(['ratio must be value / baselineValue']);
  });

  it('render a target and whether it was met only where a benchmark states one', () => {
    const report = reportOf([
      recordBenchFigure({ ...figure, target: { on: 'ratio', atMost: 2, source: 'issue 1' } }, {}),
      recordBenchFigure({ ...figure, case: 'another', value: 5, target: { on: 'value', atMost: 4, source: 'issue 1' } }, {}),
      recordBenchFigure({ ...figure, benchmark: 'no target', value: 1234.5 }, {}),
    ]);
    const markdown = renderBenchmarksMarkdown(report);
    expect(markdown).toContain('| date | 2026-12-01 10:20 UTC |');
    expect(markdown).toContain('| cores (`os.cpus().length`) | 2 |');
    expect(markdown).toContain('| memory | 2.0 GiB |');
    expect(markdown).toContain('| one case | latency p50 | 3.00 ms | the bare call | 2.00 ms | 1.50x | ratio ≤ 2.00x (issue 1) | yes |');
    expect(markdown).toContain('| another | latency p50 | 5.00 ms | the bare call | 2.00 ms | 2.50x | ≤ 4.00 (issue 1) | **no** |');
    expect(markdown).toContain('| one case | latency p50 | 1,235 ms | the bare call | 2.00 ms | 617x |');
  });

  it('name a peer by its installed version and gather peer rows into one table, refusing a peer without a version', () => {
    const peer = peerPackage('ajv');
    expect(peer).toMatch(/^ajv \d+\.\d+\.\d+/);
    expect(() => peerPackage('no-such-peer-package')).toThrow();
    expect(() => recordBenchFigure({ ...figure, peer: 'ajv' }, {})).toThrow(/peer must be a package name and its installed version/);
    const report = reportOf([
      recordBenchFigure({ ...figure, unit: 'validations/s', value: 300, baselineValue: 600, baseline: 'ajv, same schema', peer, target: { on: 'ratio', atLeast: 0.5, source: 'issue 22' } }, {}),
      recordBenchFigure(figure, {}),
    ]);
    const markdown = renderBenchmarksMarkdown(report);
    expect(markdown).toContain('## Against peers');
    expect(markdown).toContain(`| example | one case | latency p50 | 300 validations/s | ${peer} | 600 validations/s | 0.500x | ratio ≥ 0.500x (issue 22) | yes |`);
    // The floor baseline stays in its own section only.
    const peersTable = markdown.slice(markdown.indexOf('## Against peers'), markdown.indexOf('## example'));
    expect(peersTable).not.toContain('the bare call');
  });

  it('list every issue-22 row against its peer, the baseline standing in where no package is, and say what stands in the way of a miss', () => {
    const target = { on: 'ratio', atMost: 1.5, source: 'issue 22: example' } as const;
    const report = reportOf([
      recordBenchFigure({ ...figure, case: 'met', target }, {}),
      recordBenchFigure({ ...figure, case: 'with a profile', value: 8, target }, {}),
      recordBenchFigure({ ...figure, case: 'without one', value: 9, target }, {}),
      recordBenchFigure({ ...figure, case: 'another issue', value: 9, target: { ...target, source: 'issue 19: example' } }, {}),
    ]);
    const limits = [{ benchmark: 'example', metric: 'latency', caseIncludes: 'with a profile', standsInTheWay: 'The bare call is the floor.', profile: 'docs/profiles/example.md' }];
    const markdown = renderBenchmarksMarkdown(report, { limits });
    const peersTable = markdown.slice(markdown.indexOf('## Against peers'), markdown.indexOf('### What stands in the way'));
    expect(peersTable).toContain('| example | met | latency p50 | 3.00 ms | the bare call | 2.00 ms | 1.50x | ratio ≤ 1.50x (issue 22: example) | yes |');
    expect(peersTable).toContain('| example | without one | latency p50 | 9.00 ms | the bare call | 2.00 ms | 4.50x | ratio ≤ 1.50x (issue 22: example) | **no** |');
    expect(peersTable).not.toContain('another issue');
    const why = markdown.slice(markdown.indexOf('### What stands in the way'), markdown.indexOf('## example'));
    expect(why).toContain('- **example**, with a profile, latency p50: 4.00x against ratio ≤ 1.50x (issue 22: example). The bare call is the floor. Profile: [docs/profiles/example.md](profiles/example.md).');
    expect(why).toContain('- **example**, without one, latency p50: 4.50x against ratio ≤ 1.50x (issue 22: example). No profile yet.');
    expect(why).toContain('- **example**, another issue, latency p50: 4.50x against ratio ≤ 1.50x (issue 19: example). No profile yet.');
    expect(why).not.toContain('- **example**, met,');
    // A target on the figure itself is shown against the figure, not the ratio.
    const onValue = reportOf([recordBenchFigure({ ...figure, value: 30, target: { on: 'value', atMost: 20, source: 'issue 22: example' } }, {})]);
    expect(renderBenchmarksMarkdown(onValue, { limits: [] })).toContain('- **example**, one case, latency p50: 30.0 ms against ≤ 20.0 (issue 22: example). No profile yet.');
  });

  it('format numbers the same way on every machine', () => {
    expect([1_234_567.8, 123.4, 12.345, 1.2345, 0.18, 0.012345].map(formatFigure)).toEqual(['1,234,568', '123', '12.3', '1.23', '0.180', '0.0123']);
  });
});
