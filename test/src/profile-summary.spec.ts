import { describe, expect, it } from '@jest/globals';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type CpuProfile, ownerOf, renderSummary, summarise } from '../../tools/profile-summary.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const guardFile = pathToFileURL(`${root}libs/guard/dist/audit/kafka-sink.js`).href;
const kafkajsFile = pathToFileURL(`${root}node_modules/kafkajs/src/producer/index.js`).href;

// root → main → (sink → encode (kafkajs)) and (garbage collector); samples 1 ms apart.
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [2, 5] },
    { id: 2, callFrame: { functionName: 'main', url: guardFile, lineNumber: 9 }, children: [3] },
    { id: 3, callFrame: { functionName: 'record', url: guardFile, lineNumber: 41 }, children: [4] },
    { id: 4, callFrame: { functionName: 'send', url: kafkajsFile, lineNumber: 99 } },
    { id: 5, callFrame: { functionName: '(garbage collector)', url: '', lineNumber: -1 } },
  ],
  samples: [4, 4, 3, 5, 2, 4],
  timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000],
};

describe('tools/profile-summary.mjs', () => {
  it('names the owner of a frame: a workspace package, an npm package, node, or the engine', () => {
    expect(ownerOf(guardFile, 'record')).toBe('libs/guard');
    expect(ownerOf(kafkajsFile, 'send')).toBe('kafkajs');
    expect(ownerOf(pathToFileURL(`${root}node_modules/@secretlint/core/module/index.js`).href, 'lint')).toBe('@secretlint/core');
    expect(ownerOf('node:internal/streams/readable', 'read')).toBe('node');
    expect(ownerOf('', '(garbage collector)')).toBe('(garbage collector)');
    expect(ownerOf('', 'verify')).toBe('(native)');
  });

  it('adds each sample to its leaf as self time and once to every function on its stack as inclusive time', () => {
    const summary = summarise([profile]);
    expect(summary.totalMs).toBe(6);
    expect(Object.fromEntries(summary.owners)).toEqual({ kafkajs: 3, 'libs/guard': 2, '(garbage collector)': 1 });
    const ms = (map: ReadonlyMap<string, number>, name: string) => [...map].find(([key]) => key.startsWith(`${name}\u0000`))?.[1];
    expect([ms(summary.self, 'send'), ms(summary.self, 'record'), ms(summary.self, 'main')]).toEqual([3, 1, 1]);
    expect([ms(summary.inclusive, 'main'), ms(summary.inclusive, 'record'), ms(summary.inclusive, 'send')]).toEqual([5, 4, 3]);
    // Two profiles (two processes) add up.
    expect(summarise([profile, profile]).totalMs).toBe(12);
  });

  it('renders owners and functions as Markdown tables, the busiest first, with the file and line', () => {
    const markdown = renderSummary(summarise([profile]), { top: 2, title: 'example' });
    expect(markdown).toContain('### example\n\n6 ms of samples.');
    expect(markdown).toContain('| kafkajs | 3 ms | 50.0% |\n| libs/guard | 2 ms | 33.3% |\n\n');
    expect(markdown).toContain('| `send` | `node_modules/kafkajs/src/producer/index.js:100` | 3 ms | 50.0% |');
    expect(markdown).toContain('| `main` | `libs/guard/dist/audit/kafka-sink.js:10` | 5 ms | 83.3% |');
    // A RegExp's code is named by its source: its `|` must not split the row.
    const regex = { ...profile, nodes: profile.nodes.map((n) => (n.id === 4 ? { ...n, callFrame: { functionName: 'RegExp: a|b', url: '', lineNumber: -1 } } : n)) };
    expect(renderSummary(summarise([regex]), { top: 1 })).toContain('| `RegExp: a\\|b` | – | 3 ms | 50.0% |');
  });
});
