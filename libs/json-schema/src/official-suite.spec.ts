// Runs the official JSON-Schema-Test-Suite (the copy under fixtures/, see its README for what
// is there) through the interpreter: each case's schema prepared once (it must be usable), each
// test's data validated against it, `valid` as `valid` and invalid as `invalid`. `optional/` is
// not run. (The guard's schema guardrail maps these outcomes to allow and deny, one to one.)
import { afterAll, describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type JsonValue } from '@gatehouse/contracts';
import { type Draft, type SchemaPreparation, indexRemotes, prepareJsonSchema, validateInstance } from './index.js';
import { SUITE_DIR, SUITE_DRAFTS, suiteRemotes } from './official-suite.testing.js';


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

const remoteSchemas = suiteRemotes();
const counts = new Map<string, { passed: number; skipped: number }>();

function skipReason(draftDir: string, file: string, suiteCase: SuiteCase, test: SuiteTest): string | undefined {
  const caseKey = `${draftDir}/${file} › ${suiteCase.description}`;
  return SKIPPED[`${caseKey} › ${test.description}`] ?? SKIPPED[caseKey] ?? SKIPPED[`${draftDir}/${file}`];
}

const draftDirs = Object.keys(SUITE_DRAFTS).filter((dir) => existsSync(path.join(SUITE_DIR, 'tests', dir)));

describe('JSON-Schema-Test-Suite through the interpreter', () => {
  it('has suite files to run', () => {
    expect(draftDirs.length).toBeGreaterThan(0);
  });

  for (const draftDir of draftDirs) {
    const draft = SUITE_DRAFTS[draftDir] as Draft;
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
