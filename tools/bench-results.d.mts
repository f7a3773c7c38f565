/** A target a benchmark states for one of its figures, and where it states it. */
export interface BenchTarget {
  /** Whether the bound applies to the figure itself or to its ratio against the baseline. */
  readonly on: 'value' | 'ratio';
  readonly atMost?: number;
  readonly atLeast?: number;
  /** Where the target is stated (a README section, an issue). */
  readonly source: string;
}

/** One measured figure next to its baseline, measured in the same run and in the same unit. */
export interface BenchFigure {
  /** The table it belongs to in docs/benchmarks.md, e.g. `guard: gatekeeper`. */
  readonly benchmark: string;
  /** The program's source file, relative to the repository root. */
  readonly source: string;
  readonly case: string;
  readonly metric: string;
  readonly unit: string;
  readonly value: number;
  /** What the baseline is, in a few words a reader can check against the source. */
  readonly baseline: string;
  readonly baselineValue: number;
  readonly target?: BenchTarget;
  readonly note?: string;
  /**
   * Set when the baseline is a tool a user would pick instead (a peer), not a floor: the
   * package and its installed version, from peerPackage(). Peer rows are also gathered in the
   * report's "against peers" table.
   */
  readonly peer?: string;
}

/** A figure as written to the results file: with its ratio, value / baselineValue. */
export interface BenchRecord extends BenchFigure {
  readonly ratio: number;
}

export const BENCH_RESULTS_ENV: 'GATEHOUSE_BENCH_RESULTS';
export function benchRecordProblems(record: unknown): string[];
/** `name version` of a peer installed in the workspace (throws when it is not installed). */
export function peerPackage(name: string): string;
export function recordBenchFigure(figure: BenchFigure, env?: NodeJS.ProcessEnv): BenchRecord;
