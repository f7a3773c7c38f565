// Built programs started as processes, as an operator runs them, for the benchmarks that compare one
// replica of a service with several (issue 19) and drive agent processes against them. Each keeps
// the tail of what it printed, so a start that fails says why.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from './http.js';

/** A program started as a process, with what it printed (the last `keep` characters). */
export interface NodeProcess {
  readonly child: ChildProcess;
  /** The last of what it printed, stdout and stderr interleaved. */
  output(): string;
  /** Resolves with its exit code (null when a signal ended it). */
  exited(): Promise<number | null>;
}

/** A built service started as a process: where it listens. */
export interface ServiceProcess extends NodeProcess {
  readonly url: string;
}

/** A replica of a scaled-out service: its name in the partition owner table. */
export interface ServiceReplica extends ServiceProcess {
  readonly name: string;
}

export interface StartOptions {
  /** How many characters of its output to keep (default 4,000: a service logs for as long as it runs). */
  readonly keep?: number;
}

/** Starts `node <script> ...args` on this Node, with this process's environment and `env` over it. */
export function startNodeProcess(script: string, args: readonly string[], env: Record<string, string>, options: StartOptions = {}): NodeProcess {
  const keep = options.keep ?? 4_000;
  const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  // 'close', not 'exit': what it printed last is read by then. A process that could not be
  // spawned never exits: it reads as ended by a signal (null).
  const exit = once(child, 'close').then(
    ([code]) => code as number | null,
    () => null,
  );
  let output = '';
  const append = (chunk: Buffer) => void (output = `${output}${chunk.toString()}`.slice(-keep));
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return { child, output: () => output, exited: () => exit };
}

/** Starts the built service `main` (its `dist/main.js`) on a free loopback port; it may not answer yet (`untilHealthy`). */
export async function startServiceProcess(main: string, env: Record<string, string>, options: StartOptions = {}): Promise<ServiceProcess> {
  const port = await freePort();
  const started = startNodeProcess(main, [], { ...env, GATEHOUSE_PORT: String(port) }, options);
  return { ...started, url: `http://127.0.0.1:${port}` };
}

/** Starts `main` as replica `name` of a scaled-out service (GATEHOUSE_SCALE_OUT=partitions, GATEHOUSE_REPLICA_ID). */
export async function startReplica(main: string, name: string, env: Record<string, string>, options: StartOptions = {}): Promise<ServiceReplica> {
  const started = await startServiceProcess(main, { ...env, GATEHOUSE_SCALE_OUT: 'partitions', GATEHOUSE_REPLICA_ID: name }, options);
  return { ...started, name };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const running = (p: NodeProcess) => p.child.exitCode === null && p.child.signalCode === null;

/** Resolves once `service` answers /health with 200; fails when it exits first or after `timeoutMs`, with what it printed. */
export async function untilHealthy(service: ServiceProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!running(service)) throw new Error(`the service exited before it answered /health: ${service.output()}`);
    try {
      if ((await fetch(`${service.url}/health`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`the service did not answer /health within ${timeoutMs} ms: ${service.output()}`);
}

/**
 * Waits until the replicas between them hold every one of `partitions`, each at least one
 * (`held`: how many a replica holds now, as the service tells it; a replica that does not answer
 * yet is still starting). Up to 600 polls 200 ms apart; then fails with what each printed.
 */
export async function untilPartitionsHeld<R extends NodeProcess>(replicas: readonly R[], partitions: number, held: (replica: R) => Promise<number>): Promise<void> {
  for (let i = 0; i < 600; i += 1) {
    try {
      const counts = await Promise.all(replicas.map(held));
      if (counts.reduce((a, b) => a + b, 0) === partitions && counts.every((n) => n > 0)) return;
    } catch {
      // starting
    }
    await sleep(200);
  }
  throw new Error(`the replicas did not take every partition: ${replicas.map((r) => r.output()).join('\n---\n')}`);
}

/** SIGTERMs every process still running and waits until each has exited (a clean stop: a replica leaves its groups). */
export async function stopProcesses(processes: readonly NodeProcess[]): Promise<void> {
  await Promise.all(
    processes.map(async (p) => {
      if (!running(p)) return;
      p.child.kill('SIGTERM');
      await p.exited();
    }),
  );
}
