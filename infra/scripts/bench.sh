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
# The figures of docs/benchmarks.md were measured on 3 partitions per topic: kept, so runs compare.
export GATEHOUSE_TOPIC_PARTITIONS="${GATEHOUSE_TOPIC_PARTITIONS:-3}"
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

# Scale-out figures (issue 19) on the reference deployment: a three-node cluster of the bench's own
# (infra/kafka/cluster.sh; its own state and ports, fresh every run), the same programs' style of
# side-by-side measurement. The single broker is stopped first: one run measures one setup at a time.
bash "$ROOT/infra/kafka/kafka.sh" stop >/dev/null
cluster_state="$GATEHOUSE_STATE_DIR/cluster-bench"
cluster_port="${GATEHOUSE_BENCH_CLUSTER_PORT:-29292}"
cluster() { GATEHOUSE_STATE_DIR="$cluster_state" GATEHOUSE_KAFKA_CLUSTER_PORT="$cluster_port" bash "$ROOT/infra/kafka/cluster.sh" "$@"; }
trap 'cluster reset >/dev/null 2>&1 || true; bash "$ROOT/infra/kafka/kafka.sh" stop >/dev/null 2>&1 || true' EXIT
cluster reset >/dev/null
cluster start
scale_programs=(
  services/idempotency-ledger/dist/bench/scale-out.bench.js
  services/audit-export/dist/bench/scale-out.bench.js
  test/load/load.bench.mjs
)
for program in "${scale_programs[@]}"; do
  echo "bench: $program (three-node cluster)"
  GATEHOUSE_KAFKA_BROKERS="$(cluster brokers)" GATEHOUSE_KAFKA_PASSWORD_FILE="$cluster_state/cluster/secrets/kafka/admin.password" node "$program"
done
node tools/bench-report.mjs --results "$results" --out-dir docs --seconds "$((SECONDS - started))"
