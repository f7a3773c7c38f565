// Tearing down the whole process tree of an agent CLI at its deadline or on abort: on POSIX the CLI
// leads a process group that is signalled at once (SIGTERM, then SIGKILL); on Windows there are no
// process groups, so `taskkill /pid <pid> /T /F` ends the tree, run from an absolute path under the
// system root resolved before the CLI starts (a PATH entry, the working directory or a network
// share must never be able to stand in for it).
import { type ChildProcess, spawn as nodeSpawn, type SpawnOptions } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { win32 } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { type AgentCliFailureReason, type AgentCliTerminationMethod } from './errors.js';

const PROBE_INTERVAL_MS = 25;

/** How a teardown ended; a failure says why with a fixed reason and, at most, an errno code and exit code. */
export type Termination = { ok: true } | { ok: false; reason: AgentCliFailureReason; systemCode?: string; exitCode?: number | null };

/** The spawner the executor uses (Node's `spawn`), injectable for hosts and tests. */
export type AgentCliSpawn = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

/** One platform's way to end a CLI's process tree. */
export interface TreeTeardown {
  readonly method: AgentCliTerminationMethod;
  /** Whether the CLI must be spawned detached (a new POSIX process group and session). */
  readonly detached: boolean;
  /** After a normal exit: ends what the CLI left running, best effort. */
  afterExit(pid: number): void;
  /** At the deadline or on abort: ends the whole tree and waits until it is gone. */
  terminate(pid: number, graceMs: number): Promise<Termination>;
}

export function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

// ---------------------------------------------------------------------------------------------
// POSIX: a process group

export interface GroupControl {
  /** Sends `signal` to every process of group `pgid`; throws an errno error like `process.kill`. */
  readonly signalGroup: (pgid: number, signal: NodeJS.Signals) => void;
  /** Whether group `pgid` still has a live (non-zombie) member. */
  readonly isGroupAlive: (pgid: number) => boolean;
  /** How long to wait for the group to vanish after SIGKILL (and for taskkill to finish). */
  readonly terminationWaitMs: number;
}

export function defaultSignalGroup(pgid: number, signal: NodeJS.Signals): void {
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

export function defaultIsGroupAlive(pgid: number): boolean {
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

/** The POSIX teardown: the CLI leads its own process group, signalled as a whole. */
export function processGroupTeardown(control: GroupControl): TreeTeardown {
  return {
    method: 'process-group',
    detached: true,
    afterExit(pgid) {
      // The run is bounded: whatever the CLI left running in its group does not outlive it.
      try {
        control.signalGroup(pgid, 'SIGKILL');
      } catch {
        // ESRCH: nothing was left.
      }
    },
    terminate: (pgid, graceMs) => terminateGroup(pgid, control, graceMs),
  };
}

// ---------------------------------------------------------------------------------------------
// Windows: taskkill /T /F

/** A drive-absolute local path (`C:\Windows`): not relative, root-relative, UNC or a device path. */
const DRIVE_ABSOLUTE = /^[A-Za-z]:[\\/]/;
// eslint-disable-next-line no-control-regex
const UNSAFE_PATH = /[\u0000-\u001f"<>|?*]/;

/** Reads a variable the way Windows does: its name in any case. */
function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const key = Object.keys(env).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : env[key];
}

/**
 * The absolute path of `taskkill.exe` under `%SystemRoot%` (else `%WINDIR%`), or undefined when
 * neither is a drive-absolute local path without `..` segments.
 */
export function resolveTaskkill(env: NodeJS.ProcessEnv): string | undefined {
  for (const name of ['SystemRoot', 'WINDIR']) {
    const root = envValue(env, name);
    if (root === undefined || !DRIVE_ABSOLUTE.test(root) || UNSAFE_PATH.test(root.slice(2)) || root.split(/[\\/]/).includes('..')) continue;
    return win32.join(root, 'System32', 'taskkill.exe');
  }
  return undefined;
}

/** Runs taskkill on the tree of `pid` and waits for it, at most `waitMs`. */
function runTaskkill(taskkill: string, pid: number, spawn: AgentCliSpawn, waitMs: number): Promise<Termination> {
  return new Promise<Termination>((resolve) => {
    let killer: ChildProcess;
    try {
      killer = spawn(taskkill, ['/pid', String(pid), '/T', '/F'], { shell: false, windowsHide: true, stdio: 'ignore' });
    } catch (error) {
      const systemCode = errnoCode(error);
      resolve(systemCode === undefined ? { ok: false, reason: 'taskkill-failed' } : { ok: false, reason: 'taskkill-failed', systemCode });
      return;
    }
    const timer = setTimeout(() => resolve({ ok: false, reason: 'taskkill-failed' }), waitMs);
    killer.once('error', (error) => {
      clearTimeout(timer);
      const systemCode = errnoCode(error);
      resolve(systemCode === undefined ? { ok: false, reason: 'taskkill-failed' } : { ok: false, reason: 'taskkill-failed', systemCode });
    });
    killer.once('exit', (code) => {
      clearTimeout(timer);
      // Any non-zero exit is a failure, "not found" included: the tree's end is not proven.
      resolve(code === 0 ? { ok: true } : { ok: false, reason: 'taskkill-failed', exitCode: code });
    });
  });
}

/** The Windows teardown: `<system root>\System32\taskkill.exe /pid <pid> /T /F`, no shell, hidden window. */
export function taskkillTeardown(taskkill: string, spawn: AgentCliSpawn, waitMs: number): TreeTeardown {
  return {
    method: 'taskkill',
    detached: false,
    // A process that exited is no longer the root of a tree taskkill can find: nothing to end.
    afterExit: () => undefined,
    terminate: (pid) => runTaskkill(taskkill, pid, spawn, waitMs),
  };
}

/** Node's spawn, as the default spawner. */
export const defaultSpawn: AgentCliSpawn = (command, args, options) => nodeSpawn(command, [...args], options);
