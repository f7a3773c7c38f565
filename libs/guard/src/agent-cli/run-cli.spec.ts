import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { inspect } from 'node:util';
import { buildArgv } from './argv.js';
import { defineAgentCli } from './definitions.js';
import { AgentCliError, type AgentCliErrorCode } from './errors.js';
import { type AgentCliExec, type AgentCliExecSpec, type AgentCliRunRequest, createSpawnAgentCli, runAgentCli } from './run-cli.js';

const FAKE_CLI_PATH = fileURLToPath(new URL('./testing/fake-cli.mjs', import.meta.url));

const FAKE_CLI = defineAgentCli({
  id: 'agent-cli.fake',
  command: process.execPath,
  baseArgs: [FAKE_CLI_PATH],
  options: { model: { flag: '--model', kind: 'string', pattern: /[a-z0-9.-]+/ } },
  hosts: [],
});

const SECRET_PROMPT = 'SECRET-PROMPT do not leak';

let workdir: string;
const pidsToReap = new Set<number>();

beforeAll(() => {
  workdir = mkdtempSync(join(tmpdir(), 'gatehouse-agent-cli-'));
});

afterAll(() => {
  // Safety net only: each test already proves its processes are gone.
  for (const pid of pidsToReap) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(workdir, { recursive: true, force: true });
});

let pidFiles = 0;
const newPidFile = (): string => join(workdir, `pid-${(pidFiles += 1)}`);

/** Environment of the fake CLI: the host's, plus its behaviour switches. */
function fakeEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...vars };
}

function request(prompt: string, overrides: Partial<AgentCliRunRequest> = {}, options?: Record<string, string>): AgentCliRunRequest {
  return { definition: FAKE_CLI, argv: buildArgv(FAKE_CLI, options === undefined ? { prompt } : { prompt, options }), cwd: workdir, ...overrides };
}

async function waitFor(condition: () => boolean, withinMs: number, what: string): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

async function readPid(file: string): Promise<number> {
  await waitFor(() => existsSync(file), 5_000, 'the pid file');
  const pid = Number(readFileSync(file, 'utf8'));
  pidsToReap.add(pid);
  return pid;
}

// An orphaned grandchild is reaped by PID 1, which may take a moment after it died.
const expectGone = (pid: number): Promise<void> => waitFor(() => isGone(pid), 8_000, `process ${pid} to disappear`);

