import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readmeExamples } from '../../tools/readme-examples.mjs';

// Every row of a migration guide's tables names the compatibility test that holds it. This spec
// resolves each reference, so a renamed or deleted test cannot leave a stale row behind.
//
// A test cell holds references separated by `;`:
//   `<spec> › <describe> › ... › <test title>`   the spec is a path from a folder the guide's intro names
//                                                or from the repository root, a bare file name of one spec
//                                                in the repository, or an abbreviation the intro defines
//                                                (`adapters.spec.ts` (AD)); each title after it is a whole
//                                                string literal of that spec, where a placeholder of the
//                                                literal (%s, $name) or a `…` of the title stands for any text
//   `› <test title>`                             the same spec as the reference before it in the cell
//   `<reference>` (7 cases), <reference> (`x`)   a note on the test, not part of its title
//   example N                                    the guide's Nth ```ts example block (tools/readme-examples.mjs)
//   the same test(s), same test as D5, M1–M5     the row before, row D5, rows M1 to M5
const root = fileURLToPath(new URL('../../', import.meta.url));
const guides = ['breakwater', 'duraton', 'hazeljs'].map((name) => `docs/migrating/${name}.md`);

interface Row {
  readonly id: string;
  readonly references: string[];
}

/** Spec files of the repository, relative to its root, outside node_modules, dist and dot-folders. */
function specFiles(dir = ''): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.') ? [] : specFiles(file);
    return /\.spec\.ts$/.test(entry.name) ? [file] : [];
  });
}
const allSpecs = specFiles();

/** The rows with an id (`| D12 | ... |`) of every table, each with the references of its last cell. */
function tableRows(markdown: string): Row[] {
  return markdown
    .split('\n')
    .filter((line) => /^\|\s*[A-Z]+\d+\s*\|/.test(line))
    .map((line) => {
      const cells = line.trim().slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim());
      return { id: cells[0] ?? '', references: splitReferences(cells[cells.length - 1] ?? '') };
    });
}

/**
 * A code span holding `›` is one reference (a parenthesis after it is a note); the other text splits at
 * `;` before something that starts a reference, and a parenthesis holding only code ends it as a note.
 */
function splitReferences(cell: string): string[] {
  const spans: string[] = [];
  const text = cell.replace(/`((?:[^`\\]|\\.)*)`(\s*\([^()`]*\))?/g, (span, inner: string) =>
    inner.includes('›') ? `;\0${spans.push(inner.replace(/\\`/g, '`'))}\0;` : span,
  );
  const starts = /;\s*(?=›|\0|example \d|(?:the )?same tests?\b|[A-Z][A-Z0-9-]* ›|[\w./-]+\.spec\.ts ›|[A-Z]+\d+–)/;
  return text
    .split(starts)
    .map((reference) => reference.replace(/^[\s;]+|[\s;]+$/g, '').replace(/\s*\(`[^`]*`\)$/, ''))
    .map((reference) => reference.replace(/^\0(\d+)\0$/, (_, n: string) => spans[Number(n) - 1] ?? ''))
    .filter(Boolean);
}

