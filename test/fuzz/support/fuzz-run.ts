import { createHash, randomInt } from 'node:crypto';
import fc from 'fast-check';

// Fuzz inputs are drawn with fast-check from one seed per spec file, so a failure reproduces
// with GATEHOUSE_FUZZ_SEED. The inputs are sampled up front (fc.sample) and sent concurrently,
// instead of fc.assert's one-at-a-time property runs: a live service is stateful and slow to
// ask, so shrinking against it would neither be cheap nor mean much; the seed and the kind of
// each failing input are what a reader needs.

/** Environment variables of the fuzz suite. */
export const FUZZ_ENV = {
  /** Reproduce a run: the seed it printed. */
  seed: 'GATEHOUSE_FUZZ_SEED',
  /** Inputs per REST endpoint and records per Kafka consumer (default 2,000). */
  runs: 'GATEHOUSE_FUZZ_RUNS',
} as const;

/** How many inputs each endpoint or consumer gets. */
export const FUZZ_RUNS = positiveInt(process.env[FUZZ_ENV.runs], 2_000);

function positiveInt(raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${FUZZ_ENV.runs} must be a positive integer`);
  return n;
}

/** The seed of this spec file's run (from GATEHOUSE_FUZZ_SEED, else fresh), printed so a failure can be replayed. */
export function fuzzSeed(suite: string): number {
  const raw = process.env[FUZZ_ENV.seed];
  const seed = raw === undefined || raw === '' ? randomInt(0, 2 ** 31 - 1) : Number(raw);
  if (!Number.isSafeInteger(seed)) throw new Error(`${FUZZ_ENV.seed} must be an integer`);
  process.stdout.write(`fuzz ${suite}: seed ${seed} (reproduce with ${FUZZ_ENV.seed}=${seed})\n`);
  return seed;
}

/** A seed of its own per endpoint or topic, so adding one does not reshuffle the others' inputs. */
export function derivedSeed(seed: number, name: string): number {
  return (seed ^ createHash('sha256').update(name).digest().readInt32BE(0)) | 0;
}

/** `count` values of `arbitrary`, the same ones for the same seed. */
export function samples<T>(arbitrary: fc.Arbitrary<T>, seed: number, count: number): T[] {
  return fc.sample(arbitrary, { seed, numRuns: count });
}

/** Runs `work` over `items` with at most `concurrency` in flight; results in input order. */
export async function inPool<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/** A failure report: the seed, how many inputs failed, and the first few (kinds and answers, never request values). */
export function failureReport(seed: number, what: string, failures: readonly string[], total: number): string {
  const shown = failures.slice(0, 8).map((f) => `  - ${f}`);
  return [`${what}: ${failures.length} of ${total} inputs misbehaved (seed ${seed}, ${FUZZ_ENV.seed}=${seed} reproduces)`, ...shown].join('\n');
}
