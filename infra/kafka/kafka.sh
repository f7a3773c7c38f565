#!/usr/bin/env bash
# Local Apache Kafka broker without Docker: jars from Maven Central, one JVM,
# KRaft single node (broker + controller) on 127.0.0.1, with authentication (SASL/SCRAM-SHA-512
# for clients, SASL/PLAIN for the controller listener) and the standard KRaft authorizer.
#
# Users: one SCRAM user per principal in KAFKA_USERS below, created when the storage is
# formatted. Their passwords are generated on first start (random, from /dev/urandom) into
# <state dir>/secrets/kafka/<user>.password (mode 600) and never printed. A data dir formatted
# without them (the state of an older checkout) is refused with a hint to run `reset`.
#
# Usage: infra/kafka/kafka.sh fetch|prepare|start|stop|kill|status|reset
#
# Environment (all optional):
#   GATEHOUSE_STATE_DIR               state root (default: <repo root>/.gatehouse)
#   GATEHOUSE_KAFKA_PORT              client (SASL_PLAINTEXT) listener port (default 9092)
#   GATEHOUSE_KAFKA_CONTROLLER_PORT   KRaft controller port (default 9093)
#   GATEHOUSE_KAFKA_START_TIMEOUT     seconds to wait for the broker (default 180)
# One node of a cluster (infra/kafka/cluster.sh sets these; the defaults make a single node):
#   GATEHOUSE_KAFKA_NODE_ID           this node's id (default 1)
#   GATEHOUSE_KAFKA_QUORUM_VOTERS     the controller quorum, id@host:port,... (default: this node alone)
#   GATEHOUSE_KAFKA_REPLICATION       replication factor of internal and new topics (default 1);
#                                     min.insync.replicas is 2 from 3 replicas on, else 1
#   GATEHOUSE_KAFKA_SECRETS_DIR       passwords and JAAS, shared by a cluster's nodes (default: <state>/secrets/kafka)
#   GATEHOUSE_KAFKA_CLUSTER_ID_FILE   the cluster id, shared by a cluster's nodes (default: <state>/kafka/cluster.id)
#   GATEHOUSE_KAFKA_LIBS_DIR          the jars, shared by a cluster's nodes (default: <state>/kafka/libs-<version>)
#   GATEHOUSE_M2_REPO                 Maven local repository (default: Maven's own, ~/.m2/repository)
#   JAVA_HOME                         Java to use (default: java on PATH)
set -euo pipefail

readonly KAFKA_VERSION="3.9.1"

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "${SCRIPT_DIR}/../.." && pwd -P)"
readonly SCRIPT_DIR REPO_ROOT

readonly POM="${SCRIPT_DIR}/pom.xml"
readonly TEMPLATE="${SCRIPT_DIR}/server.properties.template"
readonly LOG4J_CONFIG="${SCRIPT_DIR}/log4j.properties"

readonly HOST="127.0.0.1"
readonly PORT="${GATEHOUSE_KAFKA_PORT:-9092}"
readonly CONTROLLER_PORT="${GATEHOUSE_KAFKA_CONTROLLER_PORT:-9093}"
readonly START_TIMEOUT="${GATEHOUSE_KAFKA_START_TIMEOUT:-180}"
readonly STOP_TIMEOUT=30
readonly STARTED_MESSAGE="Kafka Server started"
readonly SCRAM_MECHANISM="SCRAM-SHA-512"
# Principals with a SCRAM user: the super user, the four services, and the guard library's
# agent processes. libs/kafka/src/acls.ts grants them their rights (a spec keeps both in step).
readonly KAFKA_USERS=(admin svc-approval svc-ledger svc-policy svc-audit-export agent)

if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
  JAVA="${JAVA_HOME}/bin/java"
else
  JAVA="java"
fi
readonly JAVA

