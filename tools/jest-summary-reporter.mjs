// Jest reporter: when GATEHOUSE_TEST_RESULTS_DIR is set, writes this project's counts to a
// file there, so infra/scripts/test.sh can print one total line for the whole workspace.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const dir = process.env.GATEHOUSE_TEST_RESULTS_DIR;
    if (!dir) return;
    mkdirSync(dir, { recursive: true });
    const counts = {
      passed: results.numPassedTests,
      failed: results.numFailedTests + results.numRuntimeErrorTestSuites,
      skipped: results.numPendingTests + results.numTodoTests,
    };
    writeFileSync(path.join(dir, `${process.pid}-${Date.now()}.json`), JSON.stringify(counts));
  }
}
