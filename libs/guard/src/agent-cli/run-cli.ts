import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { type AgentCliDefinition, redactCommand } from './argv.js';
import { defineAgentCli } from './definitions.js';
import { AgentCliError, type AgentCliErrorMetadata, type AgentCliFailureReason } from './errors.js';
import { MAX_TIMER_MS, readOptions } from '../policy-engine/policies/validation.js';

/** Default deadline of one run: ten minutes. */
export const DEFAULT_TIMEOUT_MS = 600_000;
/** Default bytes retained per output stream: the last 1 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** Default wait between SIGTERM and SIGKILL of the process group. */
export const DEFAULT_KILL_GRACE_MS = 2_000;
/** Largest accepted `maxOutputBytes`, so a typo cannot make the host buffer gigabytes. */
export const MAX_OUTPUT_BYTES_LIMIT = 64 * 1024 * 1024;

// How long output pipes may stay open after the CLI exited: a process that left the group can
// hold them forever, and the run must still end.
const OUTPUT_DRAIN_MS = 2_000;
const DEFAULT_TERMINATION_WAIT_MS = 5_000;
const PROBE_INTERVAL_MS = 25;

/** What an executor is asked to run; everything has been validated and defaulted. */
export interface AgentCliExecSpec {
  readonly command: string;
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly signal: AbortSignal | undefined;
  readonly killGraceMs: number;
}

/** What an executor reports. `timedOut` means it stopped the process at the deadline. */
export interface AgentCliExecOutput {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly timedOut?: boolean;
}

/**
 * The process boundary, injectable for hosts that sandbox differently (container, remote worker).
 * An injected executor owns its own isolation, timeout, tree teardown and output cap; it reports
 * spawn, abort and teardown failures by rejecting with an AgentCliError.
 */
export type AgentCliExec = (spec: AgentCliExecSpec) => Promise<AgentCliExecOutput>;

/** One run of an agent CLI with an argv from `buildArgv`. */
export interface AgentCliRunRequest {
  readonly definition: AgentCliDefinition;
  readonly argv: readonly string[];
  /** Absolute working directory: the workspace the CLI may modify. */
  readonly cwd: string;
  /** Positive integer ms; default 600 000. */
  readonly timeoutMs?: number;
  /** Bytes retained per stream (the tail); default 1 MiB; 0 keeps nothing. */
  readonly maxOutputBytes?: number;
  /** The child's whole environment; default: inherit this process's. */
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
  /** Wait between SIGTERM and SIGKILL, ms; default 2000. */
  readonly killGraceMs?: number;
}

/** A successful run. `command` is a redacted display string, not an executable command line. */
export interface AgentCliExecResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly durationMs: number;
  readonly command: string;
}

/** Seams of the default executor, for hosts with their own process supervision and for tests. */
export interface SpawnAgentCliOptions {
  /** Sends `signal` to every process of group `pgid`; throws an errno error like `process.kill`. */
  readonly signalGroup?: (pgid: number, signal: NodeJS.Signals) => void;
  /** Whether group `pgid` still has a live (non-zombie) member. */
  readonly isGroupAlive?: (pgid: number) => boolean;
  /** How long to wait for the group to vanish after SIGKILL before TERMINATION_FAILED; default 5000 ms. */
  readonly terminationWaitMs?: number;
}

// ---------------------------------------------------------------------------------------------
// Output capture

/** Moves `start` forward past UTF-8 continuation bytes (10xxxxxx) so a tail never begins mid-character. */
function codePointStart(bytes: Buffer, start: number): number {
  let at = start;
  // A code point has at most three continuation bytes; past that the input was not UTF-8 anyway.
  for (let skipped = 0; skipped < 3 && at < bytes.length && ((bytes[at] ?? 0) & 0xc0) === 0x80; skipped += 1) at += 1;
  return at;
}

function tailOf(bytes: Buffer, maxBytes: number): Buffer {
  if (bytes.length <= maxBytes) return bytes;
  return bytes.subarray(codePointStart(bytes, bytes.length - maxBytes));
}

/** Keeps the last `maxBytes` of a byte stream in bounded memory and decodes once at the end. */
class Utf8Tail {
  private readonly chunks: Buffer[] = [];
  private held = 0;
  private seen = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    this.seen += chunk.length;
    if (this.maxBytes === 0) return;
    this.chunks.push(chunk);
    this.held += chunk.length;
    // Drop whole chunks that lie entirely before the tail; the cut inside the first kept chunk happens at decode time.
    for (let first = this.chunks[0]; first !== undefined && this.held - first.length >= this.maxBytes; first = this.chunks[0]) {
      this.chunks.shift();
      this.held -= first.length;
    }
  }

  get truncated(): boolean {
    return this.seen > this.maxBytes;
  }

  text(): string {
    return tailOf(Buffer.concat(this.chunks, this.held), this.maxBytes).toString('utf8');
  }
}

