#!/usr/bin/env bash
# The benchmark command (`npm run bench`): installs what is missing, starts a broker of its own,
# builds, runs every benchmark program, and renders their figures into docs/benchmarks.md and
# docs/benchmarks.json (tools/bench-report.mjs). Those two files are its output: regenerate
# them with this command, never by hand. It stops the broker it started on the way out.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

ensure_dependencies

# A broker of its own (own_broker, lib.sh), so no earlier run's topics slow this one. The
# benchmarks create topics in throwaway namespaces and start services: the super user.
own_broker bench "${GATEHOUSE_BENCH_KAFKA_PORT:-29192}" "${GATEHOUSE_BENCH_KAFKA_CONTROLLER_PORT:-29193}"
echo "bench: build"
build_all

results="$GATEHOUSE_STATE_DIR/bench-results.jsonl"
rm -f "$results"
export GATEHOUSE_BENCH_RESULTS="$results"
# One program at a time: each measures its figure and its baseline side by side, and two
# programs at once on a small machine would measure each other.
programs=(
  libs/guard/dist/bench/run.js
  services/idempotency-ledger/dist/bench/ledger.bench.js
  services/audit-export/dist/bench/export.bench.js
  services/approval/dist/bench/approval.bench.js
  services/approval/dist/bench/cold-start.bench.js
  services/idempotency-ledger/dist/bench/cold-start.bench.js
  services/policy/dist/bench/cold-start.bench.js
  services/audit-export/dist/bench/cold-start.bench.js
)
started=$SECONDS
for program in "${programs[@]}"; do
  echo "bench: $program"
  node "$program"
done
node tools/bench-report.mjs --results "$results" --out-dir docs --seconds "$((SECONDS - started))"
