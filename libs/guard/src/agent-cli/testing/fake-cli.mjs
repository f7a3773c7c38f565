#!/usr/bin/env node
// A stand-in agent CLI for the agent-cli specs. It reports the argv it received as one JSON line,
// then behaves as GATEHOUSE_FAKE_CLI_MODE says. Behaviour is chosen by environment, never by
// argv, so tests can assert the argv exactly.
//
//   echo              print the JSON line and exit 0 (default)
//   big-output        also write GATEHOUSE_FAKE_CLI_BYTES (default 65536) bytes of 'é€😀' to stdout and stderr
//   sleep-with-child  start a grandchild that never exits, write its pid to GATEHOUSE_FAKE_CLI_PIDFILE, sleep
//   exit-with-child   start a grandchild that never exits, write its pid to GATEHOUSE_FAKE_CLI_PIDFILE, exit 0
//   exit-code         write a line to stderr, exit with GATEHOUSE_FAKE_CLI_EXIT (default 1)
//   ignore-term       ignore SIGTERM, write its own pid to GATEHOUSE_FAKE_CLI_PIDFILE (if set), sleep
import { spawn } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { setInterval } from 'node:timers';

const env = process.env;
const mode = env.GATEHOUSE_FAKE_CLI_MODE ?? 'echo';

/** Written via rename so a polling test never reads a half-written pid. */
function writePid(pid) {
  const file = env.GATEHOUSE_FAKE_CLI_PIDFILE;
  if (!file) return;
  writeFileSync(`${file}.tmp`, String(pid));
  renameSync(`${file}.tmp`, file);
}

const sleepForever = () => setInterval(() => undefined, 1_000);

if (mode === 'ignore-term') process.on('SIGTERM', () => undefined);

process.stdout.write(`${JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd() })}\n`);

switch (mode) {
  case 'echo':
    break;
  case 'big-output': {
    // 2 + 3 + 4 UTF-8 bytes, so a byte cut can land inside characters of every width.
    const unit = 'é€😀';
    const unitBytes = 9;
    const bytes = Number(env.GATEHOUSE_FAKE_CLI_BYTES ?? 65_536);
    const text = unit.repeat(Math.ceil(bytes / unitBytes));
    process.stdout.write(text);
    process.stderr.write(text);
    break;
  }
  case 'sleep-with-child': {
    // Same process group as this CLI (not detached), like a tool an agent would start.
    const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    grandchild.once('spawn', () => writePid(grandchild.pid));
    sleepForever();
    break;
  }
  case 'exit-with-child': {
    // Leaves a process behind in its group, as a CLI that starts a dev server and returns would.
    const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    grandchild.once('spawn', () => {
      writePid(grandchild.pid);
      grandchild.unref();
    });
    break;
  }
  case 'exit-code':
    process.stderr.write('fake-cli failing on purpose\n');
    process.exitCode = Number(env.GATEHOUSE_FAKE_CLI_EXIT ?? 1);
    break;
  case 'ignore-term':
    writePid(process.pid);
    sleepForever();
    break;
  default:
    process.stderr.write('fake-cli: unknown GATEHOUSE_FAKE_CLI_MODE\n');
    process.exitCode = 64;
}
