// What stands in the way of each benchmark row that misses its target, and the CPU profile that
// shows it (issue 22: "each target met, or the row marked with what stands in the way and the
// profile that shows it"). tools/bench-report.mjs renders a limit under the peers table only for
// a row that missed its target in the run it renders: a met row needs none, and a limit never
// hides a miss. test/src/benchmarks-report.spec.ts requires one, with its profile on disk, for
// every missed issue-22 row of docs/benchmarks.json. Each profile (docs/profiles/) says how it was
// made (the command, the date, tools/profile-summary.mjs) and what it measured.

/**
 * @typedef {object} BenchLimit
 * @property {string} benchmark the row's benchmark, exactly
 * @property {string} metric text the row's metric contains
 * @property {string} [caseIncludes] text the row's case contains, where the metric alone is ambiguous
 * @property {string} standsInTheWay one or two sentences: the cost the profile measured, and the next lever
 * @property {string} profile the profile's path from the repository root (docs/profiles/*.md)
 */

/** @type {readonly BenchLimit[]} */
export const BENCH_LIMITS = [
  {
    benchmark: 'guard: secrets and PII against secretlint',
    metric: 'piiSecrets (secrets and PII) throughput',
    standsInTheWay:
      'The scan is RegExp-bound (78% of its samples): the high-entropy candidate pattern 26%, the vendor-token alternation 18.5%, and the PII patterns secretlint does not run at all (phone, SSN, card digits) about 22%; 3x needs about 26% less scan time. The first lever, a character-code loop for the entropy candidates, was tried and measured at about 6% of the scan, not the 13% estimated, and not kept.',
    profile: 'docs/profiles/secrets-vs-secretlint.md',
  },
  {
    benchmark: 'guard: JSON Schema guardrail',
    metric: 'validations per second',
    caseIncludes: 'deploy_plan',
    standsInTheWay:
      'Invalid arguments cost 13.3 µs against 2.6 µs for valid ones and are 83% of a pass: the fast path rejects one (18%), then the interpreter checks it again to name every failing keyword (72%), running each oneOf branch as a predicate and then interpreting it (oneOf is 54% of the invalid path). Next levers: pick a oneOf branch by its discriminating const, and interpret only the subtree where the fast path failed (estimate 0.40x to 0.45x together).',
    profile: 'docs/profiles/schema-deploy-plan.md',
  },
  {
    benchmark: 'guard: guarded agent stream',
    metric: 'time to stream the whole answer',
    standsInTheWay:
      'The guard adds about 13.7 µs per chunk, about 10 µs of it its own code (the detectors, the stage pump, the hold-back, the normalised view) and the rest the web-stream stages it adds; against an unguarded chunk of 17 to 34 µs, whichever the shared machine gives, the ratio moved between 1.35x and 1.56x over five runs in one day, around the 1.5x bound. Staying under it in every run needs about 3 to 4 µs less per chunk.',
    profile: 'docs/profiles/agent-stream.md',
  },
  {
    benchmark: 'guard: connector',
    metric: 'per call',
    standsInTheWay:
      'No single gate dominates: the in-process idempotency and rate stores build, validate and fold a ledger event per operation (about 23% of a call), the arguments are canonicalised and hashed (11%), the audit record is built (11%), and GC is 10% to 13%. Reaching 20 µs means removing about 45% of the call. Next lever: a map-only path for the in-memory stores (estimate 10 to 13 µs less together with one digest per call).',
    profile: 'docs/profiles/connector-call.md',
  },
  {
    benchmark: 'guard: audit publish',
    metric: 'decisions recorded per second',
    standsInTheWay:
      'Both paths make one acks=all round trip per decision; the gap is CPU on the guard thread, 0.66 against 0.31 ms busy per decision: the envelope is validated twice (zod in createEvent and in encodeEvent), canonicalJson runs three times, and the group-commit sendBatch path costs more than producer.send. Removing the first two is estimated at 0.65x to 0.7x; 0.8x also needs a lighter single-record send.',
    profile: 'docs/profiles/audit-publish.md',
  },
  {
    benchmark: 'audit export',
    metric: 'export throughput against kafkajs alone',
    standsInTheWay:
      'The export is CPU-bound on one thread (4% idle) at about 91 µs per record against a budget of 14 µs for 0.3x: the OCSF line is 30% (generic key filtering and a sorted canonicalJson), GC 22%, decode and contract check 11%, CEF 7%, a second serialisation for the size bound 7%. A direct fixed-order OCSF writer is estimated at 2x to 2.5x (about 0.1x); 0.3x also needs the mapping spread over cores this machine does not have.',
    profile: 'docs/profiles/audit-export.md',
  },
  {
    benchmark: 'approval',
    metric: 'replay throughput',
    standsInTheWay:
      'Every event carries an Ed25519 signature the fold must check (the agent signs its claims, the service its grants): verification is 79% of the fold and, at one per event, caps any checked replay at the verify rate, about 0.05x the plain consumer. Worker threads would give at most 2x on 2 cores; verifying a signed checkpoint over many events instead of each one would change the trust model.',
    profile: 'docs/profiles/approval-replay.md',
  },
  {
    benchmark: 'idempotency ledger',
    metric: 'latency p50',
    caseIncludes: 'reserve + complete',
    standsInTheWay:
      'Half CPU, half waiting, with no hot spot: per pair the service is busy about 6.7 ms (PostgreSQL client 1.4, Kafka read-back 0.6 to 0.9, produce 0.5, HTTP 1.2), and idle as long waiting for the acks=all append, its own record coming back through the fold, and the projection commit. Answering before the projection commits, or learning the verdict in process, could approach 3x, but each changes what an answer guarantees.',
    profile: 'docs/profiles/ledger-reserve-complete.md',
  },
  {
    benchmark: 'guarded agents under load',
    metric: 'decisions/s sustained',
    standsInTheWay:
      'The 2 cores are saturated at about 9 ms of CPU per decision (agents 143% of 200%, audit export 24%, broker 13%, PostgreSQL 13%), and inside the agents the Mastra agent loop is on the stack in 59% of samples, the guard in 15%: 2,000 decisions/s needs under 1 ms of CPU per decision for everything on the machine.',
    profile: 'docs/profiles/load.md',
  },
  {
    benchmark: 'guarded agents under load',
    metric: 'guard latency p99',
    standsInTheWay:
      'At saturation the p99 is queueing: several single-threaded agents, the exporter, the broker JVM and PostgreSQL share 2 cores; with one agent and cores to spare the p50 is already 11.5 to 17.6 ms.',
    profile: 'docs/profiles/load.md',
  },
];

/** The limit that explains a row, or undefined. */
export function limitOf(record, limits = BENCH_LIMITS) {
  return limits.find(
    (l) => l.benchmark === record.benchmark && record.metric.includes(l.metric) && (l.caseIncludes === undefined || record.case.includes(l.caseIncludes)),
  );
}
