import { type Started } from '../../src/support/processes.js';

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
