import type { BenchRecord } from './bench-results.mjs';

/** What stands in the way of a benchmark row that misses its target, and the profile that shows it. */
export interface BenchLimit {
  readonly benchmark: string;
  readonly metric: string;
  readonly caseIncludes?: string;
  readonly standsInTheWay: string;
  readonly profile: string;
}

export const BENCH_LIMITS: readonly BenchLimit[];
export function limitOf(record: BenchRecord, limits?: readonly BenchLimit[]): BenchLimit | undefined;
