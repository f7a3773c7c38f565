import type { BenchLimit } from './bench-limits.mjs';
import type { BenchRecord } from './bench-results.mjs';

/** docs/benchmarks.json: the figures and the machine and Node they were measured on. */
export interface BenchReport {
  readonly generatedBy: string;
  /** ISO 8601, UTC. */
  readonly date: string;
  readonly node: string;
  readonly machine: {
    readonly cpus: number;
    readonly cpuModel: string;
    readonly totalMemoryBytes: number;
    readonly os: string;
  };
  readonly wallSeconds?: number;
  readonly results: readonly BenchRecord[];
}

export function readBenchResults(file: string): BenchRecord[];
export function benchReport(results: readonly BenchRecord[], options?: { wallSeconds?: number; date?: Date }): BenchReport;
export function formatFigure(value: number): string;
export function meetsTarget(record: BenchRecord): boolean;
export function isPeerTarget(record: BenchRecord): boolean;
export function renderBenchmarksMarkdown(report: BenchReport, options?: { limits?: readonly BenchLimit[] }): string;