/** The folders (`libs/guard/src/hazeljs/`, `libs/guard/src/<spec> › ...`) and abbreviations (`adapters.spec.ts` (AD)) of a guide's intro. */
function introOf(markdown: string): { folders: string[]; abbreviations: Map<string, string> } {
  const intro = markdown.slice(0, markdown.indexOf('\n|'));
  const folders = [...intro.matchAll(/`((?:[\w.-]+\/)+)(?:<spec>[^`]*)?`/g)].map((m) => m[1] ?? '');
  const abbreviations = new Map([...intro.matchAll(/`([\w./-]+\.spec\.ts)` \(([A-Z][A-Z0-9-]*)\)/g)].map((m) => [m[2] ?? '', m[1] ?? '']));
  return { folders, abbreviations };
}

/** The one spec file `name` means: relative to a guide folder or the root, else (a bare name) the only spec of that name. */
function resolveSpec(name: string, folders: string[]): { file?: string; problem?: string } {
  const found = [...new Set([...folders, ''].map((folder) => path.posix.join(folder, name)).filter((file) => existsSync(path.join(root, file))))];
  if (found.length === 0 && !name.includes('/')) found.push(...allSpecs.filter((file) => path.posix.basename(file) === name));
  if (found.length === 1) return { file: found[0] };
  return { problem: found.length === 0 ? `no spec file ${name}` : `${name} is ambiguous: ${found.join(', ')}` };
}

/** The string literals of a spec's source, unescaped: its test and describe titles among them. */
function stringLiterals(source: string): string[] {
  return [...source.matchAll(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g)].map((m) => m[0].slice(1, -1).replace(/\\(.)/g, '$1'));
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether a segment (a describe or test title) is one of the literals: the whole literal, where a `…`
 * in the segment stands for any text, and a `%s`, `$name` or `${...}` placeholder in the literal too.
 */
function namesALiteral(segment: string, literals: string[]): boolean {
  const elided = new RegExp(`^${segment.split('…').map((part) => escapeRegExp(part.trim())).join('[\\s\\S]*')}$`);
  const placeholder = /%[sdifjoOp#]|\$\{[^}]*\}|\$[\w.]+/g;
  return literals.some((literal) => {
    if (elided.test(literal)) return true;
    const pieces = literal.split(placeholder);
    return pieces.length > 1 && new RegExp(`^${pieces.map(escapeRegExp).join('[\\s\\S]*')}$`).test(segment);
  });
}

/** Every reference of the guide that does not resolve, as `<guide> <row>: <reference>: <why>`. */
function guideProblems(guide: string): string[] {
  const markdown = readFileSync(path.join(root, guide), 'utf8');
  const rows = tableRows(markdown);
  const { folders, abbreviations } = introOf(markdown);
  const examples = readmeExamples(root, guide).length;
  const byId = new Map(rows.map((row) => [row.id, row]));
  const problems: string[] = [];
  const problem = (row: Row, reference: string, why: string) => problems.push(`${guide} ${row.id}: ${reference ? `${reference}: ` : ''}${why}`);

  // A row holds when one of its references is a test or an example, or points to a row that holds.
  const holds = (id: string, seen: string[] = []): boolean => {
    const row = byId.get(id);
    if (!row || seen.includes(id)) return false;
    return row.references.some((reference) => pointees(rows, row, reference)?.every((target) => holds(target, [...seen, id])) ?? true);
  };

  const seen = new Set<string>();
  for (const row of rows) {
    if (seen.has(row.id)) problem(row, '', 'the row id is used twice');
    seen.add(row.id);
    if (row.references.length === 0) problem(row, '', 'names no test');
    let previousSpec: string | undefined;
    for (const reference of row.references) {
      const targets = pointees(rows, row, reference);
      if (targets) {
        const missing = targets.filter((target) => !holds(target, [row.id]));
        if (targets.length === 0 || missing.length > 0) problem(row, reference, `${missing.join(', ') || 'it'} is no row with a test`);
        continue;
      }
      const example = /^example (\d+)$/.exec(reference);
      if (example) {
        if (Number(example[1]) < 1 || Number(example[1]) > examples) problem(row, reference, `the guide has ${examples} examples`);
        continue;
      }
      const [head = '', ...segments] = reference.split('›').map((segment) => segment.trim());
      if (segments.length === 0) {
        problem(row, reference, 'is no test reference (`<spec> › <test title>`, example N, the same test, same test as <row>)');
        continue;
      }
      const { file: spec, problem: unresolved } = head === '' ? { file: previousSpec, problem: 'continues no spec named before it' } : resolveSpec(abbreviations.get(head) ?? head, folders);
      if (!spec) {
        problem(row, reference, unresolved ?? '');
        continue;
      }
      previousSpec = spec;
      const literals = stringLiterals(readFileSync(path.join(root, spec), 'utf8'));
      if (!segments[segments.length - 1]?.replace('…', '').trim()) problem(row, reference, 'names no test title');
      for (const segment of segments) if (!namesALiteral(segment, literals)) problem(row, reference, `no title "${segment}" in ${spec}`);
    }
  }

  // Each guide that cites its examples has a spec that runs them.
  if (rows.some((row) => row.references.some((reference) => /^example \d+$/.test(reference)))) {
    const runners = allSpecs.filter((file) => {
      const source = readFileSync(path.join(root, file), 'utf8');
      return source.includes(guide) && source.includes('readmeExamples(') && source.includes('example $index runs');
    });
    if (runners.length === 0) problems.push(`${guide}: no spec runs its examples (readmeExamples, 'example $index runs')`);
  }
  return problems;
}

/** The rows a pointer reference names (the row before, a row id, a range of ids), or undefined for another reference. */
function pointees(rows: Row[], row: Row, reference: string): string[] | undefined {
  if (/^the same tests?$/.test(reference)) return rows.slice(0, rows.indexOf(row)).slice(-1).map((before) => before.id);
  const named = /^(?:the )?same tests? as ([A-Z]+\d+)$/.exec(reference);
  if (named) return [named[1] ?? ''];
  const range = /^([A-Z]+)(\d+)–\1(\d+)$/.exec(reference);
  if (range) {
    const [, prefix, from, to] = range;
    return Array.from({ length: Math.max(0, Number(to) - Number(from) + 1) }, (_, i) => `${prefix}${Number(from) + i}`);
  }
  return undefined;
}

describe('docs/migrating guides', () => {
  it.each(guides)('%s: every row names a compatibility test that exists', (guide) => {
    expect(guideProblems(guide)).toEqual([]);
  });

  it.each(guides)('%s: has its rows found, so the check above is not vacuous', (guide) => {
    const rows = tableRows(readFileSync(path.join(root, guide), 'utf8'));
    expect(rows.length).toBeGreaterThan(20);
    expect(rows.filter((row) => row.references.length === 0)).toEqual([]);
  });
});