async function failure(promise: Promise<unknown>, code: AgentCliErrorCode): Promise<AgentCliError> {
  const error = await promise.then(
    () => {
      throw new Error(`expected ${code}`);
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentCliError);
  expect((error as AgentCliError).code).toBe(code);
  return error as AgentCliError;
}

/** Every surface a log line or API response could render. */
function everySurface(error: AgentCliError): string {
  return [
    error.message,
    JSON.stringify(error),
    JSON.stringify(error.toJSON()),
    JSON.stringify(error.metadata),
    JSON.stringify(error.details),
    inspect(error, { depth: 10 }),
    String(error.cause),
  ].join('\n');
}

function parseReport(stdout: string): { argv: string[]; cwd: string } {
  return JSON.parse(stdout.split('\n')[0] ?? '') as { argv: string[]; cwd: string };
}

describe('runAgentCli with the default executor', () => {
  it('passes "--" then the prompt as the final element, binds options with "=", and runs in cwd', async () => {
    const prompt = '--dangerously-skip-permissions\nand "quotes"';
    const result = await runAgentCli(request(prompt, {}, { model: 'fake-1' }));
    const report = parseReport(result.stdout);
    expect(report.argv).toEqual(['--model=fake-1', '--', prompt]);
    expect(report.cwd).toBe(workdir);
    expect(result).toMatchObject({ exitCode: 0, signal: null, stderr: '', stdoutTruncated: false, stderrTruncated: false });
    expect(result.command).toBe(`${process.execPath} ${FAKE_CLI_PATH} --model=<redacted> -- <prompt>`);
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('kills the CLI and its grandchild at the timeout', async () => {
    const pidFile = newPidFile();
    const run = runAgentCli(request(SECRET_PROMPT, { timeoutMs: 1_500, killGraceMs: 500, env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'sleep-with-child', GATEHOUSE_FAKE_CLI_PIDFILE: pidFile }) }));
    // The expectation is attached first, so a slow start cannot leave the rejection unhandled.
    const failed = failure(run, 'AGENT_CLI.TIMEOUT');
    const grandchild = await readPid(pidFile);
    const error = await failed;
    expect(error.metadata).toMatchObject({ cliId: 'agent-cli.fake', timedOut: true, exitCode: null, signal: 'SIGTERM' });
    expect(error.metadata.durationMs).toBeGreaterThanOrEqual(1_500);
    await expectGone(grandchild);
  });

  it('escalates to SIGKILL when the CLI ignores SIGTERM', async () => {
    const pidFile = newPidFile();
    const run = runAgentCli(request('p', { timeoutMs: 1_000, killGraceMs: 300, env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'ignore-term', GATEHOUSE_FAKE_CLI_PIDFILE: pidFile }) }));
    const failed = failure(run, 'AGENT_CLI.TIMEOUT');
    const pid = await readPid(pidFile);
    const error = await failed;
    expect(error.metadata).toMatchObject({ timedOut: true, signal: 'SIGKILL' });
    expect(error.metadata.durationMs).toBeGreaterThanOrEqual(1_300);
    expect(isGone(pid)).toBe(true);
  });

  it('kills what the CLI left running in its group after a normal exit', async () => {
    const pidFile = newPidFile();
    const result = await runAgentCli(request('p', { env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'exit-with-child', GATEHOUSE_FAKE_CLI_PIDFILE: pidFile }) }));
    expect(result.exitCode).toBe(0);
    await expectGone(await readPid(pidFile));
  });

  it.each([1_000, 1_001, 1_002, 1_003, 1_004, 1_005, 1_006, 1_007, 1_008])(
    'keeps a tail of at most %i bytes that starts on a code-point boundary',
    async (maxOutputBytes) => {
      const result = await runAgentCli(request('p', { maxOutputBytes, env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'big-output', GATEHOUSE_FAKE_CLI_BYTES: '100000' }) }));
      for (const [text, truncated] of [
        [result.stdout, result.stdoutTruncated],
        [result.stderr, result.stderrTruncated],
      ] as const) {
        expect(truncated).toBe(true);
        expect(Buffer.byteLength(text)).toBeLessThanOrEqual(maxOutputBytes);
        expect(Buffer.byteLength(text)).toBeGreaterThan(maxOutputBytes - 4);
        expect(text).not.toContain('\uFFFD');
        expect(text.endsWith('é€😀')).toBe(true);
        expect(['é', '€', '😀']).toContain(String.fromCodePoint(text.codePointAt(0) ?? 0));
      }
    },
  );

  it('retains nothing with a zero cap but still reports truncation', async () => {
    const result = await runAgentCli(request('p', { maxOutputBytes: 0 }));
    expect(result).toMatchObject({ stdout: '', stdoutTruncated: true, stderr: '', stderrTruncated: false });
  });

  it('rejects a non-zero exit with NON_ZERO_EXIT and no prompt, stdout or stderr in the error', async () => {
    const error = await failure(
      runAgentCli(request(SECRET_PROMPT, { env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'exit-code', GATEHOUSE_FAKE_CLI_EXIT: '3' }) }, { model: 'private-model' })),
      'AGENT_CLI.NON_ZERO_EXIT',
    );
    expect(error.metadata).toMatchObject({ cliId: 'agent-cli.fake', exitCode: 3, signal: null, timedOut: false, stdoutTruncated: false, stderrTruncated: false });
    expect(error.metadata.stdoutBytes).toBeGreaterThan(0);
    expect(error.metadata.stderrBytes).toBeGreaterThan(0);
    expect(error.category).toBe('internal');
    const surfaces = everySurface(error);
    for (const leak of ['SECRET-PROMPT', 'private-model', 'failing on purpose', '"argv"', FAKE_CLI_PATH]) expect(surfaces).not.toContain(leak);
  });

  it('rejects a CLI killed by a signal it did not get from the runner with KILLED_BY_SIGNAL', async () => {
    const pidFile = newPidFile();
    const run = runAgentCli(request('p', { timeoutMs: 10_000, env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'ignore-term', GATEHOUSE_FAKE_CLI_PIDFILE: pidFile }) }));
    process.kill(await readPid(pidFile), 'SIGKILL');
    const error = await failure(run, 'AGENT_CLI.KILLED_BY_SIGNAL');
    expect(error.metadata).toMatchObject({ signal: 'SIGKILL', exitCode: null, timedOut: false });
  });

  it('reports a missing command as SPAWN_FAILED without its path or argv', async () => {
    const missing = defineAgentCli({ ...FAKE_CLI, id: 'agent-cli.missing', command: '/nonexistent/gatehouse-missing-cli' });
    const error = await failure(runAgentCli({ definition: missing, argv: buildArgv(missing, { prompt: SECRET_PROMPT }), cwd: workdir }), 'AGENT_CLI.SPAWN_FAILED');
    expect(error.metadata).toMatchObject({ cliId: 'agent-cli.missing', systemCode: 'ENOENT' });
    const surfaces = everySurface(error);
    for (const leak of ['SECRET-PROMPT', 'gatehouse-missing-cli', FAKE_CLI_PATH]) expect(surfaces).not.toContain(leak);
  });

  it('reports a missing command name on PATH as SPAWN_FAILED', async () => {
    const missing = defineAgentCli({ ...FAKE_CLI, id: 'agent-cli.missing', command: 'gatehouse-missing-cli' });
    const error = await failure(runAgentCli({ definition: missing, argv: buildArgv(missing, { prompt: 'p' }), cwd: workdir }), 'AGENT_CLI.SPAWN_FAILED');
    expect(error.metadata.systemCode).toBe('ENOENT');
  });

  it('reports a missing working directory as SPAWN_FAILED', async () => {
    const error = await failure(runAgentCli(request('p', { cwd: join(workdir, 'does-not-exist') })), 'AGENT_CLI.SPAWN_FAILED');
    expect(error.metadata.systemCode).toBe('ENOENT');
  });

  it('stops the process tree on abort and rejects with ABORTED', async () => {
    const pidFile = newPidFile();
    const controller = new AbortController();
    const run = runAgentCli(request('p', { signal: controller.signal, env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'sleep-with-child', GATEHOUSE_FAKE_CLI_PIDFILE: pidFile }) }));
    const grandchild = await readPid(pidFile);
    controller.abort();
    const error = await failure(run, 'AGENT_CLI.ABORTED');
    expect(error.metadata.cliId).toBe('agent-cli.fake');
    await expectGone(grandchild);
  });

  it('reports TERMINATION_FAILED when the group is still there after SIGKILL', async () => {
    const pidFile = newPidFile();
    // The signals are real, so the process does die; only the liveness probe is made to lie.
    const exec = createSpawnAgentCli({ isGroupAlive: () => true, terminationWaitMs: 200 });
    const run = runAgentCli(request('p', { timeoutMs: 1_000, killGraceMs: 100, env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'ignore-term', GATEHOUSE_FAKE_CLI_PIDFILE: pidFile }) }), exec);
    const failed = failure(run, 'AGENT_CLI.TERMINATION_FAILED');
    const pid = await readPid(pidFile);
    const error = await failed;
    expect(error.metadata).toMatchObject({ cliId: 'agent-cli.fake', timedOut: true, reason: 'group-still-running' });
    expect(error.category).toBe('security');
    await expectGone(pid);
  });

  it('reports TERMINATION_FAILED with the errno when the group cannot be signalled', async () => {
    const pidFile = newPidFile();
    const exec = createSpawnAgentCli({
      signalGroup: () => {
        throw Object.assign(new Error('kill EPERM'), { code: 'EPERM' });
      },
    });
    const run = runAgentCli(request('p', { timeoutMs: 1_000, env: fakeEnv({ GATEHOUSE_FAKE_CLI_MODE: 'ignore-term', GATEHOUSE_FAKE_CLI_PIDFILE: pidFile }) }), exec);
    const failed = failure(run, 'AGENT_CLI.TERMINATION_FAILED');
    const pid = await readPid(pidFile);
    try {
      const error = await failed;
      expect(error.metadata).toMatchObject({ reason: 'kill-failed', systemCode: 'EPERM', timedOut: true });
    } finally {
      process.kill(-pid, 'SIGKILL');
    }
    await expectGone(pid);
  });
});

