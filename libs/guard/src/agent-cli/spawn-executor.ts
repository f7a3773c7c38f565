// The default executor: spawns the CLI without a shell, stdin closed, keeps the UTF-8 tail of each
// stream, and at the deadline or on abort ends the whole process tree (process-tree.ts).
import { readOptions } from '@gatehouse/contracts';
import { type ChildProcess } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { AgentCliError, type AgentCliErrorMetadata } from './errors.js';
import { Utf8Tail } from './output-tail.js';
import {
  type AgentCliSpawn,
  defaultIsGroupAlive,
  defaultSignalGroup,
  defaultSpawn,
  errnoCode,
  processGroupTeardown,
  resolveTaskkill,
  taskkillTeardown,
  type TreeTeardown,
} from './process-tree.js';
import type { AgentCliExec, AgentCliExecOutput, AgentCliExecSpec } from './run-cli.js';
import { MAX_TIMER_MS } from '../policy-engine/policies/validation.js';

// How long output pipes may stay open after the CLI exited: a process that left the group can
// hold them forever, and the run must still end.
const OUTPUT_DRAIN_MS = 2_000;
const DEFAULT_TERMINATION_WAIT_MS = 5_000;

/** Seams of the default executor, for hosts with their own process supervision and for tests. */
export interface SpawnAgentCliOptions {
  /** Sends `signal` to every process of group `pgid`; throws an errno error like `process.kill`. */
  readonly signalGroup?: (pgid: number, signal: NodeJS.Signals) => void;
  /** Whether group `pgid` still has a live (non-zombie) member. */
  readonly isGroupAlive?: (pgid: number) => boolean;
  /** How long to wait for the tree to end (the group to vanish after SIGKILL, taskkill to exit); default 5000 ms. */
  readonly terminationWaitMs?: number;
  /** The platform whose teardown is used (default `process.platform`): `win32` uses taskkill. */
  readonly platform?: NodeJS.Platform;
  /** Spawns the CLI and, on Windows, taskkill (default Node's `spawn`). */
  readonly spawn?: AgentCliSpawn;
  /** Where `SystemRoot`/`WINDIR` are read on Windows (default `process.env`). */
  readonly processEnv?: NodeJS.ProcessEnv;
}

interface ExecutorControl {
  readonly spawn: AgentCliSpawn;
  /** The teardown, or undefined when this runtime has none (Windows without a usable system root). */
  readonly teardown: TreeTeardown | undefined;
}

function spawnFailed(error: unknown): AgentCliError {
  const systemCode = errnoCode(error);
  // Only the errno code survives: Node's message names the path and its error object carries the argv.
  return new AgentCliError('AGENT_CLI.SPAWN_FAILED', systemCode === undefined ? { reason: 'exec-failed' } : { systemCode });
}

async function bounded<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  const ac = new AbortController();
  try {
    return await Promise.race([promise, delay(ms, undefined, { signal: ac.signal }).catch(() => undefined)]);
  } finally {
    ac.abort();
  }
}

interface Running {
  readonly child: ChildProcess;
  readonly stdout: Utf8Tail;
  readonly stderr: Utf8Tail;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  readonly closed: Promise<void>;
  readonly started: Promise<void>;
}

function start(spec: AgentCliExecSpec, control: ExecutorControl, teardown: TreeTeardown): Running {
  let child: ChildProcess;
  try {
    // detached on POSIX: the CLI leads a new process group (and session), so the whole tree can be signalled at once.
    child = control.spawn(spec.command, spec.argv, { cwd: spec.cwd, env: spec.env, shell: false, detached: teardown.detached, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
  } catch (error) {
    throw spawnFailed(error);
  }
  const stdout = new Utf8Tail(spec.maxOutputBytes);
  const stderr = new Utf8Tail(spec.maxOutputBytes);
  child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
  child.stdout?.on('error', () => undefined);
  child.stderr?.on('error', () => undefined);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const started = new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    // Kept as a permanent listener: a second 'error' without one would crash the host.
    child.on('error', (error) => reject(spawnFailed(error)));
  });
  return { child, stdout, stderr, exited, closed, started };
}

