#!/usr/bin/env bash
# Refreshes the pictures in docs/screenshots from a fresh end-to-end run. The tests themselves only ever
# write to test-results/screenshots/ (ignored by git); this is the one command that changes docs/.
# Extra arguments go to pytest (e.g. -k portal_flow).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_venv test
export KARIBU_TEST_REDIS_URL="${KARIBU_TEST_REDIS_URL:-redis://127.0.0.1:6379/1}"
ensure_redis "$KARIBU_TEST_REDIS_URL"
ensure_chromium

rm -rf test-results/screenshots
say "End-to-end run (screenshots go to test-results/screenshots/)"
KARIBU_TEST_DB="${KARIBU_TEST_DB:-sqlite}" "$PYTHON" -m pytest -p no:cacheprovider -q tests/e2e "$@"
mkdir -p docs/screenshots
cp test-results/screenshots/*.png docs/screenshots/
say "Copied $(ls test-results/screenshots/*.png | wc -l) screenshots into docs/screenshots/; review and commit them"
