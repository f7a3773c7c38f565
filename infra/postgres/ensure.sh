#!/usr/bin/env bash
# Makes sure PostgreSQL answers on 127.0.0.1:5432 and that the gatehouse database, one
# role per service and each service's schema exist. Idempotent: safe to run any time.
set -euo pipefail

HOST=${GATEHOUSE_PG_HOST:-127.0.0.1}
PORT=${GATEHOUSE_PG_PORT:-5432}
ADMIN=${GATEHOUSE_PG_ADMIN_USER:-postgres}
DB=gatehouse
# service role:schema pairs; libs/service-runtime/src/services.ts holds the same table.
PAIRS="gatehouse_policy:policy gatehouse_approval:approval gatehouse_ledger:ledger gatehouse_audit_export:audit_export"

psql_admin() { PGOPTIONS="-c client_min_messages=warning" psql -h "$HOST" -p "$PORT" -U "$ADMIN" -v ON_ERROR_STOP=1 -qAt "$@"; }

if ! pg_isready -h "$HOST" -p "$PORT" -q; then
  # The machine's cluster may merely be stopped; start it when we can.
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    version=$(ls /etc/postgresql | sort -V | tail -1)
    echo "postgres: starting cluster $version/main"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  fi
  deadline=$((SECONDS + 60))
  until pg_isready -h "$HOST" -p "$PORT" -q; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "postgres: nothing answers on $HOST:$PORT; install PostgreSQL (apt-get install -y postgresql) or set GATEHOUSE_PG_HOST/PORT" >&2
      exit 1
    fi
    sleep 1
  done
fi

if [ "$(psql_admin -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != "1" ]; then
  psql_admin -d postgres -c "CREATE DATABASE $DB"
fi
for pair in $PAIRS; do
  role=${pair%%:*} schema=${pair##*:}
  psql_admin -d "$DB" <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$role') THEN
    CREATE ROLE $role LOGIN;
  END IF;
END \$\$;
GRANT CONNECT ON DATABASE $DB TO $role;
CREATE SCHEMA IF NOT EXISTS $schema AUTHORIZATION $role;
ALTER SCHEMA $schema OWNER TO $role;
SQL
done
echo "postgres: database $DB ready on $HOST:$PORT (schemas: $(for p in $PAIRS; do printf '%s ' "${p##*:}"; done))"
