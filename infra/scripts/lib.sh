# Shared by the scripts in this folder: repository root, dependency install, Node 22 on PATH.
# shellcheck shell=bash
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export GATEHOUSE_STATE_DIR=${GATEHOUSE_STATE_DIR:-$ROOT/.gatehouse}
# Nx: no daemon, no cloud, no interactive terminal UI (CI and scripts read plain output).
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false NX_SKIP_NX_CACHE=${NX_SKIP_NX_CACHE:-false}

# Installs npm dependencies (and with them Node 22, the `node` devDependency) when they are
# missing or older than package-lock.json. The first install runs on the host's npm/Node.
ensure_dependencies() {
  local marker="$ROOT/node_modules/.package-lock.json"
  if [ ! -x "$ROOT/node_modules/.bin/node" ] || [ ! -f "$marker" ] || [ "$ROOT/package-lock.json" -nt "$marker" ]; then
    echo "setup: installing npm dependencies (npm ci)"
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  export PATH="$ROOT/node_modules/.bin:$PATH"
  local version
  version=$(node -p 'process.versions.node')
  case "$version" in
    22.*) ;;
    *) echo "setup: expected Node 22 from node_modules/.bin, found $version" >&2; return 1 ;;
  esac
}

# Builds every project (tsc -b through Nx, cached).
build_all() {
  (cd "$ROOT" && nx run-many -t build --outputStyle=static)
}

# Kafka credentials. The local broker authenticates every client (SASL/SCRAM-SHA-512); kafka.sh
# generates one password file per principal under $GATEHOUSE_STATE_DIR/secrets/kafka/ (mode 600).
# `kafka_env <user>` prints NAME=value pairs for `env` (a process as that principal); nothing
# secret is printed, only the path of the password file.
kafka_env() {
  printf '%s\n' GATEHOUSE_KAFKA_SASL_MECHANISM=scram-sha-512 "GATEHOUSE_KAFKA_USERNAME=$1" \
    "GATEHOUSE_KAFKA_PASSWORD_FILE=$GATEHOUSE_STATE_DIR/secrets/kafka/$1.password" GATEHOUSE_KAFKA_PASSWORD=
}

# Exports the super user's credentials (provisioning, tests' default client, operator tools).
# Call again after changing GATEHOUSE_STATE_DIR.
export_kafka_admin_env() {
  local pair
  while IFS= read -r pair; do export "${pair?}"; done < <(kafka_env admin)
}
export_kafka_admin_env

# A broker of its own for this script: fresh data every run, state under .gatehouse/<name>, its
# own ports, so a demo or dev broker left running is neither reused nor disturbed. Makes the
# super user `admin` this shell's Kafka client, stops the broker on exit, and provisions the
# topics, users' ACLs and database schemas. Usage: own_broker <name> <port> <controller-port>
own_broker() {
  export GATEHOUSE_STATE_DIR="$ROOT/.gatehouse/$1"
  export GATEHOUSE_KAFKA_PORT=$2
  export GATEHOUSE_KAFKA_CONTROLLER_PORT=$3
  export GATEHOUSE_KAFKA_BROKERS="127.0.0.1:$GATEHOUSE_KAFKA_PORT"
  export_kafka_admin_env
  trap 'bash "$ROOT/infra/kafka/kafka.sh" stop || true' EXIT
  bash "$ROOT/infra/kafka/kafka.sh" reset >/dev/null
  bash "$ROOT/infra/scripts/infra.sh" up
}
