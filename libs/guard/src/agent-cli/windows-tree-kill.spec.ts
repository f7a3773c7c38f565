import { describe, expect, it } from '@jest/globals';
import { type ChildProcess, type SpawnOptions } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { buildArgv } from './argv.js';
import { CODEX_CLI } from './definitions.js';
import { AgentCliError } from './errors.js';
import { resolveTaskkill } from './process-tree.js';
import { type AgentCliSpawn, createSpawnAgentCli, runAgentCli } from './run-cli.js';

// The default executor on Windows, driven with an injected platform and spawner (no Windows here):
// at the deadline or on abort the CLI's tree is ended with `taskkill /pid <pid> /T /F`, run from an
// absolute path under the system root resolved before the CLI starts.

type Behaviour = 'hang' | 'exit-0';
type Killer = { exitCode: number } | { spawnError: string } | 'never-exits';

interface Spawned {
  readonly command: string;
  readonly args: readonly string[];
  readonly options: SpawnOptions;
}

/** A fake spawner: the CLI behaves as `cli` says, taskkill as `killer` says (and ends the CLI on success). */
function fakeWindows(cli: Behaviour, killer: Killer = { exitCode: 0 }) {
  const spawned: Spawned[] = [];
  let running: EventEmitter | undefined;
  const spawn: AgentCliSpawn = (command, args, options) => {
    spawned.push({ command, args: [...args], options });
    const child = Object.assign(new EventEmitter(), { pid: 4242 + spawned.length - 1, stdout: new PassThrough(), stderr: new PassThrough() });
    const isKiller = command.toLowerCase().endsWith('taskkill.exe');
    if (isKiller && typeof killer === 'object' && 'spawnError' in killer) throw Object.assign(new Error(`spawn ${command} ENOENT`), { code: killer.spawnError });
    setImmediate(() => {
      child.emit('spawn');
      if (!isKiller) {
        running = child;
        if (cli === 'exit-0') {
          child.stdout.end('finished');
          child.stderr.end();
          child.emit('exit', 0, null);
          child.emit('close');
        }
        return;
      }
      if (killer === 'never-exits') return;
      const code = (killer as { exitCode: number }).exitCode;
      if (code === 0 && running) {
        // /F ends the tree: the CLI exits with code 1 and no signal, as a forced exit does on Windows.
        running.emit('exit', 1, null);
        running.emit('close');
      }
      child.emit('exit', code, null);
    });
    return child as unknown as ChildProcess;
  };
  return { spawn, spawned };
}

const SYSTEM = { SystemRoot: 'C:\\Windows' };
const request = (overrides: Record<string, unknown> = {}) => ({ definition: CODEX_CLI, argv: buildArgv(CODEX_CLI, { prompt: 'secret task prompt' }), cwd: '/work', timeoutMs: 50, ...overrides });

async function failure(promise: Promise<unknown>): Promise<AgentCliError> {
  const error = await promise.then(() => new Error('expected a failure'), (e: unknown) => e);
  expect(error).toBeInstanceOf(AgentCliError);
  return error as AgentCliError;
}

