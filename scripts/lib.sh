# Shared set-up steps for scripts/run.sh and scripts/test.sh (sourced, not run).

VENV_DIR="${KARIBU_VENV:-.venv}"
PYTHON="$VENV_DIR/bin/python"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    say "Need root for: $*"; return 1; fi
}

apt_install() {
  if ! command -v apt-get >/dev/null; then
    say "Please install: $* (no apt-get on this machine)"; return 1
  fi
  if [ -z "${KARIBU_APT_UPDATED:-}" ]; then as_root apt-get update -qq >/dev/null; KARIBU_APT_UPDATED=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_venv() {
  local extras="$1"
  if [ ! -x "$PYTHON" ]; then
    say "Creating virtual environment in $VENV_DIR"
    python3 -m venv "$VENV_DIR" 2>/dev/null || { apt_install python3-venv && python3 -m venv "$VENV_DIR"; }
  fi
  local stamp="$VENV_DIR/.installed-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)-$extras"
  if [ ! -f "$stamp" ]; then
    say "Installing Python packages"
    "$PYTHON" -m pip install -q --upgrade pip
    local target="."; [ -n "$extras" ] && target=".[$extras]"
    "$PYTHON" -m pip install -q -c constraints.txt -e "$target"
    touch "$stamp"
  fi
}

redis_answers() { "$PYTHON" - "$1" <<'PY' 2>/dev/null
import sys, redis
redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1).ping()
PY
}

ensure_redis() {
  local url="${1:-redis://127.0.0.1:6379/0}"
  if redis_answers "$url"; then return 0; fi
  if ! command -v redis-server >/dev/null; then
    say "Redis is not running; installing redis-server"
    apt_install redis-server || { say "Install Redis (e.g. 'apt-get install redis-server') and run this again."; return 1; }
  fi
  say "Starting a local redis-server on 127.0.0.1:6379"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 50); do redis_answers "$url" && return 0; sleep 0.1; done
  say "Redis did not start"; return 1
}

ensure_postgres() {
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return 0; fi
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    say "PostgreSQL is not installed; installing it"
    apt_install postgresql
  fi
  say "Starting PostgreSQL"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  for _ in $(seq 1 100); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.2; done
  pg_isready -q -h 127.0.0.1 -p 5432 || { say "PostgreSQL did not start"; return 1; }
  # Tests connect as the current OS user over TCP; make sure that role exists.
  local user; user="$(id -un)"
  as_root su postgres -c "psql -tAc \"SELECT 1 FROM pg_roles WHERE rolname='$user'\" | grep -q 1 || createuser -s '$user'" \
    >/dev/null 2>&1 || true
}

ensure_chromium() {
  if command -v chromium >/dev/null || [ -x /usr/bin/chromium ]; then return 0; fi
  say "Installing Debian's chromium for the browser tests"
  apt_install chromium
}

ensure_nginx() {
  if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then return 0; fi
  say "Installing nginx for the edge tests (deploy/nginx.conf is run for real)"
  apt_install nginx-light || apt_install nginx || say "nginx could not be installed; the edge tests will be skipped"
}

# A small supervisor for scripts/run.sh: each child is a shell function `run_<name>`, started in the
# background by `start_child <name>`; `supervise` restarts a child that exits (its pause doubles from
# CHILD_RESTART_PAUSE seconds to 30 s while it keeps dying within a minute) until `stop_children` ends them.
# Children are checked once a second, so a signal trapped by the caller is handled within a second.
declare -A CHILD_PID=() CHILD_STARTED=() CHILD_PAUSE=()
CHILD_RESTART_PAUSE="${CHILD_RESTART_PAUSE:-1}"

start_child() {
  local name="$1"
  "run_$name" & CHILD_PID[$name]=$!
  CHILD_STARTED[$name]=$SECONDS
}

stop_children() {
  local name
  for name in "${!CHILD_PID[@]}"; do kill "${CHILD_PID[$name]}" 2>/dev/null || true; done
  for name in "${!CHILD_PID[@]}"; do wait "${CHILD_PID[$name]}" 2>/dev/null || true; done
}

supervise() {
  local name status pause
  while true; do
    sleep 1
    for name in "${!CHILD_PID[@]}"; do
      kill -0 "${CHILD_PID[$name]}" 2>/dev/null && continue
      status=0; wait "${CHILD_PID[$name]}" || status=$?
      pause="${CHILD_PAUSE[$name]:-$CHILD_RESTART_PAUSE}"
      (( SECONDS - CHILD_STARTED[$name] >= 60 )) && pause="$CHILD_RESTART_PAUSE"
      say "The $name process died (exit status $status); restarting it in ${pause} s"
      sleep "$pause"
      CHILD_PAUSE[$name]=$(( pause * 2 > 30 ? 30 : pause * 2 ))
      start_child "$name"
    done
  done
}
