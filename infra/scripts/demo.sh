#!/usr/bin/env bash
# The main job (README): installs what is missing, starts Kafka and PostgreSQL, provisions the
# topics, users and ACLs, builds and starts the four services, then runs a guarded support agent
# against them (infra/demo/scenario.mjs) and shows what the security team sees: the verified
# hash chain, the run's decision timeline and the SIEM file, and replays the run's decisions under
# a candidate policy (what-if). Then it stops what it started,
# unless --keep. The refund in the scenario waits for a person unless --auto-approve (or when
# there is no terminal to wait on).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

keep=no
auto_approve=no
for arg in "$@"; do
  case "$arg" in
    --keep) keep=yes ;;
    --auto-approve) auto_approve=yes ;;
    *) echo "usage: npm run demo [-- --keep] [-- --auto-approve]" >&2; exit 2 ;;
  esac
done
if [ "$auto_approve" = no ] && [ ! -t 0 ]; then
  echo "demo: no terminal to wait on a reviewer: the demo approves the refund itself (as with --auto-approve)"
  auto_approve=yes
fi

echo "== 0. Starting the suite: Kafka (KRaft, SASL), PostgreSQL, four services"
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
echo "demo: building the services (Nx; cached after the first run)"
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
# A demo policy operator for the policy service, the same way: may publish the `support` set.
GATEHOUSE_DEMO_OPERATOR_KEY="ok_demo_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
GATEHOUSE_POLICY_OPERATORS="[{\"id\":\"user:olga\",\"role\":\"policy-admin\",\"policySets\":[\"support\"],\"publish\":true,\"apiKeySha256\":\"$(printf '%s' "$GATEHOUSE_DEMO_OPERATOR_KEY" | sha256sum | cut -c1-64)\"}]"
export GATEHOUSE_DEMO_OPERATOR_KEY GATEHOUSE_POLICY_OPERATORS
# The security team's SIEM integration reads the audit-export query API for tenant acme, the same way.
GATEHOUSE_DEMO_READER_KEY="rk_demo_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
reader_key_file="$GATEHOUSE_STATE_DIR/demo-audit-reader.key"
(umask 077 && printf '%s\n' "$GATEHOUSE_DEMO_READER_KEY" >"$reader_key_file")
GATEHOUSE_AUDIT_READERS="[{\"id\":\"siem:acme\",\"role\":\"siem\",\"tenants\":[\"acme\"],\"apiKeySha256\":\"$(printf '%s' "$GATEHOUSE_DEMO_READER_KEY" | sha256sum | cut -c1-64)\"}]"
export GATEHOUSE_AUDIT_READERS
# The demo agent's API key for the idempotency ledger, bound to tenant acme: kept (a ledger left
# running by --keep knows it) in a file only the user can read; the scenario reads it from there.
ledger_key_file="$GATEHOUSE_STATE_DIR/demo-agent-ledger.key"
[ -s "$ledger_key_file" ] || (umask 077 && printf 'lk_demo_%s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$ledger_key_file")
GATEHOUSE_LEDGER_AGENTS="[{\"id\":\"agent:support-bot\",\"tenants\":[\"acme\"],\"apiKeySha256\":\"$(head -n 1 "$ledger_key_file" | tr -d '\n' | sha256sum | cut -c1-64)\"}]"
export GATEHOUSE_LEDGER_AGENTS
# Signing keys of the granting services (approval, ledger, policy): throwaway Ed25519 keys under
# the git-ignored state dir; every process trusts their public halves, each service signs with its own.
signing_dir="$GATEHOUSE_STATE_DIR/secrets/signing"
node infra/signing/keys.mjs "$signing_dir"
# The demo agent's claim key: its approval requests and withdrawals are signed with it, and every
# fold counts them only for the agent and tenant the trusted keys bind it to.
node infra/signing/keys.mjs "$signing_dir" --agent support-bot agent:support-bot acme
# Tenant acme's content key: its requests and decisions are sealed on the approvals topic, so no
# other tenant's agent reading it learns what they say. The approval service and acme's agent hold it.
node infra/signing/keys.mjs "$signing_dir" --content acme
export GATEHOUSE_TRUSTED_KEYS_FILE="$signing_dir/trusted-keys.json"
export GATEHOUSE_CONTENT_KEYS_FILE="$signing_dir/content-keys.json"
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
# The SIEM feed: audit-export writes OCSF (and CEF) JSON lines into this folder.
siem_dir="$GATEHOUSE_STATE_DIR/siem"
service_env() {
  case "$1" in
    audit-export) echo "GATEHOUSE_EXPORT_FILE_DIR=$siem_dir" ;;
    # A completed idempotency key replays its result for a day, then the ledger forgets it.
    idempotency-ledger) echo "GATEHOUSE_LEDGER_RETAIN_COMPLETED_MS=86400000" ;;
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

