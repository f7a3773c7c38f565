// Jest reporter: when GATEHOUSE_TEST_RESULTS_DIR is set, writes this project's counts, and the
// name and first lines of every failure, to a file there, so infra/scripts/test.sh can end
// with one total line for the whole workspace and the failures it counted (a CI log is often
// read from its tail only).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const FAILURE_LINES = 12;

export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const dir = process.env.GATEHOUSE_TEST_RESULTS_DIR;
    if (!dir) return;
    mkdirSync(dir, { recursive: true });
    const failures = [];
    let outsideTests = 0; // failures no test or suite count carries
    for (const file of results.testResults) {
      const where = path.relative(process.cwd(), file.testFilePath);
      if (file.testExecError) {
        failures.push({ test: `${where} (suite did not run)`, message: firstLines(file.testExecError.message) });
      }
      for (const test of file.testResults) {
        if (test.status !== 'failed') continue;
        failures.push({ test: `${where} › ${test.fullName}`, message: firstLines(test.failureMessages.join('\n')) });
      }
      // A failing beforeAll/afterAll hook, or an error thrown outside any test, fails the file
      // with every test passed: without this line the run is red with no failure named.
      if (!file.testExecError && file.numFailingTests === 0 && file.failureMessage) {
        failures.push({ test: `${where} (outside any test: a hook or the file itself)`, message: firstLines(file.failureMessage) });
        outsideTests += 1;
      }
    }
    // `results.success` is computed only after the reporters ran (it reads false here), so the
    // run's own failures are looked at: an error of the run itself, an obsolete or failed
    // snapshot check, an interrupted run.
    const runFailure = results.runExecError ? firstLines(results.runExecError.message) : results.snapshot?.failure ? 'snapshot check failed' : results.wasInterrupted ? 'interrupted' : undefined;
    if (runFailure !== undefined && failures.length === 0) {
      failures.push({ test: `${path.basename(process.cwd())} (the run failed with no test failing)`, message: runFailure });
      outsideTests += 1;
    }
    const summary = {
      passed: results.numPassedTests,
      failed: results.numFailedTests + results.numRuntimeErrorTestSuites + outsideTests,
      skipped: results.numPendingTests + results.numTodoTests,
      failures,
    };
    writeFileSync(path.join(dir, `${process.pid}-${Date.now()}.json`), JSON.stringify(summary));
  }
}

function firstLines(text) {
  // Strip colour codes; keep the head of the message, where the assertion and its location are.
  return String(text).replace(/\u001b\[[0-9;]*m/g, '').split('\n').slice(0, FAILURE_LINES).join('\n');
}
