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

# A broker of its own, fresh every run, on its own ports and state dir: a demo or dev broker
# left running is neither reused nor disturbed, and no earlier run's topics slow this one.
export GATEHOUSE_STATE_DIR="$ROOT/.gatehouse/bench"
export GATEHOUSE_KAFKA_PORT=${GATEHOUSE_BENCH_KAFKA_PORT:-29192}
export GATEHOUSE_KAFKA_CONTROLLER_PORT=${GATEHOUSE_BENCH_KAFKA_CONTROLLER_PORT:-29193}
export GATEHOUSE_KAFKA_BROKERS="127.0.0.1:$GATEHOUSE_KAFKA_PORT"
# The benchmarks create topics in throwaway namespaces and start services: the super user.
export_kafka_admin_env
cleanup() { bash infra/kafka/kafka.sh stop || true; }
trap cleanup EXIT
bash infra/kafka/kafka.sh reset >/dev/null

bash infra/scripts/infra.sh up
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
)
started=$SECONDS
for program in "${programs[@]}"; do
  echo "bench: $program"
  node "$program"
done
node tools/bench-report.mjs --results "$results" --out-dir docs --seconds "$((SECONDS - started))"