echo "demo: starting the four services, each as its own Kafka principal; waiting for their health"
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
  env "${kafka_pairs[@]}" $(signing_env "$name") $(service_env "$name") node "services/$name/dist/main.js" >"$run_dir/$name.log" 2>&1 &
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
echo "audit:    http://127.0.0.1:4104/v1/decisions (reader siem:acme; API key in $reader_key_file)"
if [ "$failed" -ne 0 ]; then
  echo "demo: a service is not healthy" >&2
  exit 1
fi

# The scenario: an agent process guarded by @gatehouse/guard against the running suite. It
# authenticates as the least trusted principal, `agent`.
scenario_out="$run_dir/scenario.out"
summary_file="$run_dir/scenario.json"
scenario_args=()
if [ "$auto_approve" = yes ]; then scenario_args+=(--auto-approve); fi
run_started=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
mapfile -t agent_pairs < <(kafka_env agent)
env "${agent_pairs[@]}" GATEHOUSE_AGENT_KEY_FILE="$signing_dir/agent-support-bot.pem" GATEHOUSE_AGENT_KEY_ID="$(cat "$signing_dir/agent-support-bot.id")" \
  GATEHOUSE_AGENT_ID=agent:support-bot GATEHOUSE_AGENT_TENANTS=acme GATEHOUSE_DEMO_REVIEWER_KEY_FILE="$reviewer_key_file" GATEHOUSE_DEMO_SUMMARY_FILE="$summary_file" \
  GATEHOUSE_LEDGER_API_KEY_FILE="$ledger_key_file" \
  node infra/demo/scenario.mjs "${scenario_args[@]}" | tee "$scenario_out" | grep -v '^DEMO_RUN_ID='
run_id=$(sed -n 's/^DEMO_RUN_ID=//p' "$scenario_out")

echo
echo "== 9. The security team verifies the hash chain and the source of every decision (gatehouse audit verify --topic)"
# Exit 1 is tampering, 3 records no checkpoint vouches for: shown, never the end of the demo.
verify_out=$(node cli/dist/main.js audit verify --topic) || true
echo "$verify_out" | sed 's/^/   /'

echo
echo "== 10. The run's decision timeline, from the audit-export query API (GET /v1/runs/$run_id/timeline)"
timeline=""
expected=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).decisions.length)' "$summary_file")
for _ in $(seq 1 100); do
  timeline=$(curl -fsS -H "Authorization: Bearer $GATEHOUSE_DEMO_READER_KEY" "http://127.0.0.1:4104/v1/runs/$run_id/timeline" 2>/dev/null || true)
  got=$(node -e 'try { console.log(JSON.parse(process.argv[1]).decisions.length) } catch { console.log(0) }' "$timeline")
  [ "$got" -ge "$expected" ] && break
  sleep 0.2
done
node -e '
  const body = JSON.parse(process.argv[1] || "{}");
  const items = body.decisions ?? [];
  for (const d of items) console.log(`   ${String(d.logTime).slice(11, 23)}  ${String(d.boundary).padEnd(11)} ${String(d.outcome).padEnd(17)} ${String(d.toolId ?? "").padEnd(16)} ${d.code}`);
  console.log(`   (${items.length} of the run'"'"'s decisions are in the audit projection)`);
' "$timeline" || echo "   (the audit-export query API did not answer)"
ocsf_files=$(find "$siem_dir" -name 'ocsf-*.jsonl' 2>/dev/null | sort)
if [ -n "$ocsf_files" ]; then
  # shellcheck disable=SC2086 # a list of paths without spaces
  in_file=$(cat $ocsf_files | grep -c "$run_id" || true)
  echo "   SIEM file (OCSF 1.3 JSON lines): $(echo "$ocsf_files" | head -1) — $in_file lines for this run"
else
  echo "   SIEM file: none written under $siem_dir" >&2
fi

echo
echo "== 11. Before publishing a change, the operator replays this run's decisions under a candidate"
echo "   gatehouse policy what-if --bundle infra/demo/candidate-policy.yaml --from $run_started"
node cli/dist/main.js policy what-if --bundle infra/demo/candidate-policy.yaml --from "$run_started" --environment demo | sed 's/^/   /' \
  || echo "   (what-if could not read the audit topic)"

echo
if [ "$keep" = yes ]; then
  echo "demo: running; the inbox is at http://127.0.0.1:4102/inbox; stop everything with: npm run infra:down"
else
  echo "demo: done; stopping what it started (run 'npm run demo -- --keep' to leave the suite running)"
fi
