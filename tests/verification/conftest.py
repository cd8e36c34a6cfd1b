"""Fixtures of the verification tests: an in-process registry simulator and billed institutions."""
from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass
from decimal import Decimal

import pytest

from core.extensions import db
from core.models import Institution
from core.verification.registries import REGISTRIES
from core.verification.simulator import RegistrySimulator, create_server

TOKENS = {code: f"test-{code.lower()}-token" for code in REGISTRIES}


@dataclass
class RunningSimulator:
    base_url: str
    simulator: RegistrySimulator

    def url(self, code: str) -> str:
        return f"{self.base_url}/{code.lower()}"

    def behave(self, mode: str, **settings) -> None:
        self.simulator.state.set(mode, **settings)


@pytest.fixture(scope="session")
def running_simulator():
    server, simulator = create_server("127.0.0.1", 0, TOKENS)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield RunningSimulator(f"http://127.0.0.1:{server.server_port}", simulator)
    server.shutdown()
    server.server_close()


@pytest.fixture
def registry_simulator(running_simulator):
    running_simulator.behave("normal")
    yield running_simulator
    running_simulator.behave("normal")


@pytest.fixture
def live_registries(app, registry_simulator):
    """Point the app's registry settings at the simulator (short read timeout) for one test."""
    overrides = {"REGISTRY_CONNECT_TIMEOUT": 1.0, "REGISTRY_READ_TIMEOUT": 0.5}
    for code in REGISTRIES:
        overrides[f"REGISTRY_{code}_URL"] = registry_simulator.url(code)
        overrides[f"REGISTRY_{code}_TOKEN"] = TOKENS[code]
    saved = {name: app.config.get(name) for name in overrides}
    app.config.update(overrides)
    yield registry_simulator
    app.config.update(saved)


@pytest.fixture
def billed_institution(app, factory):
    """An institution with its own agreement price, and a live key: `(institution, raw_key)`."""
    institution = factory.institution("Université de Test")
    with app.app_context():
        row = db.session.get(Institution, institution.id)
        row.verification_price = Decimal("2.75")
        row.verification_currency = "EUR"
        db.session.commit()
    _, raw_key = factory.api_key(institution)
    return institution, raw_key


def post_json(client, path: str, body, headers: dict | None = None, **kwargs):
    """POST a JSON body, leaving the body readable on `response.request` for the OpenAPI check."""
    data = json.dumps(body).encode()
    response = client.post(path, data=data, content_type="application/json", headers=headers or {}, **kwargs)
    response.request.environ["wsgi.input"] = io.BytesIO(data)
    return response


def post_raw(client, path: str, data: str, headers: dict, content_type: str | None = None):
    raw = data.encode()
    response = client.post(path, data=raw, content_type=content_type, headers=headers)
    response.request.environ["wsgi.input"] = io.BytesIO(raw)
    return response
