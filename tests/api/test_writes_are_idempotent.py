"""`Idempotency-Key` on every write of `/api/v1` (Stripe's semantics), through HTTP: a repeat replays the first
answer and does nothing again, another request with the key is a 422, a key in flight a 409, keys are per
credential and kept 24 hours (the retention purge drops them)."""
from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from api.openapi import WRITE_METHODS, openapi_document
from core.db import db
from core.models import ApplicationChange, AuditLog, IdempotencyKey, utcnow
from core.privacy.retention import run_retention
from core.webhooks.runtime import runtime
from tests.api.bulk.conftest import make_school
from tests.conftest import auth_header
from tests.openapi_check import assert_conforms
from tests.webhooks.conftest import ManualClock

UPDATE = "/api/v1/applications/update"


@pytest.fixture
def school(factory):
    return make_school(factory, applications=2)


def patch(client, raw_key, body, key=None):
    headers = {**auth_header(raw_key), **({"Idempotency-Key": key} if key else {})}
    response = client.patch(UPDATE, json=body, headers=headers)
    response.request.environ["wsgi.input"].seek(0)  # the app read the body; the OpenAPI check reads it again
    assert_conforms(response)
    return response


def accept(application_id) -> dict:
    return {"updates": [{"id": application_id, "decision": "accepted", "send_decision": True}]}


def decisions_sent(client, raw_key) -> int:
    """`decision.sent` events in the partner's events feed (each one also a webhook delivery)."""
    feed = client.get("/api/v1/events?limit=1000", headers=auth_header(raw_key))
    assert feed.status_code == 200
    return sum(event["type"] == "decision.sent" for event in feed.json["data"])


def count(app, model) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model))


def test_the_same_patch_twice_applies_once_and_replays_the_first_answer(app, client, school):
    first_id = school.ids[0]
    first = patch(client, school.raw_key, accept(first_id), "accept-1")
    assert first.status_code == 200 and "Idempotent-Replayed" not in first.headers
    # Someone changes the decision again in between: a repeat that ran again would accept and send once more.
    assert patch(client, school.raw_key, {"updates": [{"id": first_id, "decision": "rejected"}]}).status_code == 200
    changes, audit_rows = count(app, ApplicationChange), count(app, AuditLog)

    replay = patch(client, school.raw_key, accept(first_id), "accept-1")

    assert count(app, AuditLog) == audit_rows + 1  # only the replayed request's own audit row
    assert replay.status_code == 200
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.get_data() == first.get_data()
    assert replay.headers["Content-Type"] == first.headers["Content-Type"]
    assert decisions_sent(client, school.raw_key) == 1
    assert count(app, ApplicationChange) == changes  # nothing applied again
    now = client.get(f"/api/v1/applications/by-id?ids={first_id}", headers=school.headers).json["data"][0]
    assert now["application"]["decision"] == "rejected"


def test_the_key_with_another_body_or_path_is_422_and_does_nothing(app, client, school):
    first_id, second_id = school.ids
    patch(client, school.raw_key, accept(first_id), "accept-2")
    changes = count(app, ApplicationChange)

    other_body = patch(client, school.raw_key, accept(second_id), "accept-2")
    other_path = client.post("/api/v1/verifications", json=accept(first_id),
                             headers={**school.headers, "Idempotency-Key": "accept-2"})

    for refused in (other_body, other_path):
        assert refused.status_code == 422
        assert refused.json["code"] == 422 and refused.json["reason"] == "idempotency_key_reused"
        assert [(p["location"], p["name"]) for p in refused.json["errors"]] == [("header", "Idempotency-Key")]
    assert count(app, ApplicationChange) == changes
    assert decisions_sent(client, school.raw_key) == 1


def test_the_same_key_of_another_api_key_runs_independently(app, client, factory, school):
    first_id = school.ids[0]
    _, second_key = factory.api_key(school.institution, name="second integration")
    patch(client, school.raw_key, accept(first_id), "shared")
    patch(client, school.raw_key, {"updates": [{"id": first_id, "decision": "rejected"}]})

    other = patch(client, second_key, accept(first_id), "shared")

    assert other.status_code == 200 and "Idempotent-Replayed" not in other.headers
    assert other.json["data"][0]["application"]["decision"] == "accepted"
    assert decisions_sent(client, school.raw_key) == 2


