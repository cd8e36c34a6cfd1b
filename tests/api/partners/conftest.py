"""Fixtures of the partner-integration tests: the app served on a free loopback port, a tenant with a key."""
from __future__ import annotations

import pytest

from tests.live_server import base_url, serving
from tests.api.conftest import make_tenant


@pytest.fixture(scope="module")
def live_server(app):
    """The app on 127.0.0.1 at a free port, in a thread; its base URL."""
    with serving(app) as server:
        yield base_url(server)


@pytest.fixture
def tenant(factory):
    return make_tenant(factory, "Alpha University")