say() { printf 'kafka: %s\n' "$*"; }
die() {
  printf 'kafka: error: %s\n' "$*" >&2
  exit 1
}

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_uint "${PORT}" || die "GATEHOUSE_KAFKA_PORT must be a number, got '${PORT}'"
is_uint "${CONTROLLER_PORT}" || die "GATEHOUSE_KAFKA_CONTROLLER_PORT must be a number, got '${CONTROLLER_PORT}'"
is_uint "${START_TIMEOUT}" || die "GATEHOUSE_KAFKA_START_TIMEOUT must be a number of seconds, got '${START_TIMEOUT}'"
readonly NODE_ID="${GATEHOUSE_KAFKA_NODE_ID:-1}"
readonly QUORUM_VOTERS="${GATEHOUSE_KAFKA_QUORUM_VOTERS:-${NODE_ID}@${HOST}:${CONTROLLER_PORT}}"
readonly REPLICATION="${GATEHOUSE_KAFKA_REPLICATION:-1}"
is_uint "${NODE_ID}" || die "GATEHOUSE_KAFKA_NODE_ID must be a number, got '${NODE_ID}'"
is_uint "${REPLICATION}" && ((REPLICATION >= 1)) || die "GATEHOUSE_KAFKA_REPLICATION must be a positive number, got '${REPLICATION}'"
[[ "${QUORUM_VOTERS}" =~ ^[0-9]+@[0-9.]+:[0-9]+(,[0-9]+@[0-9.]+:[0-9]+)*$ ]] ||
  die "GATEHOUSE_KAFKA_QUORUM_VOTERS must be id@host:port[,id@host:port...], got '${QUORUM_VOTERS}'"
# Writes go on with one of three replicas down, never with a single copy.
if ((REPLICATION >= 3)); then MIN_ISR=2; else MIN_ISR=1; fi
readonly MIN_ISR
[[ "${PORT}" != "${CONTROLLER_PORT}" ]] || die "GATEHOUSE_KAFKA_PORT and GATEHOUSE_KAFKA_CONTROLLER_PORT must differ"

# State paths (absolute, so the marker and log.dirs do not depend on cwd).
STATE_DIR="${GATEHOUSE_STATE_DIR:-${REPO_ROOT}/.gatehouse}"
mkdir -p -- "${STATE_DIR}"
STATE_DIR="$(cd -- "${STATE_DIR}" && pwd -P)"
readonly STATE_DIR
readonly KAFKA_DIR="${STATE_DIR}/kafka"
readonly LIBS_DIR="${GATEHOUSE_KAFKA_LIBS_DIR:-${KAFKA_DIR}/libs-${KAFKA_VERSION}}"
readonly LIBS_MARKER="${LIBS_DIR}/.fetch-complete"
readonly DATA_DIR="${KAFKA_DIR}/data"
readonly LOGS_DIR="${KAFKA_DIR}/logs"
readonly PID_FILE="${KAFKA_DIR}/kafka.pid"
readonly CLUSTER_ID_FILE="${GATEHOUSE_KAFKA_CLUSTER_ID_FILE:-${KAFKA_DIR}/cluster.id}"
readonly PROPS_FILE="${KAFKA_DIR}/server.properties"
readonly SERVER_LOG="${LOGS_DIR}/server.log"
readonly STDOUT_LOG="${LOGS_DIR}/kafkaServer.out"
readonly LOCK_FILE="${KAFKA_DIR}/.lock"
# The users the storage was formatted with (one per line); missing = formatted without SCRAM.
readonly USERS_MARKER="${KAFKA_DIR}/scram-users"
readonly SECRETS_DIR="${GATEHOUSE_KAFKA_SECRETS_DIR:-${STATE_DIR}/secrets/kafka}"
readonly JAAS_FILE="${SECRETS_DIR}/broker.jaas"
readonly ADMIN_CLIENT_PROPS="${SECRETS_DIR}/admin.properties"
# Unique argument on our java command line; stop/status find our JVMs by it.
readonly MARKER_ARG="-Dgatehouse.kafka=${STATE_DIR}"
READY_PID=""
LOCK_FD=""

# ---------------------------------------------------------------- helpers

