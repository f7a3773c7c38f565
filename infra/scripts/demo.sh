#!/usr/bin/env bash
# The main job (README): installs what is missing, starts Kafka and PostgreSQL, provisions
# the topics, builds and starts the four services, waits until each health endpoint
# answers and prints where they listen. Then it stops what it started, unless --keep.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

keep=no
for arg in "$@"; do
  case "$arg" in
    --keep) keep=yes ;;
    *) echo "usage: npm run demo [-- --keep]" >&2; exit 2 ;;
  esac
done

ensure_dependencies
started_kafka=no
if ! bash infra/kafka/kafka.sh status >/dev/null 2>&1; then started_kafka=yes; fi
# Topics get a namespace derived from this broker's cluster id: the services' PostgreSQL
# projections key their offsets by topic name, so a re-formatted broker (new cluster, offsets
# from 0) can never be mistaken for the one whose offsets they stored.
bash infra/kafka/kafka.sh start
cluster_file="$GATEHOUSE_STATE_DIR/kafka/cluster.id"
GATEHOUSE_TOPIC_NAMESPACE="demo-$(sha256sum "$cluster_file" | cut -c1-10)"
export GATEHOUSE_TOPIC_NAMESPACE
bash infra/scripts/infra.sh up
build_all >/dev/null
echo "demo: services built"

SERVICES="policy:4101 approval:4102 idempotency-ledger:4103 audit-export:4104"
# A demo reviewer for the approval service: a fresh API key each run (only its digest is
# configured), kept in a file only the user can read, so a person can sign in to the inbox.
GATEHOUSE_DEMO_REVIEWER_KEY="rk_demo_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
reviewer_key_file="$GATEHOUSE_STATE_DIR/demo-reviewer.key"
(umask 077 && printf '%s\n' "$GATEHOUSE_DEMO_REVIEWER_KEY" >"$reviewer_key_file")
GATEHOUSE_APPROVAL_REVIEWERS="[{\"id\":\"user:dana\",\"role\":\"payments-approver\",\"tenants\":[\"acme\"],\"connectors\":\"*\",\"apiKeySha256\":\"$(printf '%s' "$GATEHOUSE_DEMO_REVIEWER_KEY" | sha256sum | cut -c1-64)\"}]"
export GATEHOUSE_DEMO_REVIEWER_KEY GATEHOUSE_APPROVAL_REVIEWERS
# Signing keys of the granting services (approval, ledger, policy): throwaway Ed25519 keys under
# the git-ignored state dir; every process trusts their public halves, each service signs with its own.
signing_dir="$GATEHOUSE_STATE_DIR/secrets/signing"
node infra/signing/keys.mjs "$signing_dir"
export GATEHOUSE_TRUSTED_KEYS_FILE="$signing_dir/trusted-keys.json"
signing_env() {
  case "$1" in
    approval) echo "GATEHOUSE_SIGNING_KEY_FILE=$signing_dir/approval.pem GATEHOUSE_SIGNING_KEY_ID=$(cat "$signing_dir/approval.id")" ;;
    idempotency-ledger) echo "GATEHOUSE_SIGNING_KEY_FILE=$signing_dir/ledger.pem GATEHOUSE_SIGNING_KEY_ID=$(cat "$signing_dir/ledger.id")" ;;
    policy) echo "GATEHOUSE_SIGNING_KEY_FILE=$signing_dir/policy.pem GATEHOUSE_SIGNING_KEY_ID=$(cat "$signing_dir/policy.id")" ;;
  esac
}
# The Kafka principal of each service (infra/kafka/kafka.sh creates the users).
kafka_user() {
  case "$1" in
    approval) echo svc-approval ;;
    idempotency-ledger) echo svc-ledger ;;
    policy) echo svc-policy ;;
    audit-export) echo svc-audit-export ;;
    *) echo "demo: no Kafka principal for $1" >&2; return 1 ;;
  esac
}
run_dir="$GATEHOUSE_STATE_DIR/services"
mkdir -p "$run_dir"
stop_services() {
  for entry in $SERVICES; do
    local name=${entry%%:*} pid_file="$run_dir/${entry%%:*}.pid"
    [ -f "$pid_file" ] || continue
    local pid
    pid=$(cat "$pid_file")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
      echo "demo: stopped $name"
    fi
    rm -f "$pid_file"
  done
}
cleanup() {
  if [ "$keep" = no ]; then
    stop_services
    if [ "$started_kafka" = yes ]; then bash infra/kafka/kafka.sh stop; fi
  fi
}
trap cleanup EXIT

