#!/usr/bin/env bash
# A replicated Kafka cluster on loopback: three KRaft nodes (each broker and controller), from
# the same Maven jars as the single node, each run by kafka.sh with its own state, ports and
# node id. Replication factor 3, min.insync.replicas 2: an acknowledged write (acks=all) is on
# two nodes at least, and writes go on with one node down. The reference deployment of the
# scale tests (test/scale/); the single node of kafka.sh stays the default everywhere else.
#
# Usage: infra/kafka/cluster.sh start|stop|status|reset|brokers
#        infra/kafka/cluster.sh start-node|stop-node|kill-node <1|2|3>
#
# Environment (all optional):
#   GATEHOUSE_STATE_DIR            state root (default: <repo root>/.gatehouse); the cluster lives in <state>/cluster
#   GATEHOUSE_KAFKA_CLUSTER_PORT   first port (default 9192): node n listens on base+2(n-1) (clients)
#                                  and base+2(n-1)+1 (controllers)
#   GATEHOUSE_KAFKA_START_TIMEOUT  seconds a node may take to start (default 180)
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "${SCRIPT_DIR}/../.." && pwd -P)"
readonly SCRIPT_DIR REPO_ROOT
readonly KAFKA_SH="${SCRIPT_DIR}/kafka.sh"
readonly NODES=(1 2 3)
readonly HOST="127.0.0.1"

say() { printf 'cluster: %s\n' "$*"; }
die() {
  printf 'cluster: error: %s\n' "$*" >&2
  exit 1
}

readonly BASE_PORT="${GATEHOUSE_KAFKA_CLUSTER_PORT:-9192}"
[[ "${BASE_PORT}" =~ ^[0-9]+$ ]] && ((BASE_PORT > 0 && BASE_PORT + 6 < 65536)) ||
  die "GATEHOUSE_KAFKA_CLUSTER_PORT must be a port number, got '${BASE_PORT}'"

ROOT_STATE="${GATEHOUSE_STATE_DIR:-${REPO_ROOT}/.gatehouse}"
mkdir -p -- "${ROOT_STATE}"
ROOT_STATE="$(cd -- "${ROOT_STATE}" && pwd -P)"
readonly CLUSTER_DIR="${ROOT_STATE}/cluster"

client_port() { printf '%d' $((BASE_PORT + 2 * ($1 - 1))); }
controller_port() { printf '%d' $((BASE_PORT + 2 * ($1 - 1) + 1)); }

voters() {
  local n out=""
  for n in "${NODES[@]}"; do out+="${out:+,}${n}@${HOST}:$(controller_port "${n}")"; done
  printf '%s' "${out}"
}

# Runs kafka.sh <command> as node $1 of the cluster.
node_sh() {
  local n="$1"
  shift
  GATEHOUSE_STATE_DIR="${CLUSTER_DIR}/node-${n}" \
    GATEHOUSE_KAFKA_PORT="$(client_port "${n}")" \
    GATEHOUSE_KAFKA_CONTROLLER_PORT="$(controller_port "${n}")" \
    GATEHOUSE_KAFKA_NODE_ID="${n}" \
    GATEHOUSE_KAFKA_QUORUM_VOTERS="$(voters)" \
    GATEHOUSE_KAFKA_REPLICATION=3 \
    GATEHOUSE_KAFKA_SECRETS_DIR="${CLUSTER_DIR}/secrets/kafka" \
    GATEHOUSE_KAFKA_CLUSTER_ID_FILE="${CLUSTER_DIR}/cluster.id" \
    GATEHOUSE_KAFKA_LIBS_DIR="${CLUSTER_DIR}/libs" \
    bash "${KAFKA_SH}" "$@" 2>&1 | sed -u "s/^kafka:/kafka[${n}]:/"
  return "${PIPESTATUS[0]}"
}

check_node() { [[ "${1:-}" =~ ^[123]$ ]] || die "name a node: 1, 2 or 3"; }

# The nodes start together: each is ready only once a quorum of controllers answers.
start_nodes() {
  local n pids=() rc=0
  for n in "$@"; do
    node_sh "${n}" start &
    pids+=("$!")
  done
  for n in "${pids[@]}"; do wait "${n}" || rc=1; done
  return "${rc}"
}

do_start() {
  mkdir -p -- "${CLUSTER_DIR}"
  # One after another: the first creates the shared passwords and cluster id, the jars are
  # fetched once, and every node is formatted with the same SCRAM users.
  local n
  for n in "${NODES[@]}"; do node_sh "${n}" prepare >/dev/null; done
  start_nodes "${NODES[@]}" || die "a node did not start (logs under ${CLUSTER_DIR}/node-*/kafka/logs)"
  say "running: $(brokers) (replication 3, min.insync.replicas 2; passwords in ${CLUSTER_DIR}/secrets/kafka)"
}

brokers() {
  local n out=""
  for n in "${NODES[@]}"; do out+="${out:+,}${HOST}:$(client_port "${n}")"; done
  printf '%s' "${out}"
}

do_status() {
  local n rc=0
  for n in "${NODES[@]}"; do node_sh "${n}" status || rc=3; done
  return "${rc}"
}

usage() {
  cat <<EOF
usage: $(basename -- "$0") start|stop|status|reset|brokers
       $(basename -- "$0") start-node|stop-node|kill-node <1|2|3>

  start      prepare and start the three nodes (no-op for a node already running)
  stop       stop every node (SIGTERM, then SIGKILL)
  status     exit 0 when every node answers, 3 otherwise
  reset      stop, then delete the data and passwords of every node (jars kept)
  brokers    print the bootstrap list (host:port,...)
  start-node start one node again (its data kept)
  stop-node  stop one node (controlled shutdown)
  kill-node  SIGKILL one node (a crash)
EOF
}

main() {
  local n
  case "${1:-}" in
    start) do_start ;;
    stop) for n in "${NODES[@]}"; do node_sh "${n}" stop; done ;;
    status) do_status ;;
    reset)
      for n in "${NODES[@]}"; do node_sh "${n}" reset; done
      rm -rf -- "${CLUSTER_DIR}/secrets" "${CLUSTER_DIR}/cluster.id"
      ;;
    brokers) brokers && printf '\n' ;;
    start-node) check_node "${2:-}" && start_nodes "$2" ;;
    stop-node) check_node "${2:-}" && node_sh "$2" stop ;;
    kill-node) check_node "${2:-}" && node_sh "$2" kill ;;
    -h | --help | help) usage ;;
    *)
      usage >&2
      exit 2
      ;;
  esac
}

main "$@"
