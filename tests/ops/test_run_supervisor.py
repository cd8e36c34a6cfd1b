"""scripts/run.sh's supervisor (scripts/lib.sh): a child that dies is restarted, SIGTERM stops them all."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
set -euo pipefail
source scripts/lib.sh
run_crashing() { echo started >>"$WORK/crashing.starts"; exit 3; }
run_steady() { echo "$BASHPID" >>"$WORK/steady.pids"; exec sleep 600; }
stop() { stop_children; exit 0; }
trap stop TERM
start_child crashing
start_child steady
supervise
"""


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_dying_child_is_restarted_and_sigterm_stops_everything(tmp_path):
    supervisor = subprocess.Popen(["bash", "-c", SCRIPT], cwd=ROOT, env={**os.environ, "WORK": str(tmp_path)},
                                  stderr=subprocess.PIPE, text=True, start_new_session=True)
    starts = tmp_path / "crashing.starts"
    try:
        # Pauses of 1, 2 s: started a third time after about 5 s.
        assert wait_for(lambda: starts.exists() and len(starts.read_text().split()) >= 3, 15)
        steady = [int(pid) for pid in (tmp_path / "steady.pids").read_text().split()]
        assert len(steady) == 1 and alive(steady[0])  # the healthy child was left alone

        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=10) == 0
        assert wait_for(lambda: not alive(steady[0]), 5)
        log = supervisor.stderr.read()
        assert "The crashing process died (exit status 3); restarting it in 1 s" in log
        assert "The crashing process died (exit status 3); restarting it in 2 s" in log
        assert "steady" not in log
    finally:
        try:  # whatever is left of this test's process group (only if an assertion failed)
            os.killpg(supervisor.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        supervisor.wait()
