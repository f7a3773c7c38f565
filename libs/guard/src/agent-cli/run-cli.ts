import { readOptions } from '@gatehouse/contracts';
import { isAbsolute } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type AgentCliDefinition, redactCommand } from './argv.js';
import { defineAgentCli } from './definitions.js';
import { AgentCliError, type AgentCliErrorMetadata, type AgentCliFailureReason } from './errors.js';
import { capText } from './output-tail.js';
import { spawnAgentCli } from './spawn-executor.js';
import { MAX_TIMER_MS } from '../policy-engine/policies/validation.js';

export { createSpawnAgentCli, spawnAgentCli, type SpawnAgentCliOptions } from './spawn-executor.js';
export { type AgentCliSpawn } from './process-tree.js';

/** Default deadline of one run: ten minutes. */
export const DEFAULT_TIMEOUT_MS = 600_000;
/** Default bytes retained per output stream: the last 1 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** Default wait between SIGTERM and SIGKILL of the process group. */
export const DEFAULT_KILL_GRACE_MS = 2_000;
/** Largest accepted `maxOutputBytes`, so a typo cannot make the host buffer gigabytes. */
export const MAX_OUTPUT_BYTES_LIMIT = 64 * 1024 * 1024;


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
