#!/usr/bin/env bash
# Runs the whole test suite, first on PostgreSQL, then on SQLite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_venv test
export KARIBU_TEST_REDIS_URL="${KARIBU_TEST_REDIS_URL:-redis://127.0.0.1:6379/1}"
export KARIBU_TEST_POSTGRES_URL="${KARIBU_TEST_POSTGRES_URL:-postgresql://$(id -un)@127.0.0.1:5432/postgres}"
ensure_redis "$KARIBU_TEST_REDIS_URL"
ensure_postgres
if [ -d tests/e2e ]; then ensure_chromium; fi
ensure_nginx

status=0
say "Test suite on PostgreSQL"
KARIBU_TEST_DB=postgres "$PYTHON" -m pytest -p no:cacheprovider "$@" || status=$?
say "Test suite on SQLite"
KARIBU_TEST_DB=sqlite "$PYTHON" -m pytest -p no:cacheprovider "$@" || status=$?
exit "$status"
