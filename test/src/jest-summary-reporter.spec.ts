import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SummaryReporter from '../../tools/jest-summary-reporter.mjs';

// The reporter behind the one total line `npm test` ends with. Jest hands reporters its results
// before it works out `success` (false at that point), so the reporter must not take it for a
// failed run: CI once listed every green project as "the run failed with no test failing".
interface Summary {
  readonly passed: number;
  readonly failed: number;
  readonly failures: readonly { readonly test: string; readonly message: string }[];
}

function summarize(results: Record<string, unknown>): Summary {
  const dir = mkdtempSync(path.join(tmpdir(), 'gh-summary-'));
  const before = process.env['GATEHOUSE_TEST_RESULTS_DIR'];
  process.env['GATEHOUSE_TEST_RESULTS_DIR'] = dir;
  try {
    new SummaryReporter().onRunComplete([], { success: false, wasInterrupted: false, numPassedTests: 0, numFailedTests: 0, numRuntimeErrorTestSuites: 0, numPendingTests: 0, numTodoTests: 0, snapshot: { failure: false }, testResults: [], ...results });
    const [file] = readdirSync(dir);
    return JSON.parse(readFileSync(path.join(dir, file ?? ''), 'utf8')) as Summary;
  } finally {
    if (before === undefined) delete process.env['GATEHOUSE_TEST_RESULTS_DIR'];
    else process.env['GATEHOUSE_TEST_RESULTS_DIR'] = before;
    rmSync(dir, { recursive: true, force: true });
  }
}

const file = (over: Record<string, unknown>) => ({ testFilePath: path.join(process.cwd(), 'src/x.spec.ts'), testExecError: undefined, numFailingTests: 0, failureMessage: null, testResults: [], ...over });

describe('jest summary reporter', () => {
  it('counts a green run as green, though Jest has not set success yet', () => {
    expect(summarize({ numPassedTests: 3, testResults: [file({ testResults: [{ status: 'passed', fullName: 'a', failureMessages: [] }] })] })).toEqual({ passed: 3, failed: 0, skipped: 0, failures: [] });
  });

  it('names a failed test, a failing hook and an error of the run itself', () => {
    const failedTest = summarize({ numFailedTests: 1, testResults: [file({ numFailingTests: 1, testResults: [{ status: 'failed', fullName: 'refuses x', failureMessages: ['\u001b[31mExpected 1\u001b[39m'] }] })] });
    expect(failedTest).toMatchObject({ failed: 1, failures: [{ test: 'src/x.spec.ts › refuses x', message: 'Expected 1' }] });
    const hook = summarize({ numPassedTests: 2, testResults: [file({ failureMessage: 'afterAll: pool still open' })] });
    expect(hook).toMatchObject({ failed: 1, failures: [{ test: 'src/x.spec.ts (outside any test: a hook or the file itself)', message: 'afterAll: pool still open' }] });
    const crashed = summarize({ runExecError: { message: 'worker crashed' } });
    expect(crashed).toMatchObject({ failed: 1, failures: [{ test: expect.stringContaining('(the run failed with no test failing)'), message: 'worker crashed' }] });
  });
});
