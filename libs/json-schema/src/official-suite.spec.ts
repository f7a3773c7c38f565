// Runs the official JSON-Schema-Test-Suite (the copy under fixtures/, see its README for what
// is there) through the interpreter: each case's schema prepared once (it must be usable), each
// test's data validated against it, `valid` as `valid` and invalid as `invalid`. `optional/` is
// not run. (The guard's schema guardrail maps these outcomes to allow and deny, one to one.)
import { afterAll, describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type JsonValue } from '@gatehouse/contracts';
import { type Draft, type SchemaPreparation, indexRemotes, prepareJsonSchema, validateInstance } from './index.js';

const SUITE_DIR = path.join(import.meta.dirname, 'fixtures', 'json-schema-test-suite');
const DRAFTS: Readonly<Record<string, Draft>> = { draft4: '4', draft7: '7', 'draft2019-09': '2019-09', 'draft2020-12': '2020-12' };
const REMOTE_BASE = 'http://localhost:1234/';

interface SuiteTest {
  readonly description: string;
  readonly data: JsonValue;
  readonly valid: boolean;
}
interface SuiteCase {
  readonly description: string;
  readonly schema: JsonValue;
  readonly tests: readonly SuiteTest[];
}

// `<draft>/<file> › <case> › <test>` (or `<draft>/<file> › <case>` for the whole case, or
// `<draft>/<file>` for the whole file) → why.
// Keep this short and honest: each entry is a case the interpreter gets wrong or cannot run.
const SKIPPED: Readonly<Record<string, string>> = {};

function remotes(): Record<string, JsonValue> {
  const dir = path.join(SUITE_DIR, 'remotes');
  const found: Record<string, JsonValue> = {};
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.json')) continue;
    const file = path.join(entry.parentPath, entry.name);
    found[REMOTE_BASE + path.relative(dir, file).split(path.sep).join('/')] = JSON.parse(readFileSync(file, 'utf8')) as JsonValue;
  }
  return found;
}

const remoteSchemas = remotes();
const counts = new Map<string, { passed: number; skipped: number }>();

function skipReason(draftDir: string, file: string, suiteCase: SuiteCase, test: SuiteTest): string | undefined {
  const caseKey = `${draftDir}/${file} › ${suiteCase.description}`;
  return SKIPPED[`${caseKey} › ${test.description}`] ?? SKIPPED[caseKey] ?? SKIPPED[`${draftDir}/${file}`];
}

const draftDirs = Object.keys(DRAFTS).filter((dir) => existsSync(path.join(SUITE_DIR, 'tests', dir)));

describe('JSON-Schema-Test-Suite through the interpreter', () => {
  it('has suite files to run', () => {
    expect(draftDirs.length).toBeGreaterThan(0);
  });

  for (const draftDir of draftDirs) {
    const draft = DRAFTS[draftDir] as Draft;
    const indexed = indexRemotes(remoteSchemas, draft);
    if (!indexed.ok) throw new Error(`the suite's remotes cannot be indexed for ${draftDir}: ${indexed.problem.code}`);
    const files = readdirSync(path.join(SUITE_DIR, 'tests', draftDir)).filter((f) => f.endsWith('.json')).sort();
    counts.set(draftDir, { passed: 0, skipped: 0 });

    describe(draftDir, () => {
      for (const file of files) {
        const cases = JSON.parse(readFileSync(path.join(SUITE_DIR, 'tests', draftDir, file), 'utf8')) as SuiteCase[];
        describe(file, () => {
          for (const suiteCase of cases) {
            // Each case's schema is prepared once, on its first test.
            let prepared: SchemaPreparation | undefined;
            const prepare = (): SchemaPreparation => (prepared ??= prepareJsonSchema(suiteCase.schema, { draft, remotes: indexed.remotes }));
            for (const test of suiteCase.tests) {
              const reason = skipReason(draftDir, file, suiteCase, test);
              const title = `${suiteCase.description} › ${test.description} (${test.valid ? 'valid' : 'invalid'})`;
              if (reason !== undefined) {
                counts.get(draftDir)!.skipped++;
                it.skip(`${title} — skipped: ${reason}`, () => undefined);
                continue;
              }
              it(title, () => {
                const preparation = prepare();
                expect(preparation.ok ? 'usable' : preparation.problem.code).toBe('usable');
                if (!preparation.ok) return;
                expect(validateInstance(preparation.validator, test.data).outcome).toBe(test.valid ? 'valid' : 'invalid');
                counts.get(draftDir)!.passed++;
              });
            }
          }
        });
      }
    });
  }

  afterAll(() => {
    const lines = [...counts.entries()].map(([dir, c]) => `${dir}: ${c.passed} passed, ${c.skipped} skipped`);
    console.log(`JSON-Schema-Test-Suite\n${lines.join('\n')}`);
  });
});
