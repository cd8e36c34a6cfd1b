#!/usr/bin/env bash
# Runs the whole test suite on PostgreSQL and on SQLite at the same time, each with pytest-xdist workers.
# Extra arguments go to both pytest runs. Each run's output is kept in its own file and printed, under its
# database's name, when the run ends; the script fails when either run fails.
#
# Workers: KARIBU_TEST_WORKERS_POSTGRES (default 3) and KARIBU_TEST_WORKERS_SQLITE (default 2); the PostgreSQL
# run is the longer one (its outage tests wait on real servers), so it gets one more.
# Tests marked latency_bound (they assert how long deliveries wait) run afterwards, alone, one database after the
# other: a bound measured while five test workers overcommit two CPUs says more about the machine than the code.
# Redis: KARIBU_TEST_REDIS_URL names the first database (default 1). The PostgreSQL run's workers use it and
# the next ones (one per worker), the SQLite run's workers the ones after those (1 to 5 by default), each free
# or already marked as the suite's (tests/redis_guard.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_venv test
export KARIBU_TEST_REDIS_URL="${KARIBU_TEST_REDIS_URL:-redis://127.0.0.1:6379/1}"
export KARIBU_TEST_POSTGRES_URL="${KARIBU_TEST_POSTGRES_URL:-postgresql://$(id -un)@127.0.0.1:5432/postgres}"
POSTGRES_WORKERS="${KARIBU_TEST_WORKERS_POSTGRES:-3}"
SQLITE_WORKERS="${KARIBU_TEST_WORKERS_SQLITE:-2}"
ensure_redis "$KARIBU_TEST_REDIS_URL"
ensure_postgres
if [ -d tests/e2e ]; then ensure_chromium; fi
ensure_nginx

redis_base="${KARIBU_TEST_REDIS_URL%/*}"
first_db="${KARIBU_TEST_REDIS_URL##*/}"
case "$first_db" in ''|*[!0-9]*) redis_base="$KARIBU_TEST_REDIS_URL"; first_db=0 ;; esac

logs="$(mktemp -d)"
pids=()
stop_runs() { for pid in "${pids[@]}"; do kill -- "$pid" 2>/dev/null || true; done; }
trap 'stop_runs; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM

# One database's run, in the background: its workers keep whole test files together, so a file's live servers
# start once.
start_suite() {  # database, workers, first Redis database number, pytest arguments
  KARIBU_TEST_DB="$1" KARIBU_TEST_REDIS_URL="$redis_base/$3" \
    "$PYTHON" -m pytest -p no:cacheprovider -n "$2" --dist loadfile "${@:4}" >"$logs/$1.log" 2>&1 &
  pids+=($!)
}

say "Test suite on PostgreSQL ($POSTGRES_WORKERS workers) and on SQLite ($SQLITE_WORKERS workers) at the same time"
start_suite postgres "$POSTGRES_WORKERS" "$first_db" -m "not latency_bound" "$@"
start_suite sqlite "$SQLITE_WORKERS" "$((first_db + POSTGRES_WORKERS))" -m "not latency_bound" "$@"

status=0
outcomes=()
for index in 0 1; do
  database=$([ "$index" -eq 0 ] && echo postgres || echo sqlite)
  name=$([ "$index" -eq 0 ] && echo PostgreSQL || echo SQLite)
  run_status=0
  wait "${pids[$index]}" || run_status=$?
  say "Test suite on $name"
  cat "$logs/$database.log"
  if [ "$run_status" -eq 0 ]; then outcomes+=("$name: passed"); else
    outcomes+=("$name: FAILED (pytest exit status $run_status)"); status=1; fi
done
pids=()

# The latency-bound tests, alone on the machine. pytest's exit status 5 (no test selected, e.g. when the arguments
# name other files) is not a failure.
for database in postgres sqlite; do
  name=$([ "$database" = postgres ] && echo PostgreSQL || echo SQLite)
  say "Latency-bound tests on $name, alone"
  run_status=0
  KARIBU_TEST_DB="$database" KARIBU_TEST_REDIS_URL="$redis_base/$first_db" \
    "$PYTHON" -m pytest -p no:cacheprovider -m latency_bound "$@" || run_status=$?
  if [ "$run_status" -eq 0 ] || [ "$run_status" -eq 5 ]; then outcomes+=("$name, latency-bound tests: passed"); else
    outcomes+=("$name, latency-bound tests: FAILED (pytest exit status $run_status)"); status=1; fi
done

for outcome in "${outcomes[@]}"; do say "$outcome"; done
exit "$status"