describe('runAgentCli with an injected executor', () => {
  const ok = { exitCode: 0, signal: null, stdout: 'done', stderr: '', stdoutTruncated: false, stderrTruncated: false };
  const missing = defineAgentCli({ ...FAKE_CLI, id: 'agent-cli.remote', command: '/nonexistent/remote-cli' });
  const remote = (overrides: Partial<AgentCliRunRequest> = {}): AgentCliRunRequest => ({
    definition: missing,
    argv: buildArgv(missing, { prompt: SECRET_PROMPT, options: { model: 'm-1' } }),
    cwd: '/srv/workspace',
    ...overrides,
  });

  it('calls the executor instead of spawning, with a validated and defaulted spec', async () => {
    const seen: AgentCliExecSpec[] = [];
    const exec: AgentCliExec = async (spec) => {
      seen.push(spec);
      return ok;
    };
    const result = await runAgentCli(remote({ env: { PATH: '/usr/bin' } }), exec);
    expect(result).toMatchObject({ exitCode: 0, stdout: 'done', command: `/nonexistent/remote-cli ${FAKE_CLI_PATH} --model=<redacted> -- <prompt>` });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      command: '/nonexistent/remote-cli',
      argv: [FAKE_CLI_PATH, '--model=m-1', '--', SECRET_PROMPT],
      cwd: '/srv/workspace',
      env: { PATH: '/usr/bin' },
      timeoutMs: 600_000,
      maxOutputBytes: 1024 * 1024,
      killGraceMs: 2_000,
      signal: undefined,
    });
  });

  it('applies the byte cap to what the executor returned', async () => {
    const exec: AgentCliExec = async () => ({ ...ok, stdout: 'é€😀'.repeat(10), stderr: 'x'.repeat(50) });
    const result = await runAgentCli(remote({ maxOutputBytes: 16 }), exec);
    expect(result.stdout).toBe('€😀é€😀');
    expect(result).toMatchObject({ stdoutTruncated: true, stderr: 'x'.repeat(16), stderrTruncated: true });
  });

  it('maps a reported timeout to TIMEOUT and a foreign signal to KILLED_BY_SIGNAL', async () => {
    await failure(runAgentCli(remote(), async () => ({ ...ok, exitCode: null, signal: 'SIGTERM', timedOut: true })), 'AGENT_CLI.TIMEOUT');
    const killed = await failure(runAgentCli(remote(), async () => ({ ...ok, exitCode: null, signal: 'SIGSEGV' })), 'AGENT_CLI.KILLED_BY_SIGNAL');
    expect(killed.metadata.signal).toBe('SIGSEGV');
  });

  it('turns an opaque executor error into SPAWN_FAILED without its message', async () => {
    const error = await failure(
      runAgentCli(remote(), async (spec) => {
        throw new Error(`could not run ${spec.argv.join(' ')}`);
      }),
      'AGENT_CLI.SPAWN_FAILED',
    );
    expect(error.metadata).toMatchObject({ cliId: 'agent-cli.remote', reason: 'exec-failed' });
    expect(everySurface(error)).not.toContain('SECRET-PROMPT');
  });

  it('re-issues an executor AgentCliError with the cli id and only sanitized metadata', async () => {
    const exec: AgentCliExec = async () => {
      throw new AgentCliError('AGENT_CLI.TERMINATION_FAILED', { timedOut: true, systemCode: 'EPERM', reason: SECRET_PROMPT as never, cliId: 'Not Valid' });
    };
    const error = await failure(runAgentCli(remote(), exec), 'AGENT_CLI.TERMINATION_FAILED');
    expect(error.metadata).toEqual({ cliId: 'agent-cli.remote', timedOut: true, systemCode: 'EPERM', durationMs: expect.any(Number) });
  });

  it('refuses a malformed executor result', async () => {
    const error = await failure(runAgentCli(remote(), async () => ({ exitCode: null, signal: null, stdout: SECRET_PROMPT }) as never), 'AGENT_CLI.SPAWN_FAILED');
    expect(error.metadata.reason).toBe('exec-result-invalid');
  });

  it('rejects with ABORTED without calling the executor when the signal is already aborted', async () => {
    let calls = 0;
    const exec: AgentCliExec = async () => {
      calls += 1;
      return ok;
    };
    await failure(runAgentCli(remote({ signal: AbortSignal.abort() }), exec), 'AGENT_CLI.ABORTED');
    expect(calls).toBe(0);
  });

  it.each([
    ['a relative cwd', { cwd: 'workspace' }, 'cwd-invalid'],
    ['a zero timeout', { timeoutMs: 0 }, 'timeout-invalid'],
    ['a fractional timeout', { timeoutMs: 1.5 }, 'timeout-invalid'],
    ['a timeout beyond the timer range', { timeoutMs: 2 ** 31 }, 'timeout-invalid'],
    ['a negative output cap', { maxOutputBytes: -1 }, 'max-output-invalid'],
    ['a NaN kill grace', { killGraceMs: Number.NaN }, 'kill-grace-invalid'],
    ['a NUL byte in argv', { argv: ['a\0b'] }, 'argv-invalid'],
    ['a NUL byte in env', { env: { SECRET: 'a\0b' } }, 'env-invalid'],
  ] as const)('refuses %s before running anything', async (_label, overrides, reason) => {
    let calls = 0;
    const exec: AgentCliExec = async () => {
      calls += 1;
      return ok;
    };
    const error = await failure(runAgentCli(remote(overrides as Partial<AgentCliRunRequest>), exec), 'AGENT_CLI.INPUT_INVALID');
    expect(error.metadata).toEqual({ cliId: 'agent-cli.remote', reason });
    expect(calls).toBe(0);
  });
});
