"""During a database outage each request logs one warning line for the audit row it could not write (the error's
class and message), never a traceback: a real gunicorn on a closed database port."""
from __future__ import annotations

import pytest

from tests.conftest import REDIS_URL
from tests.ops.processes import Processes, app_environment, free_port
from tests.ops.test_database_outage import FLUTTERWAVE_HASH, requests_of_every_kind

ROUNDS = 3


@pytest.fixture
def processes(tmp_path):
    running = Processes(tmp_path)
    yield running
    running.stop_all()


def test_a_database_outage_logs_one_line_per_lost_audit_row_and_no_traceback(app, factory, processes, tmp_path):
    institution = factory.institution()
    _, key = factory.api_key(institution)
    closed = f"postgresql://karibu@127.0.0.1:{free_port()}/karibu"
    env = app_environment(closed, REDIS_URL, tmp_path, FLUTTERWAVE_SECRET_HASH=FLUTTERWAVE_HASH)
    base = processes.gunicorn(env, name="web", workers=1)
    for _ in range(ROUNDS):
        answers = requests_of_every_kind(base, key, institution.id)
        assert {kind: answer.status_code for kind, answer in answers.items()} == {
            "api": 503, "callback": 503, "portal": 503}
    processes.stop_all()

    log = (tmp_path / "web.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    lost = [line for line in log.splitlines() if "Could not write the audit row" in line]
    assert len(lost) == ROUNDS * 2, log[-3000:]  # the API and the callback (a public page is not audited)
    for line in lost:
        assert line.startswith(tuple("0123456789")) and "WARNING" in line  # a log record of its own
        assert "database unavailable (psycopg.OperationalError: connection failed: " in line, line
        assert "Connection refused Is the server running on that host" in line, line
