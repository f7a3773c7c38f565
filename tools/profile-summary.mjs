#!/usr/bin/env node
// Summarises V8 CPU profiles (`node --cpu-prof --cpu-prof-dir=<dir> <program>`) as Markdown: where
// the time went by owner (a workspace package, an npm package, Node itself, garbage collection),
// and the functions with the most self and inclusive time. docs/profiles/ holds what it printed for
// each benchmark row that misses its target (issue 22), with the command that made the profile.
//
//   node tools/profile-summary.mjs [--top N] [--title T] <file.cpuprofile | dir> ...
//
// A directory stands for every .cpuprofile in it (a program that starts workers or children
// writes one per thread or process); their samples are added up.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Who a call frame's code belongs to: a workspace package folder, an npm package, node, or V8 itself. */
export function ownerOf(url, functionName) {
  if (url === '') {
    if (functionName === '(garbage collector)') return '(garbage collector)';
    if (functionName === '(idle)' || functionName === '(program)' || functionName === '(root)') return functionName;
    return '(native)';
  }
  if (url.startsWith('node:')) return 'node';
  const file = fileOf(url);
  const modules = file.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = file.slice(modules + '/node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const relative = path.relative(ROOT, file);
  if (relative.startsWith('..')) return file;
  const parts = relative.split(path.sep);
  return ['libs', 'services'].includes(parts[0]) ? `${parts[0]}/${parts[1]}` : parts[0];
}

const fileOf = (url) => (url.startsWith('file://') ? fileURLToPath(url) : url);

function where(frame) {
  const { url, lineNumber } = frame;
  if (url === '') return '';
  const file = fileOf(url);
  const modules = file.lastIndexOf('/node_modules/');
  const shown = modules >= 0 ? file.slice(modules + 1) : file.startsWith(ROOT) ? path.relative(ROOT, file) : file;
  return `${shown}:${lineNumber + 1}`;
}

/** Self and inclusive milliseconds per function and per owner, over one or more profiles. */
export function summarise(profiles) {
  const self = new Map();
  const inclusive = new Map();
  const owners = new Map();
  let totalMs = 0;
  const add = (map, key, ms) => map.set(key, (map.get(key) ?? 0) + ms);
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    // A node's key and owner, worked out once: every sample walks its whole stack.
    const keys = new Map(profile.nodes.map((n) => [n.id, `${n.callFrame.functionName || '(anonymous)'}\u0000${where(n.callFrame)}`]));
    const keyOf = (n) => keys.get(n.id);
    for (let i = 0; i < profile.samples.length; i++) {
      // A sample's weight is the time until the next one (the last takes the mean).
      const ms = (i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1] : profile.timeDeltas[i]) / 1000;
      const leaf = byId.get(profile.samples[i]);
      if (leaf === undefined || ms <= 0) continue;
      totalMs += ms;
      add(self, keyOf(leaf), ms);
      add(owners, ownerOf(leaf.callFrame.url, leaf.callFrame.functionName), ms);
      const seen = new Set();
      for (let n = leaf; n !== undefined; n = byId.get(parent.get(n.id))) {
        const key = keyOf(n);
        if (!seen.has(key)) {
          seen.add(key);
          add(inclusive, key, ms);
        }
      }
    }
  }
  return { totalMs, self, inclusive, owners };
}

function percent(ms, totalMs) {
  return `${((100 * ms) / totalMs).toFixed(1)}%`;
}

// A RegExp's compiled code is named by its source, which may hold `|`: escaped, it stays in its cell.
const cellText = (text) => text.replaceAll('|', '\\|');

function topRows(map, totalMs, top) {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => {
      const [name, at] = key.split('\u0000');
      return `| \`${cellText(name)}\` | ${at === '' ? '–' : `\`${cellText(at)}\``} | ${ms.toFixed(0)} ms | ${percent(ms, totalMs)} |`;
    });
}

/** The Markdown summary of a profile (or several, added up). */
export function renderSummary(summary, { top = 15, title = 'CPU profile' } = {}) {
  const { totalMs, self, inclusive, owners } = summary;
  const skip = new Set(['(root)', '(program)', '(idle)']);
  const busyInclusive = new Map([...inclusive].filter(([key]) => !skip.has(key.split('\u0000')[0])));
  return [
    `### ${title}`,
    '',
    `${totalMs.toFixed(0)} ms of samples.`,
    '',
    '| owner | self time | share |',
    '| --- | --- | --- |',
    ...[...owners.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([owner, ms]) => `| ${owner} | ${ms.toFixed(0)} ms | ${percent(ms, totalMs)} |`),
    '',
    '| function (self time) | where | self | share |',
    '| --- | --- | --- | --- |',
    ...topRows(self, totalMs, top),
    '',
    '| function (inclusive time) | where | inclusive | share |',
    '| --- | --- | --- | --- |',
    ...topRows(busyInclusive, totalMs, top),
    '',
  ].join('\n');
}

function profileFiles(target) {
  if (statSync(target).isDirectory()) return readdirSync(target).filter((f) => f.endsWith('.cpuprofile')).sort().map((f) => path.join(target, f));
  return [target];
}

function main(args) {
  let top = 15;
  let title = 'CPU profile';
  const targets = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--top') top = Number(args[++i]);
    else if (args[i] === '--title') title = args[++i];
    else if (args[i].startsWith('--')) throw new Error(`profile-summary: unknown option ${args[i]}`);
    else targets.push(args[i]);
  }
  if (targets.length === 0 || !Number.isInteger(top) || top < 1) {
    throw new Error('usage: node tools/profile-summary.mjs [--top N] [--title T] <file.cpuprofile | dir> ...');
  }
  const profiles = targets.flatMap(profileFiles).map((f) => JSON.parse(readFileSync(f, 'utf8')));
  if (profiles.length === 0) throw new Error('profile-summary: no .cpuprofile found');
  process.stdout.write(renderSummary(summarise(profiles), { top, title }));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
