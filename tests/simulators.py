"""The in-process exam-registry simulator, shared by every test that makes live verification lookups."""
from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from core.verification.registries import REGISTRIES
from devtools.registry_simulator import RegistrySimulator, create_server

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
