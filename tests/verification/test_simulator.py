"""The registry simulator and the adapters: every record through each wire format, and every failure mode."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import requests

from core.verification.adapters import ADAPTERS, RegistryEndpoint, RegistryUnavailable
from core.verification.exam_records import OUTCOME_NOT_FOUND
from devtools.simulated_records import SIMULATED_RECORDS
from tests.simulators import TOKENS


def adapter(simulator, code: str, token: str | None = None, read_timeout: float = 0.5):
    endpoint = RegistryEndpoint(simulator.url(code), token or TOKENS[code], connect_timeout=1.0,
                                read_timeout=read_timeout)
    return ADAPTERS[code](endpoint)


def test_every_simulated_record_round_trips_through_its_wire_format(registry_simulator):
    adapters = {code: adapter(registry_simulator, code) for code in ADAPTERS}
    for record in SIMULATED_RECORDS:
        answer = adapters[record.registry].lookup(dict(record.identifiers))
        assert answer.outcome == record.result
        assert answer.record.response_record() == record.response_record()


@pytest.mark.parametrize("code, identifiers", [
    ("NESA", {"national_id": "1200000000000000", "exam_number": "0000", "level": "P-Level"}),
    ("UNEB", {"index_number": "U9999/999", "year": "2019", "level": "UACE"}),
    ("KNEC", {"index_number": "99999999999", "year": "2019", "examination": "KCPE"}),
])
def test_unknown_identifiers_are_not_found(registry_simulator, code, identifiers):
    assert adapter(registry_simulator, code).lookup(identifiers).outcome == OUTCOME_NOT_FOUND


@pytest.mark.parametrize("code", ["NESA", "UNEB", "KNEC"])
@pytest.mark.parametrize("mode, settings, reason", [
    ("slow", {"delay": 1.0}, "timeout"),
    ("error", {"status": 503}, "http_status"),
    ("garbage", {}, "malformed_response"),
    ("redirect", {}, "redirect"),
])
def test_failure_modes_raise_registry_unavailable(registry_simulator, code, mode, settings, reason):
    record = next(r for r in SIMULATED_RECORDS if r.registry == code)
    registry_simulator.behave(mode, registry=code, **settings)
    with pytest.raises(RegistryUnavailable) as raised:
        adapter(registry_simulator, code).lookup(dict(record.identifiers))
    assert raised.value.reason == reason


def test_redirect_target_would_have_answered(registry_simulator):
    """The redirect points at a URL that answers normally, so only a client that follows it succeeds."""
    record = next(r for r in SIMULATED_RECORDS if r.registry == "KNEC")
    registry_simulator.behave("redirect", registry="KNEC")
    identifiers = dict(record.identifiers)
    url = f"{registry_simulator.url('KNEC')}/v2/candidates/{identifiers['index_number']}/results"
    response = requests.get(url, params={"year": identifiers["year"], "exam": identifiers["examination"]},
                            headers={"Authorization": f"Token {TOKENS['KNEC']}"}, timeout=2)
    assert response.history and response.history[0].status_code == 302
    assert response.status_code == 200 and response.json()["success"] is True


@pytest.mark.parametrize("code", ["NESA", "UNEB", "KNEC"])
def test_wrong_token_is_rejected(registry_simulator, code):
    record = next(r for r in SIMULATED_RECORDS if r.registry == code)
    with pytest.raises(RegistryUnavailable) as raised:
        adapter(registry_simulator, code, token="wrong").lookup(dict(record.identifiers))
    assert raised.value.reason == "credentials_rejected"


def test_control_endpoints(registry_simulator):
    base = registry_simulator.base_url
    assert requests.get(f"{base}/_simulator/health", timeout=2).json() == {"status": "ok"}
    records = requests.get(f"{base}/_simulator/records", params={"registry": "UNEB"}, timeout=2).json()["records"]
    assert len(records) == len([r for r in SIMULATED_RECORDS if r.registry == "UNEB"])
    assert records[0]["request"] == next(r for r in SIMULATED_RECORDS if r.registry == "UNEB").request
    changed = requests.put(f"{base}/_simulator/behaviour", json={"mode": "slow", "delay": 0.2, "registry": "KNEC"},
                           timeout=2).json()
    assert changed["KNEC"] == {"mode": "slow", "delay": 0.2, "status": 500}
    assert changed["NESA"]["mode"] == "normal"
    refused = requests.put(f"{base}/_simulator/behaviour", json={"mode": "sideways"}, timeout=2)
    assert refused.status_code == 400


def test_registry_simulator_command_serves_the_configured_tokens(tmp_path):
    environment = {**os.environ, "REGISTRY_UNEB_TOKEN": "from-environment", "DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
    process = subprocess.Popen(
        [sys.executable, "-m", "flask", "--app", "wsgi", "registry-simulator", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    try:
        banner = process.stdout.readline()
        assert banner.startswith("Registry simulator listening on http://127.0.0.1:"), banner
        base = banner.split()[4]
        record = next(r for r in SIMULATED_RECORDS if r.registry == "UNEB")
        endpoint = RegistryEndpoint(f"{base}/uneb", "from-environment", connect_timeout=1, read_timeout=2)
        assert ADAPTERS["UNEB"](endpoint).lookup(dict(record.identifiers)).outcome == record.result
        records = requests.get(f"{base}/_simulator/records", timeout=2).json()["records"]
        assert len(records) == len(SIMULATED_RECORDS)
    finally:
        process.terminate()
        process.wait(timeout=10)
