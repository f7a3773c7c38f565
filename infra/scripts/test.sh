#!/usr/bin/env bash
# The test command (README): installs what is missing, starts the infrastructure, builds,
# typechecks, lints and runs every project's tests, then stops what it started.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

ensure_dependencies

# kcat is the SIEM stand-in the audit-export tests read the Kafka feed with: a Kafka client
# nobody in this project wrote. Debian packages it; install it when it is missing.
if ! command -v kcat >/dev/null 2>&1; then
  echo "setup: installing kcat (apt-get)"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && apt-get install -y -qq kcat >/dev/null
  else
    sudo apt-get update -qq >/dev/null && sudo apt-get install -y -qq kcat >/dev/null
  fi
fi

# The approval inbox's browser test drives Debian's Chromium through playwright-core (no browser
# is ever downloaded). Install the package when it is missing and no other binary is named.
if [ -z "${GATEHOUSE_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
  echo "setup: installing chromium (apt-get)"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq >/dev/null && sudo apt-get install -y -qq chromium >/dev/null
  fi
fi

# The tests get a broker of their own (own_broker, lib.sh). Their default Kafka client is its
# super user `admin`; specs and the processes they start take other principals' password files
# from beside admin's.
# Every test provisions topics in a namespace of its own, hundreds per run: at the catalog's 12
# partitions per topic that is ~20,000 partitions on one broker. The tests' broker gets 3 (the
# product is the same at any count; the scale tests split 3 between replicas).
export GATEHOUSE_TOPIC_PARTITIONS="${GATEHOUSE_TOPIC_PARTITIONS:-3}"
own_broker test "${GATEHOUSE_TEST_KAFKA_PORT:-19092}" "${GATEHOUSE_TEST_KAFKA_CONTROLLER_PORT:-19093}"
echo "test: build"
build_all
echo "test: typecheck and lint"
nx run-many -t typecheck lint --outputStyle=static
echo "test: tests"
export GATEHOUSE_TEST_RESULTS_DIR="$GATEHOUSE_STATE_DIR/test-results"
rm -rf "$GATEHOUSE_TEST_RESULTS_DIR" .artifacts
# One project at a time: the integration specs share one broker on a 2-core machine.
status=0
nx run-many -t test --parallel=1 --outputStyle=stream || status=$?
# One closing line for the whole workspace.
node -e '
  const fs = require("fs"), path = require("path"), dir = process.argv[1];
  const t = { passed: 0, failed: 0, skipped: 0 }, failures = [];
  for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const c = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
    for (const k of Object.keys(t)) t[k] += c[k];
    failures.push(...(c.failures ?? []));
  }
  for (const f of failures) console.log(`FAILED ${f.test}\n${f.message.replace(/^/gm, "  ")}`);
  console.log(`${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`);
' "$GATEHOUSE_TEST_RESULTS_DIR"
# Files the tests leave for CI to keep (the inbox screenshot).
if [ -d .artifacts ]; then
  find .artifacts -type f | sort | sed 's/^/artifact: /'
fi
exit "$status"
