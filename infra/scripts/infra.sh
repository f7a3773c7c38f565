#!/usr/bin/env bash
# Local infrastructure without Docker: a Kafka broker (KRaft, from Maven Central jars),
# PostgreSQL (the machine's server) with the gatehouse database, and the catalog topics.
#   infra.sh up     start/reuse everything and provision (idempotent)
#   infra.sh down   stop services left by `demo --keep`, then the broker (PostgreSQL is the machine's and stays up)
#   infra.sh status
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
  up)
    ensure_dependencies
    bash "$ROOT/infra/kafka/kafka.sh" start
    bash "$ROOT/infra/postgres/ensure.sh"
    (cd "$ROOT" && nx run @gatehouse/kafka:build --outputStyle=static >/dev/null)
    node "$ROOT/libs/kafka/dist/cli/provision.js"
    ;;
  down)
    for pid_file in "$GATEHOUSE_STATE_DIR"/services/*.pid; do
      [ -f "$pid_file" ] || continue
      pid=$(cat "$pid_file")
      if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        echo "services: stopped $(basename "$pid_file" .pid)"
      fi
      rm -f "$pid_file"
    done
    bash "$ROOT/infra/kafka/kafka.sh" stop
    ;;
  status)
    bash "$ROOT/infra/kafka/kafka.sh" status
    pg_isready -h 127.0.0.1 -p 5432
    ;;
  *)
    echo "usage: infra.sh up|down|status" >&2
    exit 2
    ;;
esac
