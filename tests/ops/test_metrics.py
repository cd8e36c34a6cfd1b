"""/metrics under gunicorn with two workers: real traffic, then a scrape over HTTP."""
from __future__ import annotations

import pytest
import redis
import requests
from prometheus_client.parser import text_string_to_metric_families

from core.db import db
from core.models.messages import Message
from tests.conftest import REDIS_URL, auth_header
from tests.ops.processes import Processes, app_environment


def samples(text: str) -> dict[tuple, float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict, name: str, **labels) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


@pytest.fixture
def processes(tmp_path):
    running = Processes(tmp_path)
    yield running
    running.stop_all()


def test_metrics_count_real_traffic_across_gunicorn_workers(app, factory, database_url, processes, tmp_path):
    institution = factory.institution()
    _, raw_key = factory.api_key(institution)
    env = app_environment(database_url, REDIS_URL, tmp_path, API_RATE_LIMIT="30/minute", PROXY_COUNT="1",
                          PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"))
    base = processes.gunicorn(env, workers=2)

    statuses = [requests.get(base + "/api/v1/applications", headers=auth_header(raw_key), timeout=10).status_code
                for _ in range(35)]
    assert statuses.count(200) == 30 and statuses.count(429) == 5
    assert requests.get(base + "/no/such/page", timeout=10).status_code == 404
    issuers = requests.get(base + "/api/v1/verifications/issuers", headers=auth_header("sk_trial_demo"),
                           timeout=10).json()["data"]
    nesa = next(issuer for issuer in issuers if issuer["code"] == "NESA")
    lookup = requests.post(base + "/api/v1/verifications", json=nesa["demo_requests"][0],
                           headers=auth_header("sk_trial_demo"), timeout=10)
    assert lookup.status_code == 200

    response = requests.get(base + "/metrics", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    found = samples(response.text)
    # Summed over both workers: every request is counted once, labelled by endpoint (never the raw path).
    assert value(found, "karibu_http_requests_total", endpoint="api.list_applications", method="GET",
                 status="200") == 30
    assert value(found, "karibu_http_requests_total", endpoint="api.list_applications", method="GET",
                 status="429") == 5
    assert value(found, "karibu_http_requests_total", endpoint="unmatched", method="GET", status="404") == 1
    assert value(found, "karibu_http_request_duration_seconds_count", endpoint="api.list_applications",
                 method="GET") == 35
    assert value(found, "karibu_rate_limit_refusals_total", endpoint="api.list_applications") == 5
    assert not any("/no/such/page" in str(labels) for _, labels in found)
    assert value(found, "karibu_verification_lookups_total", registry="NESA", mode="trial",
                 outcome=lookup.json()["result"]) == 1
    # Table-backed gauges are there from the first scrape, read from the database.
    assert value(found, "karibu_webhook_oldest_due_delivery_age_seconds") == 0
    assert value(found, "karibu_webhook_due_deliveries") == 0

    # Behind the proxy the client address comes from X-Forwarded-For: an outside address is refused.
    outside = requests.get(base + "/metrics", headers={"X-Forwarded-For": "203.0.113.9"}, timeout=10)
    assert outside.status_code == 404


def test_metrics_allowed_networks_setting(app, client):
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "127.0.0.1"}).status_code == 200
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "10.0.0.7"}).status_code == 404
    app.config["METRICS_ALLOWED_NETWORKS"] = "10.0.0.0/8"
    app.extensions.pop("karibu_metrics_networks", None)
    try:
        assert client.get("/metrics", environ_base={"REMOTE_ADDR": "10.0.0.7"}).status_code == 200
        assert client.get("/metrics", environ_base={"REMOTE_ADDR": "127.0.0.1"}).status_code == 404
    finally:
        app.config["METRICS_ALLOWED_NETWORKS"] = "127.0.0.0/8,::1/128"
        app.extensions.pop("karibu_metrics_networks", None)


def test_messages_by_status_and_channel_are_read_from_the_database(app, client, factory):
    institution = factory.institution()
    with app.app_context():
        for status, channel in (("sent", "email"), ("sent", "email"), ("failed", "email"), ("queued", "sms")):
            db.session.add(Message(institution_id=institution.id, channel=channel, recipient="+250788000000",
                                   template="decision", language="en", body_text="…", status=status))
        db.session.commit()
    found = samples(client.get("/metrics", environ_base={"REMOTE_ADDR": "127.0.0.1"}).get_data(as_text=True))
    assert value(found, "karibu_messages", status="sent", channel="email") == 2
    assert value(found, "karibu_messages", status="failed", channel="email") == 1
    assert value(found, "karibu_messages", status="queued", channel="sms") == 1


def test_redis_faults_are_counted_for_prometheus(app, client, factory, monkeypatch):
    """A drain that cannot be queued (Redis away) is counted in /metrics, not only in /healthz."""
    institution = factory.institution()
    _, raw_key = factory.api_key(institution)
    application = factory.application(institution, decision="accepted")

    def faults() -> float:
        text = client.get("/metrics", environ_base={"REMOTE_ADDR": "127.0.0.1"}).get_data(as_text=True)
        return value(samples(text), "karibu_redis_faults_total", component="queue") or 0.0

    before = faults()
    monkeypatch.setitem(app.extensions, "karibu_redis",
                        redis.Redis(port=1, socket_timeout=0.2, socket_connect_timeout=0.2))
    response = client.patch("/api/v1/applications/update", headers=auth_header(raw_key),
                            json={"updates": [{"id": application.id, "send_decision": True}]})
    assert response.status_code == 200  # committed; the sweep will wake a worker
    assert faults() >= before + 1
