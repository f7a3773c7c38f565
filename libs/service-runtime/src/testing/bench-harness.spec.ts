import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { positiveIntegerEnv } from './env.js';
import { reached, sumOfEnds } from './progress.js';
import { startNodeProcess, stopProcesses } from './replicas.js';
import { duplicateIds, ocsfFileIds } from './siem-files.js';

// The pieces of the replica benchmarks and the load test that need neither a broker nor a
// database: the knobs they read, how they judge progress, what they read from a SIEM feed, and
// the processes they start and stop.

describe('positiveIntegerEnv', () => {
  it('reads a positive whole number, falls back when unset or empty, and refuses anything else naming the variable', () => {
    expect(positiveIntegerEnv('GH_KNOB', 4, {})).toBe(4);
    expect(positiveIntegerEnv('GH_KNOB', 4, { GH_KNOB: '' })).toBe(4);
    expect(positiveIntegerEnv('GH_KNOB', 4, { GH_KNOB: '12' })).toBe(12);
    for (const bad of ['0', '-3', '1.5', 'many', '1e400']) {
      expect(() => positiveIntegerEnv('GH_KNOB', 4, { GH_KNOB: bad })).toThrow('GH_KNOB must be a positive integer');
    }
  });
});

describe('reached and sumOfEnds', () => {
  const ends = new Map<number, bigint>([
    [0, 10n],
    [1, 0n],
    [2, 7n],
  ]);

  it('is reached only when every partition is at or past its end (an empty partition needs no position)', () => {
    expect(reached({ '0': '10', '2': '7' }, ends)).toBe(true);
    expect(reached({ '0': '11', '1': '0', '2': '9' }, ends)).toBe(true);
    expect(reached({ '0': '10', '2': '6' }, ends)).toBe(false);
    expect(reached({ '0': '10' }, ends)).toBe(false);
  });

  it('adds the ends up', () => {
    expect(sumOfEnds(ends)).toBe(17n);
    expect(sumOfEnds(new Map())).toBe(0n);
  });
});

describe('ocsfFileIds and duplicateIds', () => {
  it("reads every OCSF line's metadata.uid of a feed directory, and only the OCSF files", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gh-siem-ids-'));
    try {
      const line = (uid: string) => `${JSON.stringify({ metadata: { uid } })}\n`;
      writeFileSync(path.join(dir, 'ocsf-p0.0.jsonl'), `${line('a')}${line('b')}`);
      writeFileSync(path.join(dir, 'ocsf-p1.0.jsonl'), line('a'));
      writeFileSync(path.join(dir, 'cef-p0.0.log'), 'CEF:0|not|read\n');
      expect(ocsfFileIds(dir).sort()).toEqual(['a', 'a', 'b']);
      expect(duplicateIds(ocsfFileIds(dir))).toEqual({ a: 2 });
      expect(ocsfFileIds(path.join(dir, 'never-written'))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds no duplicates in distinct ids', () => {
    expect(duplicateIds(['x', 'y', 'z'])).toEqual({});
  });
});

describe('startNodeProcess and stopProcesses', () => {
  it('keeps the tail of what a process printed, reports its exit code, and stops one still running', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gh-node-process-'));
    try {
      const printer = path.join(dir, 'printer.mjs');
      writeFileSync(printer, "console.log(`hello ${process.env.GH_WHO}`); process.exit(3);\n");
      const done = startNodeProcess(printer, [], { GH_WHO: 'bench' }, { keep: 5 });
      expect(await done.exited()).toBe(3);
      expect(done.output()).toBe('ench\n');

      const sleeper = path.join(dir, 'sleeper.mjs');
      writeFileSync(sleeper, 'setInterval(() => undefined, 1_000);\n');
      const running = startNodeProcess(sleeper, [], {});
      await stopProcesses([running, done]);
      expect(running.child.signalCode).toBe('SIGTERM');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
