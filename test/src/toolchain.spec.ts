import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';

function atLeast(version: string, minimum: [number, number]): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return major > minimum[0] || (major === minimum[0] && minor >= minimum[1]);
}

describe('toolchain', () => {
  it('runs the test workers on Node >= 22.13, as @mastra/core requires', () => {
    expect(atLeast(process.version, [22, 13])).toBe(true);
  });

  it('puts the project Node 22 first on PATH for scripts started from npm', () => {
    const onPath = execFileSync('node', ['-p', 'process.version'], { encoding: 'utf8' }).trim();
    expect(atLeast(onPath, [22, 13])).toBe(true);
  });

  it('runs Jest in native ESM mode (import.meta is available)', () => {
    expect(typeof import.meta.url).toBe('string');
  });
});