take_lock() {
  mkdir -p -- "${KAFKA_DIR}"
  if command -v flock >/dev/null 2>&1; then
    exec {LOCK_FD}>"${LOCK_FILE}"
    if ! flock -n "${LOCK_FD}"; then
      say "waiting for another kafka.sh run on ${STATE_DIR} to finish"
      flock -w "$((START_TIMEOUT + STOP_TIMEOUT + 60))" "${LOCK_FD}" ||
        die "another kafka.sh run still holds ${LOCK_FILE}"
    fi
  fi
}

now() { date +%s; }

# Seconds since $1 (an EPOCHREALTIME value), with one decimal.
elapsed_since() {
  local start_us end_us diff
  start_us="${1/[.,]/}"
  end_us="${EPOCHREALTIME/[.,]/}"
  diff=$(((10#${end_us} - 10#${start_us}) / 100000))
  printf '%d.%d' "$((diff / 10))" "$((diff % 10))"
}

# True when a process with that pid exists and is not a zombie.
pid_alive() {
  local pid="$1" state=""
  [[ -n "${pid}" ]] || return 1
  kill -0 "${pid}" 2>/dev/null || return 1
  if [[ -r "/proc/${pid}/stat" ]]; then
    state="$(sed -E 's/^.*\) (.).*$/\1/' "/proc/${pid}/stat" 2>/dev/null || true)"
    [[ "${state}" != "Z" ]] || return 1
  fi
  return 0
}

# True when the process has MARKER_ARG as one exact argument (i.e. it is our broker).
pid_is_ours() {
  local pid="$1" arg
  pid_alive "${pid}" || return 1
  [[ -r "/proc/${pid}/cmdline" ]] || return 1
  while IFS= read -r -d '' arg; do
    [[ "${arg}" == "${MARKER_ARG}" ]] && return 0
  done <"/proc/${pid}/cmdline"
  return 1
}

# Pids of all live JVMs carrying our marker (one per line).
our_pids() {
  local pid
  command -v pgrep >/dev/null 2>&1 || return 0
  # pgrep -f gives candidates; pid_is_ours checks the exact argument.
  while read -r pid; do
    [[ -n "${pid}" ]] || continue
    if pid_is_ours "${pid}"; then printf '%s\n' "${pid}"; fi
  done < <(pgrep -f -- "gatehouse\\.kafka=" || true)
  return 0
}

read_pid_file() {
  local pid=""
  if [[ -f "${PID_FILE}" ]]; then
    pid="$(tr -dc '0-9' <"${PID_FILE}" || true)"
  fi
  printf '%s' "${pid}"
}

# The pid of our running broker (pid file first, marker search second), or "".
running_pid() {
  local pid
  pid="$(read_pid_file)"
  if [[ -n "${pid}" ]] && pid_is_ours "${pid}"; then
    printf '%s' "${pid}"
    return 0
  fi
  first_our_pid
}

# The first pid our_pids finds, or "" (no pipe into head: no SIGPIPE under pipefail).
first_our_pid() {
  local pids
  pids="$(our_pids)"
  printf '%s' "${pids%%$'\n'*}"
}

port_open() {
  # shellcheck disable=SC2016 # $0/$1 expand in the child bash, on purpose.
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "${HOST}" "$1" 2>/dev/null
}

# Pid listening on a TCP port, when ss can tell (empty otherwise).
port_owner() {
  command -v ss >/dev/null 2>&1 || return 0
  ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 || true
}

describe_port_owner() {
  local owner cmdline marker
  owner="$(port_owner "$1")"
  if [[ -z "${owner}" ]]; then
    printf 'an unknown process'
    return 0
  fi
  cmdline="$(tr '\0' '\n' <"/proc/${owner}/cmdline" 2>/dev/null || true)"
  marker="$(grep -m 1 -e '^-Dgatehouse\.kafka=' <<<"${cmdline}" || true)"
  if [[ -n "${marker}" ]]; then
    printf 'pid %s (a gatehouse Kafka broker for state dir %s)' "${owner}" "${marker#*=}"
  else
    printf 'pid %s (%s)' "${owner}" "$(tr '\n' ' ' <<<"${cmdline}" | cut -c1-160)"
  fi
}

# True when our broker pid answers on the PLAINTEXT port (and, if ss can tell, owns it).
broker_answers() {
  local pid="$1" owner
  port_open "${PORT}" || return 1
  owner="$(port_owner "${PORT}")"
  [[ -z "${owner}" || "${owner}" == "${pid}" ]]
}

show_logs() {
  {
    if [[ -s "${SERVER_LOG}" ]]; then
      say "last 40 lines of ${SERVER_LOG}:"
      tail -n 40 -- "${SERVER_LOG}"
    else
      say "${SERVER_LOG} is empty or missing"
    fi
    if [[ -s "${STDOUT_LOG}" ]]; then
      say "last 40 lines of ${STDOUT_LOG}:"
      tail -n 40 -- "${STDOUT_LOG}"
    fi
  } >&2
}

file_size() {
  if [[ -f "$1" ]]; then wc -c <"$1" | tr -d ' '; else echo 0; fi
}

# True when this JVM's server log says the server started. start() moves earlier logs aside
# before launching, so server.log and its roll-overs (server.log.N, when start-up logs pass
# MaxFileSize) were all written by this JVM; $1 is kept for the call sites' symmetry.
started_since() {
  local f
  for f in "${SERVER_LOG}" "${SERVER_LOG}".[0-9]*; do
    [[ -f "${f}" ]] && grep -qF -- "${STARTED_MESSAGE}" "${f}" && return 0
  done
  return 1
}

# Moves the logs of earlier runs to logs/previous/ (replacing the run before), so a stale
# "started" line can never satisfy the readiness check.
archive_logs() {
  local previous="${LOGS_DIR}/previous" f
  rm -rf -- "${previous}"
  mkdir -p -- "${previous}"
  for f in "${LOGS_DIR}"/*.log "${LOGS_DIR}"/*.log.[0-9]*; do
    [[ -f "${f}" ]] && mv -- "${f}" "${previous}/"
  done
  return 0
}

# Wait until the broker answers and logged its start; $1 pid, $2 log offset.
# Sets READY_PID. On failure prints the logs, ends the JVM and exits 1.
wait_ready() {
  local pid="$1" offset="$2" deadline other
  deadline=$(($(now) + START_TIMEOUT))
  while :; do
    if ! pid_alive "${pid}"; then
      # Should setsid ever have forked, the JVM has another pid: find it by its marker.
      other="$(first_our_pid)"
      if [[ -n "${other}" ]]; then
        pid="${other}"
        printf '%s\n' "${pid}" >"${PID_FILE}"
        continue
      fi
      say "the broker process (pid ${pid}) exited during start-up"
      show_logs
      rm -f -- "${PID_FILE}"
      exit 1
    fi
    if broker_answers "${pid}" && started_since "${offset}"; then
      READY_PID="${pid}"
      return 0
    fi
    if (($(now) >= deadline)); then
      say "the broker did not become ready within ${START_TIMEOUT}s" \
        "(GATEHOUSE_KAFKA_START_TIMEOUT); stopping pid ${pid}"
      show_logs
      terminate "${pid}" "${STOP_TIMEOUT}" || true
      rm -f -- "${PID_FILE}"
      exit 1
    fi
    sleep 0.5
  done
}

# ---------------------------------------------------------------- fetch

pom_hash() { sha256sum -- "${POM}" | cut -d' ' -f1; }

libs_ready() {
  [[ -f "${LIBS_MARKER}" ]] && [[ "$(cat -- "${LIBS_MARKER}")" == "$(pom_hash)" ]]
}

do_fetch() {
  if libs_ready; then
    say "jars for Kafka ${KAFKA_VERSION} already in ${LIBS_DIR}"
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn (Maven) is needed to fetch the Kafka jars"
  mkdir -p -- "${KAFKA_DIR}" "${LOGS_DIR}"
  local tmp="${LIBS_DIR}.tmp.$$" mvn_log="${LOGS_DIR}/fetch.log" started
  local -a mvn_args=(-B -q -f "${POM}" dependency:copy-dependencies
    -DincludeScope=runtime "-DoutputDirectory=${tmp}")
  if [[ -n "${GATEHOUSE_M2_REPO:-}" ]]; then
    mvn_args+=("-Dmaven.repo.local=${GATEHOUSE_M2_REPO}")
  fi
  say "fetching Kafka ${KAFKA_VERSION} jars with Maven into ${LIBS_DIR} (~46 MB; Maven downloads what its cache lacks)"
  started="${EPOCHREALTIME}"
  rm -rf -- "${tmp}"
  if ! mvn "${mvn_args[@]}" >"${mvn_log}" 2>&1; then
    rm -rf -- "${tmp}"
    say "Maven failed; output (${mvn_log}):"
    tail -n 40 -- "${mvn_log}" >&2
    exit 1
  fi
  compgen -G "${tmp}/kafka_2.13-${KAFKA_VERSION}.jar" >/dev/null ||
    die "Maven finished but ${tmp} has no kafka_2.13-${KAFKA_VERSION}.jar"
  rm -rf -- "${LIBS_DIR}"
  mv -- "${tmp}" "${LIBS_DIR}"
  pom_hash >"${LIBS_MARKER}"
  say "jars ready ($(find "${LIBS_DIR}" -name '*.jar' | wc -l | tr -d ' ') jars, $(elapsed_since "${started}")s)"
}

# ---------------------------------------------------------------- start

new_cluster_id() {
  # 16 random bytes, base64url without padding (22 chars), not starting with '-'.
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "${id}" == -* ]] || break
  done
  printf '%s' "${id}"
}

write_properties() {
  [[ -f "${TEMPLATE}" ]] || die "missing template ${TEMPLATE}"
  local content
  content="$(<"${TEMPLATE}")"
  # Quoted replacements: no pattern or '&' expansion of the values.
  content="${content//@@KAFKA_PORT@@/"${PORT}"}"
  content="${content//@@CONTROLLER_PORT@@/"${CONTROLLER_PORT}"}"
  content="${content//@@DATA_DIR@@/"${DATA_DIR}"}"
  content="${content//@@NODE_ID@@/"${NODE_ID}"}"
  content="${content//@@QUORUM_VOTERS@@/"${QUORUM_VOTERS}"}"
  content="${content//@@REPLICATION@@/"${REPLICATION}"}"
  content="${content//@@MIN_ISR@@/"${MIN_ISR}"}"
  if [[ "${content}" =~ @@[A-Z_]+@@ ]]; then
    die "unknown placeholder ${BASH_REMATCH[0]} in ${TEMPLATE}"
  fi
  printf '%s\n' "${content}" >"${PROPS_FILE}.tmp"
  mv -- "${PROPS_FILE}.tmp" "${PROPS_FILE}"
}

# ---------------------------------------------------------------- secrets

# 32 random letters and digits (no quoting issues in JAAS, argfiles or property files).
new_password() {
  head -c 48 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | cut -c1-32 | tr -d '\n'
}

password_file() { printf '%s/%s.password' "${SECRETS_DIR}" "$1"; }

# Writes a file only the user can read: $1 path; content on stdin.
write_private() {
  # A temporary name of this process's own: a cluster's nodes write their shared files at once.
  (umask 077 && cat >"$1.tmp.$$" && mv -- "$1.tmp.$$" "$1")
}

# Creates the secrets folder (mode 700) and a password file (mode 600) for every user lacking one.
ensure_passwords() {
  local user file
  (umask 077 && mkdir -p -- "${SECRETS_DIR}")
  chmod 700 -- "$(dirname -- "${SECRETS_DIR}")" "${SECRETS_DIR}"
  for user in "${KAFKA_USERS[@]}"; do
    file="$(password_file "${user}")"
    if [[ ! -s "${file}" ]]; then
      new_password | write_private "${file}"
    fi
    chmod 600 -- "${file}"
  done
}

read_password() {
  local file value
  file="$(password_file "$1")"
  [[ -s "${file}" ]] || die "missing ${file}"
  value="$(<"${file}")"
  [[ "${value}" =~ ^[A-Za-z0-9]+$ ]] ||
    die "${file} must hold letters and digits only (run reset to generate new passwords)"
  printf '%s' "${value}"
}

# The broker's JAAS file: its own identity on both listeners (inter-broker SCRAM, broker to
# controller PLAIN) and the controller listener's only PLAIN user. Plus a client properties
# file for Kafka's own CLI tools (--command-config / --consumer.config) as the super user.
write_jaas() {
  local admin_password
  admin_password="$(read_password admin)"
  write_private "${JAAS_FILE}" <<JAAS
client.KafkaServer {
  org.apache.kafka.common.security.scram.ScramLoginModule required
  username="admin"
  password="${admin_password}";
};
controller.KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required
  username="admin"
  password="${admin_password}"
  user_admin="${admin_password}";
};
JAAS
  write_private "${ADMIN_CLIENT_PROPS}" <<PROPS
security.protocol=SASL_PLAINTEXT
sasl.mechanism=${SCRAM_MECHANISM}
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="${admin_password}";
PROPS
}

# The storage must have been formatted with every user of KAFKA_USERS, and their passwords
# must still be there; anything else is state from before authentication (or damaged).
check_formatted_auth() {
  local user
  if [[ ! -f "${USERS_MARKER}" ]]; then
    die "${DATA_DIR} was formatted without SASL/SCRAM users (state from before authentication)." \
      "Its topics cannot be migrated: run 'bash infra/kafka/kafka.sh reset' (deletes the local data), then start again."
  fi
  for user in "${KAFKA_USERS[@]}"; do
    grep -qxF -- "${user}" "${USERS_MARKER}" ||
      die "${DATA_DIR} was formatted without the SCRAM user '${user}':" \
        "run 'bash infra/kafka/kafka.sh reset' (deletes the local data), then start again."
    [[ -s "$(password_file "${user}")" ]] ||
      die "the password file of '${user}' ($(password_file "${user}")) is gone, so the formatted storage" \
        "cannot be used: run 'bash infra/kafka/kafka.sh reset' (deletes the local data), then start again."
  done
}

java_log_opts() {
  printf '%s\n' "-Dlog4j.configuration=file:${LOG4J_CONFIG}" "-Dkafka.logs.dir=${LOGS_DIR}"
}

format_storage_if_needed() {
  if [[ -f "${DATA_DIR}/meta.properties" ]]; then
    check_formatted_auth
    return 0
  fi
  ensure_passwords
  local cluster_id format_log="${LOGS_DIR}/storage-format.log"
  if [[ -s "${CLUSTER_ID_FILE}" ]]; then
    cluster_id="$(tr -d '[:space:]' <"${CLUSTER_ID_FILE}")"
  else
    cluster_id="$(new_cluster_id)"
    printf '%s\n' "${cluster_id}" >"${CLUSTER_ID_FILE}"
  fi
  mkdir -p -- "${DATA_DIR}"
  say "formatting ${DATA_DIR} (cluster id ${cluster_id}; SCRAM users: ${KAFKA_USERS[*]})"
  local -a log_opts
  mapfile -t log_opts < <(java_log_opts)
  # The passwords reach the storage tool through a java @argfile (mode 600, deleted right
  # after), never through a command line (/proc/<pid>/cmdline is readable by every user).
  local argfile="${SECRETS_DIR}/storage-format.args" user rc=0
  {
    printf '%s\n' -cp "\"${LIBS_DIR}/*\"" kafka.tools.StorageTool format \
      -t "${cluster_id}" -c "\"${PROPS_FILE}\""
    for user in "${KAFKA_USERS[@]}"; do
      printf -- '--add-scram\n%s=[name=%s,password=%s]\n' "${SCRAM_MECHANISM}" "${user}" "$(read_password "${user}")"
    done
  } | write_private "${argfile}"
  "${JAVA}" -Xmx256m -XX:TieredStopAtLevel=1 -Djava.awt.headless=true "${log_opts[@]}" \
    "@${argfile}" >"${format_log}" 2>&1 || rc=$?
  rm -f -- "${argfile}"
  if ((rc != 0)); then
    say "storage format failed; output (${format_log}):"
    tail -n 40 -- "${format_log}" >&2
    exit 1
  fi
  printf '%s\n' "${KAFKA_USERS[@]}" >"${USERS_MARKER}"
}

# Everything a start needs but the JVM: jars, properties, formatted storage (with the SCRAM
# users), JAAS. A cluster prepares its nodes one after another (they share the passwords), then
# starts them together (a node is ready only once a quorum of controllers is up).
do_prepare() {
  command -v "${JAVA}" >/dev/null 2>&1 || die "java not found (install a JDK 17 or set JAVA_HOME)"
  do_fetch
  mkdir -p -- "${DATA_DIR}" "${LOGS_DIR}"
  write_properties
  format_storage_if_needed
  write_jaas
}

do_start() {
  local pid p
  pid="$(running_pid)"
  if [[ -n "${pid}" ]]; then
    # A broker started from older state (no SCRAM users) would refuse every client.
    check_formatted_auth
    if broker_answers "${pid}"; then
      printf '%s\n' "${pid}" >"${PID_FILE}"
      say "already running (pid ${pid}) on ${HOST}:${PORT}"
      return 0
    fi
    # Our JVM is alive but not answering yet (e.g. started by a run that was interrupted).
    say "broker pid ${pid} is up but not answering yet; waiting up to ${START_TIMEOUT}s"
    printf '%s\n' "${pid}" >"${PID_FILE}"
    wait_ready "${pid}" 0
    say "running (pid ${READY_PID}) on ${HOST}:${PORT}"
    return 0
  fi
  rm -f -- "${PID_FILE}"

  for p in "${PORT}" "${CONTROLLER_PORT}"; do
    if port_open "${p}"; then
      die "${HOST}:${p} is already in use by $(describe_port_owner "${p}"), which is not the" \
        "broker for state dir ${STATE_DIR}. Stop it, or set GATEHOUSE_KAFKA_PORT /" \
        "GATEHOUSE_KAFKA_CONTROLLER_PORT."
    fi
  done

  do_prepare

  local offset=0 started
  archive_logs
  local -a log_opts
  mapfile -t log_opts < <(java_log_opts)
  local -a cmd=("${JAVA}" -Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:+ExitOnOutOfMemoryError -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
    "${MARKER_ARG}" "-Djava.security.auth.login.config=${JAAS_FILE}" "${log_opts[@]}"
    -cp "${LIBS_DIR}/*" kafka.Kafka "${PROPS_FILE}")

  say "starting Kafka ${KAFKA_VERSION} on ${HOST}:${PORT} (logs: ${LOGS_DIR})"
  started="${EPOCHREALTIME}"
  {
    printf '=== %s kafka.sh start\n' "$(date '+%Y-%m-%d %H:%M:%S')"
  } >>"${STDOUT_LOG}"
  # New session (setsid) and SIGHUP ignored (nohup): the broker outlives this shell
  # and its terminal. The subshell drops the lock fd (else the JVM would hold the
  # lock for its whole life) and execs, so $! is the JVM's pid.
  (
    if [[ -n "${LOCK_FD}" ]]; then exec {LOCK_FD}>&-; fi
    exec setsid nohup "${cmd[@]}" </dev/null >>"${STDOUT_LOG}" 2>&1
  ) &
  pid=$!
  printf '%s\n' "${pid}" >"${PID_FILE}"

  wait_ready "${pid}" "${offset}"
  say "started (pid ${READY_PID}) on ${HOST}:${PORT} in $(elapsed_since "${started}")s (SASL ${SCRAM_MECHANISM}; passwords in ${SECRETS_DIR})"
}

# ---------------------------------------------------------------- stop

# Send TERM, wait up to $2 seconds, then KILL; $1 pid.
terminate() {
  local pid="$1" wait_s="$2" deadline
  kill -TERM "${pid}" 2>/dev/null || true
  deadline=$(($(now) + wait_s))
  while pid_alive "${pid}" && (($(now) < deadline)); do
    sleep 0.2
  done
  if pid_alive "${pid}"; then
    say "pid ${pid} still running after ${wait_s}s; sending SIGKILL"
    kill -KILL "${pid}" 2>/dev/null || true
    deadline=$(($(now) + 10))
    while pid_alive "${pid}" && (($(now) < deadline)); do
      sleep 0.2
    done
  fi
  ! pid_alive "${pid}"
}

do_stop() {
  local pid stopped=0 straggler
  pid="$(read_pid_file)"
  if [[ -n "${pid}" ]] && pid_is_ours "${pid}"; then
    say "stopping (pid ${pid})"
    terminate "${pid}" "${STOP_TIMEOUT}" || die "could not end pid ${pid}"
    stopped=1
  fi
  rm -f -- "${PID_FILE}"
  # Any other JVM of ours (lost pid file, interrupted start) goes as well.
  while read -r straggler; do
    [[ -n "${straggler}" ]] || continue
    say "stopping leftover broker JVM (pid ${straggler})"
    terminate "${straggler}" "${STOP_TIMEOUT}" || die "could not end pid ${straggler}"
    stopped=1
  done < <(our_pids)
  if [[ -n "$(our_pids)" ]]; then
    die "broker JVMs still running: $(our_pids | tr '\n' ' ')"
  fi
  if ((stopped)); then
    say "stopped"
  else
    say "not running"
  fi
}

# SIGKILL, no shutdown: what a crashed machine does to the broker (the fault tests' kill).
do_kill() {
  local pid killed=0
  while read -r pid; do
    [[ -n "${pid}" ]] || continue
    kill -KILL "${pid}" 2>/dev/null || true
    killed=1
  done < <(our_pids)
  local deadline=$(($(now) + 10))
  while [[ -n "$(our_pids)" ]] && (($(now) < deadline)); do sleep 0.1; done
  [[ -z "$(our_pids)" ]] || die "broker JVMs still running after SIGKILL: $(our_pids | tr '\n' ' ')"
  rm -f -- "${PID_FILE}"
  if ((killed)); then say "killed"; else say "not running"; fi
}

# ---------------------------------------------------------------- status

do_status() {
  local pid
  pid="$(running_pid)"
  if [[ -z "${pid}" ]]; then
    say "not running"
    return 3
  fi
  if broker_answers "${pid}"; then
    say "running (pid ${pid}) on ${HOST}:${PORT}"
    return 0
  fi
  say "pid ${pid} is alive but ${HOST}:${PORT} does not answer (starting, or unhealthy; see ${SERVER_LOG})"
  return 3
}

# ---------------------------------------------------------------- reset

do_reset() {
  do_stop
  rm -rf -- "${DATA_DIR}" "${CLUSTER_ID_FILE}" "${PROPS_FILE}" "${USERS_MARKER}" "${SECRETS_DIR}"
  say "data and Kafka passwords removed (${DATA_DIR}, ${SECRETS_DIR}); jars and logs kept"
}

usage() {
  cat <<EOF
usage: $(basename -- "$0") fetch|prepare|start|stop|kill|status|reset

  fetch   copy the Kafka ${KAFKA_VERSION} jars from Maven into ${LIBS_DIR}
  prepare fetch, write the properties, create the users and format the storage, without starting
  start   start the broker on ${HOST}:${PORT} (prepares as needed); no-op if running
  stop    stop the broker (SIGTERM, SIGKILL after ${STOP_TIMEOUT}s)
  kill    SIGKILL the broker (no shutdown: a crash)
  status  exit 0 when running, 3 when not
  reset   stop, then delete the data (topics, offsets, users) and the Kafka passwords
EOF
}

main() {
  local sub="${1:-}"
  case "${sub}" in
    fetch)
      take_lock
      do_fetch
      ;;
    prepare)
      take_lock
      do_prepare
      ;;
    start)
      take_lock
      do_start
      ;;
    kill)
      take_lock
      do_kill
      ;;
    stop)
      take_lock
      do_stop
      ;;
    reset)
      take_lock
      do_reset
      ;;
    status) do_status ;;
    -h | --help | help) usage ;;
    *)
      usage >&2
      exit 2
      ;;
  esac
}

main "$@"
