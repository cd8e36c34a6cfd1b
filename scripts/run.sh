#!/usr/bin/env bash
# Runs the whole Karibu service with demo data: SQLite database (instance/karibu.db), Redis, an RQ worker
# with its scheduler, the exam-registry simulator, a local SMTP sink (when MAIL_SERVER is unset), a development
# webhook receiver (WEBHOOK_DEV_RECEIVER_URL: the one http/loopback webhook target this demo accepts) and the web
# server. A child that dies is restarted (see `supervise` in scripts/lib.sh); Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_venv ""
if [ ! -f .env ]; then
  say "Writing .env with a fresh SECRET_KEY"
  # Readable by this user only (umask in a subshell: the files written later keep the usual mode).
  (umask 077; echo "SECRET_KEY=$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(48))')" > .env)
fi
if [ -n "$(find .env -perm /077)" ]; then
  say "WARNING: .env may be read by other users; making it private (chmod 600 .env)"
  chmod 600 .env
fi
set -a; source .env; set +a
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
PORT="${PORT:-8000}"
export PUBLIC_BASE_URL="${PUBLIC_BASE_URL:-http://127.0.0.1:$PORT}"
WEBHOOK_RECEIVER_PORT="${WEBHOOK_RECEIVER_PORT:-8766}"
export WEBHOOK_DEV_RECEIVER_URL="http://127.0.0.1:$WEBHOOK_RECEIVER_PORT"
ensure_redis "$REDIS_URL"
MAIL_SINK=""
if [ -z "${MAIL_SERVER:-}" ]; then
  # No mail server configured: emails go over SMTP to a local sink (instance/mail/*.eml), whose inbox page
  # (MAIL_DEV_INBOX_URL, linked from the portal's Messages page) shows each one as its reader sees it.
  MAIL_SINK=1
  MAIL_INBOX_PORT="${MAIL_INBOX_PORT:-8024}"
  export MAIL_SERVER=127.0.0.1 MAIL_PORT="${MAIL_SINK_PORT:-8025}" MAIL_USE_TLS=false MAIL_USE_SSL=false
  export MAIL_DEV_INBOX_URL="http://127.0.0.1:$MAIL_INBOX_PORT"
fi

FLASK=("$PYTHON" -m flask --app wsgi)
say "Applying database migrations"
"${FLASK[@]}" db upgrade 2>/dev/null
say "Loading demo data"
seed_json="$("${FLASK[@]}" seed-demo --json 2>/dev/null)"

# A worker asked to stop exits within 30 s (it finishes its sends in flight); one still running after 40 s is killed.
WORKER_STOP_SECONDS=40
stop() {
  say "Stopping Karibu"; trap - EXIT
  ( sleep "$WORKER_STOP_SECONDS"; kill -9 "${CHILD_PID[worker]}" 2>/dev/null ) & local deadline=$!
  stop_children; kill "$deadline" 2>/dev/null; exit 0
}
trap stop_children EXIT
trap stop INT TERM

# Each child is restarted by `supervise` (scripts/lib.sh) when it dies; its log is appended to.
run_mail_sink() {
  exec "${FLASK[@]}" mail-sink --port "$MAIL_PORT" --inbox-port "$MAIL_INBOX_PORT" >>instance/mail-sink.log 2>&1
}
run_worker() { exec "${FLASK[@]}" worker >>instance/worker.log 2>&1; }
# No exam registry publishes a public API: live lookups go to the bundled simulator (REGISTRY_*_URL).
run_registry_simulator() {
  exec "${FLASK[@]}" registry-simulator --port 8765 --quiet >>instance/registry-simulator.log 2>&1
}
run_webhook_receiver() {
  exec "${FLASK[@]}" webhook-receiver --port "$WEBHOOK_RECEIVER_PORT" >>instance/webhook-receiver.log 2>&1
}
run_web() {
  exec "$VENV_DIR/bin/gunicorn" -c python:ops.gunicorn_config --bind "127.0.0.1:$PORT" wsgi:app >>instance/web.log 2>&1
}
: >instance/web.log; : >instance/worker.log; : >instance/registry-simulator.log; : >instance/webhook-receiver.log
if [ -n "$MAIL_SINK" ]; then : >instance/mail-sink.log; start_child mail_sink; fi
start_child worker
start_child registry_simulator
start_child webhook_receiver
start_child web

for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2
done

"$PYTHON" - "$seed_json" "$PORT" "${MAIL_DEV_INBOX_URL:-}" "$WEBHOOK_DEV_RECEIVER_URL" <<'PY'
import json, sys
seed, port, inbox, hooks = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
mail = f"a local sink, its inbox at {inbox}/ (files: instance/mail/*.eml)" if inbox else "the configured MAIL_SERVER"
then = (f"open the inbox at {inbox} and click the link in the decision email" if inbox
        else "open the email in the applicant's mailbox and click its link")
print(f"""
Karibu is running.

  Portal:         http://127.0.0.1:{port}/
  Try page:       http://127.0.0.1:{port}/try
  API:            http://127.0.0.1:{port}/api/v1  (OpenAPI: /api/v1/openapi.json)
  Staff login:    {seed['staff_email']} / {seed['staff_password']}
  Live API key:   {seed['api_key']}
  Trial API key:  {seed['trial_api_key']}
  Emails go to:   {mail}
  Webhooks:       {hooks}/  (development receiver: in the portal, Webhooks > "Use the development receiver")

  For the examples of README.md and docs/:
  export KARIBU_URL=http://127.0.0.1:{port} KARIBU_API_KEY={seed['api_key']}
  curl -H "Authorization: Bearer $KARIBU_API_KEY" "$KARIBU_URL/api/v1/applications"

Send a decision from an applicant's file, then {then}.
Logs: instance/web.log, instance/worker.log, instance/registry-simulator.log, instance/mail-sink.log,
instance/webhook-receiver.log.
Press Ctrl-C to stop.
""")
PY
supervise