/** Applies the byte cap to text an executor returned (an injected one may not have). */
function capText(text: string, maxBytes: number): { text: string; truncated: boolean; bytes: number } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, truncated: false, bytes: bytes.length };
  const tail = tailOf(bytes, maxBytes);
  return { text: tail.toString('utf8'), truncated: true, bytes: tail.length };
}

// ---------------------------------------------------------------------------------------------
// Process group teardown

function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function defaultSignalGroup(pgid: number, signal: NodeJS.Signals): void {
  process.kill(-pgid, signal);
}

/**
 * Members of `pgid` that are not zombies, read from /proc; undefined when /proc cannot tell.
 * Needed because an orphaned grandchild stays a zombie until PID 1 reaps it, and a container
 * whose PID 1 never reaps would otherwise report every timeout as a termination failure.
 */
function liveMembersFromProc(pgid: number): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  let members = 0;
  let live = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // "pid (comm) state ppid pgrp ...": comm may contain spaces and parentheses, so split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) !== pgid) continue;
    members += 1;
    if (fields[0] !== 'Z' && fields[0] !== 'X') live += 1;
  }
  // Finding no member at all while kill(2) says the group exists means /proc does not show it: trust kill(2).
  return members === 0 ? undefined : live;
}

function defaultIsGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    // EPERM means the group exists but is not ours to signal: still alive.
    return errnoCode(error) !== 'ESRCH';
  }
  if (process.platform !== 'linux') return true;
  const live = liveMembersFromProc(pgid);
  return live === undefined || live > 0;
}

type Termination = { ok: true } | { ok: false; reason: AgentCliFailureReason; systemCode?: string };

interface GroupControl {
  readonly signalGroup: (pgid: number, signal: NodeJS.Signals) => void;
  readonly isGroupAlive: (pgid: number) => boolean;
  readonly terminationWaitMs: number;
}

async function waitUntilGone(pgid: number, control: GroupControl, withinMs: number): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    if (!control.isGroupAlive(pgid)) return true;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    await delay(Math.min(PROBE_INTERVAL_MS, left));
  }
}

/** SIGTERM to the group, SIGKILL after the grace period, then wait for the group to vanish. */
async function terminateGroup(pgid: number, control: GroupControl, graceMs: number): Promise<Termination> {
  for (const [signal, waitMs] of [
    ['SIGTERM', graceMs],
    ['SIGKILL', control.terminationWaitMs],
  ] as const) {
    try {
      control.signalGroup(pgid, signal);
    } catch (error) {
      const systemCode = errnoCode(error);
      if (systemCode === 'ESRCH') return { ok: true };
      return systemCode === undefined ? { ok: false, reason: 'kill-failed' } : { ok: false, reason: 'kill-failed', systemCode };
    }
    if (await waitUntilGone(pgid, control, waitMs)) return { ok: true };
  }
  return { ok: false, reason: 'group-still-running' };
}

// ---------------------------------------------------------------------------------------------
// Default executor

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

