// Types of jest-summary-reporter.mjs (a Jest reporter; the test project drives it directly).
export default class SummaryReporter {
  onRunComplete(contexts: unknown, results: unknown): void;
}
