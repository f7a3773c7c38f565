import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import path from 'node:path';
import { serviceKafkaEnv } from './kafka-auth.js';
import { agentClaimEnv, serviceSigningEnv, trustedKeysEnv } from './signing.js';

/** The repository root, for paths to built services and fixtures. */
export const ROOT = path.resolve(import.meta.dirname, '../../..');

const running = new Set<ChildProcess>();

/** Kills every process this module started (call in afterAll). */
export function killAll(): void {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  running.clear();
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export interface Started {
  readonly child: ChildProcess;
  output(): string;
  exited(): Promise<number | null>;
}

/** Starts `node <script> ...args` on this test's Node 22, capturing its output. */
export function startNode(script: string, args: readonly string[], env: Record<string, string> = {}): Started {
  const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...trustedKeysEnv(), ...agentClaimEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  return { child, output: () => output, exited: () => exit };
}

/**
 * Starts a built service, as its own Kafka principal, and resolves once its /health answers 200.
 * It listens on `env.GATEHOUSE_PORT` when given (a restart on the port its clients know), else on a free port.
 */
export async function startService(name: string, env: Record<string, string>, timeoutMs = 60_000): Promise<Started & { port: number; url: string }> {
  const port = env['GATEHOUSE_PORT'] ? Number(env['GATEHOUSE_PORT']) : await freePort();
  const started = startNode(path.join(ROOT, `services/${name}/dist/main.js`), [], { GATEHOUSE_PORT: String(port), ...serviceSigningEnv(name), ...serviceKafkaEnv(name), ...env });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (started.child.exitCode !== null) throw new Error(`${name} exited with ${started.child.exitCode}: ${started.output().slice(-2000)}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.status === 200) return { ...started, port, url };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${name} never became healthy`);
}