async function execute(spec: AgentCliExecSpec, control: GroupControl): Promise<AgentCliExecOutput> {
  // Tree teardown here relies on POSIX process groups; Windows would need a different mechanism.
  if (process.platform === 'win32') throw new AgentCliError('AGENT_CLI.SPAWN_FAILED', { reason: 'platform-unsupported' });
  if (spec.signal?.aborted === true) throw new AgentCliError('AGENT_CLI.ABORTED');

  let child: ChildProcess;
  try {
    // detached: the CLI leads a new process group (and session), so the whole tree can be signalled at once.
    child = spawn(spec.command, [...spec.argv], {
      cwd: spec.cwd,
      env: spec.env,
      shell: false,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
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

  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await started;
    const pgid = child.pid;
    if (pgid === undefined) throw new AgentCliError('AGENT_CLI.SPAWN_FAILED', { reason: 'exec-failed' });

    const stop = new Promise<'timeout' | 'abort'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), spec.timeoutMs);
      onAbort = () => resolve('abort');
      spec.signal?.addEventListener('abort', onAbort, { once: true });
      if (spec.signal?.aborted === true) resolve('abort');
    });
    const first = await Promise.race([exited.then(() => 'exit' as const), stop]);

    if (first === 'exit') {
      // The run is bounded: whatever the CLI left running in its group does not outlive it.
      try {
        control.signalGroup(pgid, 'SIGKILL');
      } catch {
        // ESRCH: nothing was left.
      }
      await bounded(closed, OUTPUT_DRAIN_MS);
      const exit = await exited;
      return { exitCode: exit.code, signal: exit.signal, stdout: stdout.text(), stderr: stderr.text(), stdoutTruncated: stdout.truncated, stderrTruncated: stderr.truncated };
    }

    const termination = await terminateGroup(pgid, control, spec.killGraceMs);
    if (!termination.ok) {
      const facts: AgentCliErrorMetadata = { timedOut: first === 'timeout', reason: termination.reason };
      throw new AgentCliError('AGENT_CLI.TERMINATION_FAILED', termination.systemCode === undefined ? facts : { ...facts, systemCode: termination.systemCode });
    }
    if (first === 'abort') throw new AgentCliError('AGENT_CLI.ABORTED');
    await bounded(closed, OUTPUT_DRAIN_MS);
    const exit = (await bounded(exited, OUTPUT_DRAIN_MS)) ?? { code: null, signal: null };
    return {
      exitCode: exit.code,
      signal: exit.signal,
      stdout: stdout.text(),
      stderr: stderr.text(),
      stdoutTruncated: stdout.truncated,
      stderrTruncated: stderr.truncated,
      timedOut: true,
    };
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) spec.signal?.removeEventListener('abort', onAbort);
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
}

/** Builds the default executor with its process-group seams replaced (tests, custom supervision). */
export function createSpawnAgentCli(options: SpawnAgentCliOptions = {}): AgentCliExec {
  readOptions('createSpawnAgentCli', options, ['signalGroup', 'isGroupAlive', 'terminationWaitMs']);
  const terminationWaitMs = options.terminationWaitMs ?? DEFAULT_TERMINATION_WAIT_MS;
  if (!Number.isSafeInteger(terminationWaitMs) || terminationWaitMs < 0 || terminationWaitMs > MAX_TIMER_MS) {
    throw new TypeError('terminationWaitMs must be a non-negative integer');
  }
  const control: GroupControl = {
    signalGroup: options.signalGroup ?? defaultSignalGroup,
    isGroupAlive: options.isGroupAlive ?? defaultIsGroupAlive,
    terminationWaitMs,
  };
  return (spec) => execute(spec, control);
}

/**
 * The default executor: spawns without a shell as a new process group with stdin closed, keeps the
 * UTF-8 tail of each stream, and at the deadline or on abort sends SIGTERM then SIGKILL to the group.
 */
export const spawnAgentCli: AgentCliExec = createSpawnAgentCli();

// ---------------------------------------------------------------------------------------------
// Runner

// A function rather than an inline test: TypeScript keeps a narrowed `aborted` across awaits, but the signal can flip meanwhile.
const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function integerIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
}

function validEnv(env: unknown): env is NodeJS.ProcessEnv {
  if (!isObject(env)) return false;
  return Object.entries(env).every(
    ([key, value]) => key !== '' && !key.includes('=') && !key.includes('\0') && (value === undefined || (typeof value === 'string' && !value.includes('\0'))),
  );
}

function toSpec(request: AgentCliRunRequest, cliId: string, command: string): AgentCliExecSpec {
  const refuse = (reason: AgentCliFailureReason): never => {
    throw new AgentCliError('AGENT_CLI.INPUT_INVALID', { cliId, reason });
  };
  const { argv, cwd, timeoutMs = DEFAULT_TIMEOUT_MS, maxOutputBytes = DEFAULT_MAX_OUTPUT_BYTES, killGraceMs = DEFAULT_KILL_GRACE_MS, env, signal } = request;
  if (!Array.isArray(argv) || !argv.every((arg) => typeof arg === 'string' && !arg.includes('\0'))) refuse('argv-invalid');
  if (typeof cwd !== 'string' || !isAbsolute(cwd) || cwd.includes('\0')) refuse('cwd-invalid');
  if (!integerIn(timeoutMs, 1, MAX_TIMER_MS)) refuse('timeout-invalid');
  if (!integerIn(maxOutputBytes, 0, MAX_OUTPUT_BYTES_LIMIT)) refuse('max-output-invalid');
  if (!integerIn(killGraceMs, 0, MAX_TIMER_MS)) refuse('kill-grace-invalid');
  if (env !== undefined && !validEnv(env)) refuse('env-invalid');
  if (signal !== undefined && !(signal instanceof AbortSignal)) refuse('signal-invalid');
  return Object.freeze({
    command,
    argv: Object.freeze([...argv]),
    cwd,
    // A copy: the executor must see the environment as it was when the run was requested.
    env: { ...(env ?? process.env) },
    timeoutMs,
    maxOutputBytes,
    signal,
    killGraceMs,
  });
}

