"""Request logs (text and JSON, and the development server's access lines) redact token paths as the audit log
does: no `/account/reset/<token>`, `/account/invitation/<token>` or `/decisions/respond/<token>` in clear."""
from __future__ import annotations

import json
import logging
import urllib.request

import pytest

from core.config import ConfigurationError
from ops.logs import json_formatter
from tests.conftest import app_config
from tests.live_server import base_url, serving
from wsgi import create_app

TOKEN = "Zt4xQ9pLmW2vR7kB1nC8dF3gH6jK0sYa"
TOKEN_PATHS = [f"/account/reset/{TOKEN}", f"/account/invitation/{TOKEN}", f"/decisions/respond/{TOKEN}",
               f"/decisions/respond/{TOKEN}?lang=sw&token={TOKEN}"]


@pytest.mark.parametrize("path", TOKEN_PATHS)
def test_the_request_log_line_masks_the_token(client, caplog, path):
    with caplog.at_level(logging.INFO, logger="karibu.request"):
        client.get(path)
    records = [record for record in caplog.records if record.name == "karibu.request"]
    assert len(records) == 1
    text_line = logging.Formatter("%(message)s").format(records[0])
    json_line = json.loads(json_formatter().format(records[0]))
    assert "[REDACTED]" in text_line and "[REDACTED]" in json_line["path"]
    assert TOKEN not in text_line + json.dumps(json_line)


@pytest.fixture
def served(app):
    with serving(app) as server:
        yield base_url(server)


def test_the_development_servers_access_lines_mask_the_token(served, caplog):
    assert_access_lines_masked(served, caplog)


def test_an_app_that_failed_to_start_leaves_the_redaction_of_the_running_one(app, database_url, tmp_path,
                                                                            caplog):
    with serving(app) as server:
        with pytest.raises(ConfigurationError):
            create_app({**app_config(database_url, tmp_path / "documents"),
                        "WEBHOOK_DEV_RECEIVER_URL": "http://192.0.2.1:8766/"})
        assert_access_lines_masked(base_url(server), caplog)


def assert_access_lines_masked(served: str, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        for path in TOKEN_PATHS:
            try:
                urllib.request.urlopen(served + path, timeout=10).read()
            except urllib.error.HTTPError:
                pass
    lines = [record.getMessage() for record in caplog.records if record.name == "werkzeug"]
    assert len(lines) == len(TOKEN_PATHS)
    assert all("[REDACTED]" in line for line in lines), lines
    assert not any(TOKEN in line for line in lines), lines
