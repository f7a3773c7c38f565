import { spawn } from 'node:child_process';
import path from 'node:path';

/** The built command line, as an operator runs it. */
export const CLI = path.resolve(import.meta.dirname, '../../dist/main.js');

/** Runs `gatehouse <args>` as a process with `env` over this process's environment. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