function isExecOutput(value: unknown): value is AgentCliExecOutput {
  if (!isObject(value)) return false;
  const { exitCode, signal, stdout, stderr, stdoutTruncated, stderrTruncated, timedOut } = value;
  return (
    (exitCode === null || (typeof exitCode === 'number' && Number.isSafeInteger(exitCode))) &&
    (signal === null || typeof signal === 'string') &&
    typeof stdout === 'string' &&
    typeof stderr === 'string' &&
    typeof stdoutTruncated === 'boolean' &&
    typeof stderrTruncated === 'boolean' &&
    (timedOut === undefined || typeof timedOut === 'boolean') &&
    // A finished process has an exit code or a signal; neither means the executor lost track of it.
    (exitCode !== null || signal !== null || timedOut === true)
  );
}

/**
 * Runs an agent CLI and resolves with its capped output on exit code 0. Rejects with AgentCliError:
 * INPUT_INVALID, SPAWN_FAILED, TIMEOUT, TERMINATION_FAILED, ABORTED, KILLED_BY_SIGNAL or
 * NON_ZERO_EXIT, whose metadata never holds the prompt, argv, env or output. A malformed
 * definition is a TypeError.
 */
export async function runAgentCli(request: AgentCliRunRequest, exec: AgentCliExec = spawnAgentCli): Promise<AgentCliExecResult> {
  if (!isObject(request)) throw new AgentCliError('AGENT_CLI.INPUT_INVALID', { reason: 'input-invalid' });
  try {
    readOptions('runAgentCli', request, ['definition', 'argv', 'cwd', 'timeoutMs', 'maxOutputBytes', 'env', 'signal', 'killGraceMs']);
  } catch {
    throw new AgentCliError('AGENT_CLI.INPUT_INVALID', { reason: 'unknown-option' });
  }
  const definition = defineAgentCli(request.definition);
  const cliId = definition.id;
  const spec = toSpec(request, cliId, definition.command);
  const command = redactCommand(definition.command, spec.argv);
  if (isAborted(spec.signal)) throw new AgentCliError('AGENT_CLI.ABORTED', { cliId, durationMs: 0 });

  const startedAt = performance.now();
  let output: unknown;
  try {
    output = await exec(spec);
  } catch (error) {
    const durationMs = performance.now() - startedAt;
    if (error instanceof AgentCliError) throw new AgentCliError(error.code, { ...error.metadata, cliId, durationMs });
    if (isAborted(spec.signal)) throw new AgentCliError('AGENT_CLI.ABORTED', { cliId, durationMs });
    // Anything else an executor throws is opaque and may quote the prompt, so only the fact survives.
    throw new AgentCliError('AGENT_CLI.SPAWN_FAILED', { cliId, durationMs, reason: 'exec-failed' });
  }
  const durationMs = Math.round(performance.now() - startedAt);
  if (!isExecOutput(output)) throw new AgentCliError('AGENT_CLI.SPAWN_FAILED', { cliId, durationMs, reason: 'exec-result-invalid' });

  const stdout = capText(output.stdout, spec.maxOutputBytes);
  const stderr = capText(output.stderr, spec.maxOutputBytes);
  const stdoutTruncated = output.stdoutTruncated || stdout.truncated;
  const stderrTruncated = output.stderrTruncated || stderr.truncated;
  const facts: AgentCliErrorMetadata = {
    cliId,
    exitCode: output.exitCode,
    signal: output.signal,
    durationMs,
    timedOut: output.timedOut === true,
    stdoutBytes: stdout.bytes,
    stderrBytes: stderr.bytes,
    stdoutTruncated,
    stderrTruncated,
  };
  if (output.timedOut === true) throw new AgentCliError('AGENT_CLI.TIMEOUT', facts);
  // The caller no longer wants the result, even if the executor finished regardless.
  if (isAborted(spec.signal)) throw new AgentCliError('AGENT_CLI.ABORTED', facts);
  if (output.signal !== null) throw new AgentCliError('AGENT_CLI.KILLED_BY_SIGNAL', facts);
  if (output.exitCode !== 0) throw new AgentCliError('AGENT_CLI.NON_ZERO_EXIT', facts);

  return {
    exitCode: output.exitCode,
    signal: null,
    stdout: stdout.text,
    stderr: stderr.text,
    stdoutTruncated,
    stderrTruncated,
    durationMs,
    command,
  };
}
