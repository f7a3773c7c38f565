// Verdict replay after a crash (Duraton's semantics, issue 20): a guarded run whose verdicts are
// journaled in a durable Mastra storage is killed (SIGKILL) inside a tool, and a second process
// resumes the same run from the same storage. It gets every recorded verdict back without asking
// the guardrail again (its calls are counted in a file each process flushes), and an attacker who
// resumes the run with other arguments for an allowed call is judged again and refused.
import { afterAll, describe, expect, it } from '@jest/globals';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const here = path.join(import.meta.dirname, 'replay-testing');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function freshDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-verdict-replay-'));
  dirs.push(dir);
  return dir;
}

interface Started {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(dir: string, runId: string, env: Record<string, string>): Started {
  const child = spawn(process.execPath, ['--conditions=@gatehouse/source', '--import', path.join(here, 'register-ts.mjs'), path.join(here, 'resume-child.testing.ts'), dir, runId], {
    cwd: here,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => { out += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { err += chunk.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Waits until the child printed `line` (polling its output, with a deadline), or fails with what it said. */
async function waitFor(started: Started, line: string, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  let exited = false;
  void started.exited.then(() => { exited = true; });
  while (!started.stdout().includes(line)) {
    if (exited || Date.now() > until) throw new Error(`child never printed ${line}; stderr: ${started.stderr().slice(-2_000)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0) : []);

/** Runs the child to the c3 refund, where it hangs, and kills it there. */
async function crashMidRun(dir: string, runId: string): Promise<void> {
  const crashed = start(dir, runId, { HANG: '1' });
  await waitFor(crashed, 'in-tool c3');
  crashed.child.kill('SIGKILL');
  expect(await crashed.exited).toEqual({ code: null, signal: 'SIGKILL' });
  // c1 and c2 were judged in the first turn, c3 in the second, before its tool ran and hung.
  expect(lines(path.join(dir, 'calls.log')).sort()).toEqual(['3', '50', '500']);
  expect(crashed.stdout()).not.toContain('stopReason');
}

async function resume(dir: string, runId: string, env: Record<string, string> = {}) {
  const resumed = start(dir, runId, { HANG: '0', ...env });
  const exit = await resumed.exited;
  if (exit.code !== 0) throw new Error(`the resumed child exited ${String(exit.code ?? exit.signal)}; stderr: ${resumed.stderr().slice(-2_000)}`);
  return JSON.parse(resumed.stdout().trim().split('\n').at(-1) ?? '{}') as { stopReason: string; text: string; decisions: { toolCallId: string; code: string; replayed: boolean }[] };
}

describe('a guarded run resumed after its process was killed', () => {
  it('reads every recorded verdict back from the durable storage and never asks the guardrail again', async () => {
    const dir = freshDir();
    await crashMidRun(dir, 'run-crash');
    const result = await resume(dir, 'run-crash');
    expect(lines(path.join(dir, 'calls.log'))).toHaveLength(3);
    expect(result).toMatchObject({ stopReason: 'finished', text: 'done' });
    expect(result.decisions.sort((a, b) => a.toolCallId.localeCompare(b.toolCallId))).toEqual([
      { toolCallId: 'c1', code: 'GUARDRAIL.ALLOWED', replayed: true },
      { toolCallId: 'c2', code: 'GUARDRAIL.DENIED', replayed: true },
      { toolCallId: 'c3', code: 'GUARDRAIL.ALLOWED', replayed: true },
    ]);
    // The refused call stayed refused: its handler ran in neither process.
    expect(lines(path.join(dir, 'refunds.log')).filter((a) => a === '500')).toEqual([]);
  });

  it('judges a call resumed with other arguments again, and refuses it, instead of handing it the recorded allow', async () => {
    const dir = freshDir();
    await crashMidRun(dir, 'run-attack');
    const result = await resume(dir, 'run-attack', { C1_AMOUNT: '5000' });
    // Only c1's new arguments were judged; c2 and c3 were read back.
    expect(lines(path.join(dir, 'calls.log')).sort()).toEqual(['3', '50', '500', '5000']);
    expect(result.decisions.find((d) => d.toolCallId === 'c1')).toEqual({ toolCallId: 'c1', code: 'GUARDRAIL.DENIED', replayed: false });
    expect(lines(path.join(dir, 'refunds.log'))).not.toContain('5000');
  });

  it('judges again under another run id: the record belongs to its run', async () => {
    const dir = freshDir();
    await crashMidRun(dir, 'run-a');
    const result = await resume(dir, 'run-b');
    expect(lines(path.join(dir, 'calls.log'))).toHaveLength(6);
    expect(result.decisions.every((d) => !d.replayed)).toBe(true);
  });
});