for entry in $SERVICES; do
  name=${entry%%:*}
  pid_file="$run_dir/$name.pid"
  if [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "demo: $name already running (pid $(cat "$pid_file"))"
    continue
  fi
  # Each service authenticates to Kafka as its own principal (ACLs: libs/kafka/src/acls.ts).
  mapfile -t kafka_pairs < <(kafka_env "$(kafka_user "$name")")
  # shellcheck disable=SC2046 # word splitting of NAME=value pairs is intended
  env "${kafka_pairs[@]}" $(signing_env "$name") node "services/$name/dist/main.js" >"$run_dir/$name.log" 2>&1 &
  echo $! >"$pid_file"
done

printf '\n%-20s %-28s %s\n' SERVICE URL HEALTH
failed=0
for entry in $SERVICES; do
  name=${entry%%:*} port=${entry##*:}
  url="http://127.0.0.1:$port"
  status=down
  deadline=$((SECONDS + 90))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if body=$(curl -fsS --max-time 3 "$url/health" 2>/dev/null); then status=$body; break; fi
    if ! kill -0 "$(cat "$run_dir/$name.pid")" 2>/dev/null; then status="exited (see $run_dir/$name.log)"; break; fi
    sleep 0.5
  done
  printf '%-20s %-28s %s\n' "$name" "$url" "$status"
  case "$status" in '{'*'"status":"ok"'*) ;; *) failed=1 ;; esac
done
echo
echo "kafka:    127.0.0.1:${GATEHOUSE_KAFKA_PORT:-9092} (topics: $GATEHOUSE_TOPIC_NAMESPACE.gatehouse.{audit,approvals,ledger,policies,policy-evaluations,dead-letter}.v1)"
echo "          SASL/SCRAM-SHA-512; one user per principal, passwords in $GATEHOUSE_STATE_DIR/secrets/kafka/<user>.password"
echo "postgres: 127.0.0.1:5432/gatehouse (one schema per service)"
echo "logs:     $run_dir/<service>.log, $GATEHOUSE_STATE_DIR/kafka/logs/"
echo "inbox:    http://127.0.0.1:4102/inbox (reviewer user:dana; API key in $reviewer_key_file)"
if [ "$failed" -ne 0 ]; then
  echo "demo: a service is not healthy" >&2
  exit 1
fi

# The scenario: an agent process guarded by @gatehouse/guard against the running suite.
scenario_out="$run_dir/scenario.out"
# The agent process authenticates as the least trusted principal, `agent`.
mapfile -t agent_pairs < <(kafka_env agent)
env "${agent_pairs[@]}" node infra/demo/scenario.mjs | tee "$scenario_out"
run_id=$(sed -n 's/^DEMO_RUN_ID=//p' "$scenario_out")
echo
echo "== 4. The security team verifies the audit trail (gatehouse audit verify --topic)"
node cli/dist/main.js audit verify --topic
if [ -n "$run_id" ]; then
  echo
  echo "== 5. The audit-export query API: the run's decision timeline (GET /v1/runs/$run_id/timeline)"
  timeline=""
  for _ in $(seq 1 50); do
    timeline=$(curl -fsS "http://127.0.0.1:4104/v1/runs/$run_id/timeline" 2>/dev/null || true)
    case "$timeline" in *'"code"'*) break ;; esac
    sleep 0.2
  done
  node -e '
    const body = JSON.parse(process.argv[1] || "{}");
    const items = body.items ?? body.decisions ?? body.timeline ?? [];
    for (const d of items) console.log(`   ${String(d.boundary ?? "").padEnd(11)} ${String(d.outcome ?? d.decision ?? "").padEnd(9)} ${d.code}`);
    console.log(`   (${items.length} decisions in the projection)`);
  ' "$timeline" || echo "   (the audit-export query API did not answer)"
fi
echo
if [ "$keep" = yes ]; then
  echo "demo: running; stop everything with: npm run infra:down"
else
  echo "demo: all four services healthy; stopping (run 'npm run demo -- --keep' to leave them running)"
fi