def test_a_request_arriving_while_the_first_with_its_key_runs_is_409(app, client, factory):
    """A real slow first request: a bulk update of 500 applications, each decision sent (messages, events)."""
    busy = make_school(factory, applications=500)
    body = {"updates": [{"id": application_id, "decision": "accepted", "send_decision": True}
                        for application_id in busy.ids]}
    answers = {}
    first = threading.Thread(target=lambda: answers.update(
        first=app.test_client().patch(UPDATE, json=body, headers={**busy.headers, "Idempotency-Key": "bulk"})))
    first.start()
    in_flight = False
    deadline = time.monotonic() + 20
    while not in_flight and time.monotonic() < deadline:
        with app.app_context():
            in_flight = db.session.scalar(select(func.count()).select_from(IdempotencyKey).where(
                IdempotencyKey.idempotency_key == "bulk", IdempotencyKey.status_code.is_(None))) == 1
            db.session.rollback()
    second = client.patch(UPDATE, json=body, headers={**busy.headers, "Idempotency-Key": "bulk"})
    first.join(timeout=60)

    assert in_flight
    assert second.status_code == 409, second.json
    assert second.json["reason"] == "idempotency_key_in_use"
    assert answers["first"].status_code == 200
    retried = client.patch(UPDATE, json=body, headers={**busy.headers, "Idempotency-Key": "bulk"})
    assert retried.status_code == 200 and retried.headers["Idempotent-Replayed"] == "true"
    assert decisions_sent(client, busy.raw_key) == 500


def test_keys_are_kept_24_hours_then_purged_by_the_retention_job(app, client, school, monkeypatch):
    first_id, second_id = school.ids
    clock = ManualClock(utcnow())
    monkeypatch.setattr(runtime, "clock", clock)
    patch(client, school.raw_key, accept(first_id), "daily")

    clock.advance(timedelta(hours=23))
    with app.app_context():
        run_retention()
    assert patch(client, school.raw_key, accept(second_id), "daily").status_code == 422

    clock.advance(timedelta(hours=2))
    with app.app_context():
        reports = {report.name: report.deleted for report in run_retention()}
    assert reports["idempotency_keys"] == 1
    fresh = patch(client, school.raw_key, accept(second_id), "daily")
    assert fresh.status_code == 200 and "Idempotent-Replayed" not in fresh.headers
    assert decisions_sent(client, school.raw_key) == 2


def _write_operations() -> list[tuple[str, str]]:
    return sorted((path, method) for path, operations in openapi_document()["paths"].items()
                  for method in WRITE_METHODS.intersection(operations))


@pytest.mark.parametrize(("path", "method"), _write_operations())
def test_every_write_takes_the_header(app, client, school, path, method):
    """A malformed key is refused, a well-formed one stores the answer (here a 400 of an empty body) and replays it."""
    def send(key):
        response = client.open(path, method=method.upper(), json={},
                               headers={**school.headers, "Idempotency-Key": key})
        response.request.environ["wsgi.input"].seek(0)
        assert_conforms(response)
        return response

    malformed = send("with space")
    assert malformed.status_code == 400 and malformed.json["reason"] == "idempotency_key_invalid"
    key = str(uuid.uuid4())
    first, again = send(key), send(key)
    assert first.status_code == again.status_code == 400
    assert "Idempotent-Replayed" not in first.headers and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_data() == first.get_data()
    operation = openapi_document()["paths"][path][method]
    assert {"$ref": "#/components/parameters/IdempotencyKey"} in operation["parameters"]
    assert {"409", "422"} <= set(operation["responses"])


def test_every_write_route_of_the_api_is_idempotent_and_documented(app):
    documented = set(_write_operations())
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1/"):
            continue
        for method in {m.lower() for m in rule.methods} & WRITE_METHODS:
            assert getattr(app.view_functions[rule.endpoint], "idempotent", False), f"{method} {rule.rule}"
            assert (rule.rule, method) in documented
