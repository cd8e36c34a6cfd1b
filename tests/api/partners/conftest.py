"""Fixtures of the partner-integration tests: the app served on a free loopback port (the tenant with a key is
the API tests' own, tests/api/conftest.py)."""
from __future__ import annotations

import pytest

from tests.live_server import base_url, serving


@pytest.fixture(scope="module")
def live_server(app):
    """The app on 127.0.0.1 at a free port, in a thread; its base URL."""
    with serving(app) as server:
        yield base_url(server)