describe('the default executor on win32', () => {
  it('ends the tree at the deadline with taskkill.exe under the system root, /pid <pid> /T /F, no shell, hidden window', async () => {
    const { spawn, spawned } = fakeWindows('hang');
    const exec = createSpawnAgentCli({ platform: 'win32', spawn, processEnv: SYSTEM });
    const error = await failure(runAgentCli(request(), exec));
    expect(error.code).toBe('AGENT_CLI.TIMEOUT');
    expect(spawned.map((s) => [s.command, s.args])).toEqual([
      ['codex', ['exec', '--sandbox=workspace-write', '--skip-git-repo-check', '--', 'secret task prompt']],
      ['C:\\Windows\\System32\\taskkill.exe', ['/pid', '4242', '/T', '/F']],
    ]);
    expect(spawned[0]?.options).toMatchObject({ shell: false, detached: false, windowsHide: true });
    expect(spawned[1]?.options).toMatchObject({ shell: false, windowsHide: true });
  });

  it('ends the tree on abort too, and rejects with ABORTED', async () => {
    const { spawn, spawned } = fakeWindows('hang');
    const controller = new AbortController();
    const run = runAgentCli(request({ timeoutMs: 60_000, signal: controller.signal }), createSpawnAgentCli({ platform: 'win32', spawn, processEnv: SYSTEM }));
    setTimeout(() => controller.abort(), 20);
    expect((await failure(run)).code).toBe('AGENT_CLI.ABORTED');
    expect(spawned[1]?.args).toEqual(['/pid', '4242', '/T', '/F']);
  });

  it('runs no taskkill after a normal exit', async () => {
    const { spawn, spawned } = fakeWindows('exit-0');
    const result = await runAgentCli(request({ timeoutMs: 5_000 }), createSpawnAgentCli({ platform: 'win32', spawn, processEnv: SYSTEM }));
    expect(result.stdout).toBe('finished');
    expect(spawned).toHaveLength(1);
  });

  it.each([
    ['a non-zero exit', { exitCode: 128 }, { reason: 'taskkill-failed', exitCode: 128 }],
    ['a spawn failure', { spawnError: 'ENOENT' }, { reason: 'taskkill-failed', systemCode: 'ENOENT' }],
    ['no exit within the termination wait', 'never-exits' as const, { reason: 'taskkill-failed' }],
  ])('reports TERMINATION_FAILED when taskkill ends with %s, naming the method and nothing of the run', async (_what, killer, facts) => {
    const { spawn } = fakeWindows('hang', killer);
    const error = await failure(runAgentCli(request(), createSpawnAgentCli({ platform: 'win32', spawn, processEnv: SYSTEM, terminationWaitMs: 100 })));
    expect(error.code).toBe('AGENT_CLI.TERMINATION_FAILED');
    expect(error.metadata).toMatchObject({ ...facts, timedOut: true, terminationMethod: 'taskkill', cliId: 'agent-cli.codex' });
    expect(JSON.stringify([error, error.toJSON(), error.message])).not.toMatch(/secret task prompt|taskkill\.exe|Windows/);
  });

  it('fails with runtime-unavailable before the CLI starts when no system root is usable', async () => {
    for (const processEnv of [{}, { SystemRoot: 'Windows' }, { SystemRoot: '\\Windows' }, { SystemRoot: '\\\\fileserver\\share\\Windows' }, { SystemRoot: '\\\\?\\C:\\Windows' }, { SystemRoot: 'C:\\Users\\x\\..\\Windows' }]) {
      const { spawn, spawned } = fakeWindows('hang');
      const error = await failure(runAgentCli(request(), createSpawnAgentCli({ platform: 'win32', spawn, processEnv })));
      expect(error.code).toBe('AGENT_CLI.SPAWN_FAILED');
      expect(error.metadata.reason).toBe('runtime-unavailable');
      expect(spawned).toHaveLength(0);
    }
  });
});

describe('resolveTaskkill', () => {
  it('takes SystemRoot, else WINDIR, in any letter case, as a drive-absolute local path', () => {
    expect(resolveTaskkill({ SystemRoot: 'C:\\Windows' })).toBe('C:\\Windows\\System32\\taskkill.exe');
    expect(resolveTaskkill({ SYSTEMROOT: 'D:/Win' })).toBe('D:\\Win\\System32\\taskkill.exe');
    expect(resolveTaskkill({ SystemRoot: '\\\\server\\share', windir: 'C:\\Windows' })).toBe('C:\\Windows\\System32\\taskkill.exe');
    expect(resolveTaskkill({ PATH: 'C:\\tools' })).toBeUndefined();
  });

  it('refuses createSpawnAgentCli seams that are not functions, and options it does not know', () => {
    expect(() => createSpawnAgentCli({ spawn: 'cmd.exe' } as never)).toThrow(/spawn must be a function/);
    expect(() => createSpawnAgentCli({ taskkillPath: 'C:\\taskkill.exe' } as never)).toThrow(/unknown option "taskkillPath"/);
  });
});