async function execute(spec: AgentCliExecSpec, control: ExecutorControl): Promise<AgentCliExecOutput> {
  // Resolved before the CLI starts: a run whose tree could not be ended at its deadline never begins.
  const teardown = control.teardown;
  if (teardown === undefined) throw new AgentCliError('AGENT_CLI.SPAWN_FAILED', { reason: 'runtime-unavailable' });
  if (spec.signal?.aborted === true) throw new AgentCliError('AGENT_CLI.ABORTED');
  const run = start(spec, control, teardown);
  const output = (timedOut: boolean, exit: { code: number | null; signal: string | null }): AgentCliExecOutput => ({
    exitCode: exit.code,
    signal: exit.signal,
    stdout: run.stdout.text(),
    stderr: run.stderr.text(),
    stdoutTruncated: run.stdout.truncated,
    stderrTruncated: run.stderr.truncated,
    ...(timedOut ? { timedOut: true } : {}),
  });

  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await run.started;
    const pid = run.child.pid;
    if (pid === undefined) throw new AgentCliError('AGENT_CLI.SPAWN_FAILED', { reason: 'exec-failed' });
    const stop = new Promise<'timeout' | 'abort'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), spec.timeoutMs);
      onAbort = () => resolve('abort');
      spec.signal?.addEventListener('abort', onAbort, { once: true });
      if (spec.signal?.aborted === true) resolve('abort');
    });
    const first = await Promise.race([run.exited.then(() => 'exit' as const), stop]);
    if (first === 'exit') {
      teardown.afterExit(pid);
      await bounded(run.closed, OUTPUT_DRAIN_MS);
      return output(false, await run.exited);
    }
    const termination = await teardown.terminate(pid, spec.killGraceMs);
    if (!termination.ok) {
      const facts: AgentCliErrorMetadata = {
        timedOut: first === 'timeout',
        reason: termination.reason,
        terminationMethod: teardown.method,
        ...(termination.systemCode === undefined ? {} : { systemCode: termination.systemCode }),
        ...(termination.exitCode === undefined ? {} : { exitCode: termination.exitCode }),
      };
      throw new AgentCliError('AGENT_CLI.TERMINATION_FAILED', facts);
    }
    if (first === 'abort') throw new AgentCliError('AGENT_CLI.ABORTED');
    await bounded(run.closed, OUTPUT_DRAIN_MS);
    return output(true, (await bounded(run.exited, OUTPUT_DRAIN_MS)) ?? { code: null, signal: null });
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) spec.signal?.removeEventListener('abort', onAbort);
    run.child.stdout?.destroy();
    run.child.stderr?.destroy();
  }
}

/** Builds the default executor with its seams replaced (tests, custom supervision, another platform's teardown). */
export function createSpawnAgentCli(options: SpawnAgentCliOptions = {}): AgentCliExec {
  readOptions('createSpawnAgentCli', options, ['signalGroup', 'isGroupAlive', 'terminationWaitMs', 'platform', 'spawn', 'processEnv']);
  const terminationWaitMs = options.terminationWaitMs ?? DEFAULT_TERMINATION_WAIT_MS;
  if (!Number.isSafeInteger(terminationWaitMs) || terminationWaitMs < 0 || terminationWaitMs > MAX_TIMER_MS) {
    throw new TypeError('terminationWaitMs must be a non-negative integer');
  }
  for (const name of ['signalGroup', 'isGroupAlive', 'spawn'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new TypeError(`createSpawnAgentCli: ${name} must be a function`);
  }
  const platform = options.platform ?? process.platform;
  const spawn = options.spawn ?? defaultSpawn;
  let teardown: TreeTeardown | undefined;
  if (platform === 'win32') {
    const taskkill = resolveTaskkill(options.processEnv ?? process.env);
    teardown = taskkill === undefined ? undefined : taskkillTeardown(taskkill, spawn, terminationWaitMs);
  } else {
    teardown = processGroupTeardown({ signalGroup: options.signalGroup ?? defaultSignalGroup, isGroupAlive: options.isGroupAlive ?? defaultIsGroupAlive, terminationWaitMs });
  }
  return (spec) => execute(spec, { spawn, teardown });
}

/**
 * The default executor: spawns without a shell (a new process group on POSIX) with stdin closed,
 * keeps the UTF-8 tail of each stream, and at the deadline or on abort ends the whole tree: SIGTERM
 * then SIGKILL to the group on POSIX, `taskkill /pid <pid> /T /F` on Windows.
 */
export const spawnAgentCli: AgentCliExec = createSpawnAgentCli();
