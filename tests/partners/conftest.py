"""Fixtures of the partner-integration tests: the app served on a free loopback port, a tenant with a key."""
from __future__ import annotations

import threading

import pytest
from werkzeug.serving import make_server

from tests.read_side.conftest import make_tenant


@pytest.fixture(scope="module")
def live_server(app):
    """The app on 127.0.0.1 at a free port, in a thread; its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=10)


@pytest.fixture
def tenant(factory):
    return make_tenant(factory, "Alpha University")
