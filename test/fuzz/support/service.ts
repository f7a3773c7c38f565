import { describe, expect, it } from '@jest/globals';
import { type Started } from '../../src/support/processes.js';
import { FUZZ_RUNS } from './fuzz-run.js';
import { fuzzRoute, type RouteFuzz, verdictOf } from './http-fuzz.js';

/**
 * Whether a started service is still alive and healthy: its process has not exited, and /health
 * answers 200. The health check asks the broker and the database with 2 s deadlines each, which a
 * loaded two-core machine can miss once; it is asked again for up to 15 s before a 503 counts.
 */
export async function aliveAndHealthy(service: Started & { url: string }): Promise<{ exit: number | null; health: number }> {
  const deadline = Date.now() + 15_000;
  let health = 0;
  while (service.child.exitCode === null) {
    try {
      health = (await fetch(`${service.url}/health`, { signal: AbortSignal.timeout(5_000) })).status;
    } catch {
      health = 0;
    }
    if (health === 200 || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return { exit: service.child.exitCode, health };
}

/** What the REST fuzz of one service needs; getters, since the service starts in beforeAll. */
export interface RestFuzzTarget {
  readonly service: () => Started & { url: string };
  /** The service's routes as the fuzz drives them (built when the test runs). */
  readonly routes: () => readonly RouteFuzz[];
  /** Everything that must not change: topic ends, rows, counters. */
  readonly snapshot: () => Promise<unknown>;
  readonly seed: number;
}

/**
 * Registers one test per route: every malformed request gets a typed 4xx that echoes nothing,
 * and afterwards the service is alive, healthy, and in the state it was in before.
 */
export function describeRestFuzz(title: string, names: readonly string[], target: RestFuzzTarget): void {
  describe(title, () => {
    it.each(names.map((n) => [n]))('%s answers every malformed request with a typed 4xx and changes nothing', async (name) => {
      const route = target.routes().find((r) => r.name === name);
      if (!route) throw new Error(`no fuzz route named ${name}`);
      const before = await target.snapshot();
      const result = await fuzzRoute(target.service().url, route, target.seed, FUZZ_RUNS);
      expect(verdictOf(result, target.seed, name)).toEqual({ failures: 'none' });
      expect(await aliveAndHealthy(target.service())).toEqual({ exit: null, health: 200 });
      expect(await target.snapshot()).toEqual(before);
    }, 120_000);
  });
}
