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
    for (const file of results.testResults) {
      const where = path.relative(process.cwd(), file.testFilePath);
      if (file.testExecError) {
        failures.push({ test: `${where} (suite did not run)`, message: firstLines(file.testExecError.message) });
      }
      for (const test of file.testResults) {
        if (test.status !== 'failed') continue;
        failures.push({ test: `${where} › ${test.fullName}`, message: firstLines(test.failureMessages.join('\n')) });
      }
    }
    const summary = {
      passed: results.numPassedTests,
      failed: results.numFailedTests + results.numRuntimeErrorTestSuites,
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
