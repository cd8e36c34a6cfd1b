"""Idempotency-Key on verifications: 24 h replay without a second charge, conflicts, scoping, expiry, failed lookups."""
from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import func, select, update

from core.db import db
from core.idempotency import keys
from core.models import IdempotencyKey, VerificationCharge, utcnow
from devtools.simulated_records import SIMULATED_RECORDS
from tests.conftest import auth_header
from tests.openapi_check import assert_conforms
from tests.verification.conftest import post_json

RECORD = next(r for r in SIMULATED_RECORDS if r.registry == "UNEB" and r.result == "authentic")
MISSING = {"issuer": "UNEB", "index_number": "U0001/001", "year": "2019", "level": "UCE"}


def ledger_size(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(VerificationCharge))


def send(client, raw_key, body, key):
    return post_json(client, "/api/v1/verifications", body, {**auth_header(raw_key), "Idempotency-Key": key})


def test_same_key_and_body_replays_the_answer_without_a_second_charge(app, client, live_registries,
                                                                      billed_institution):
    _, raw_key = billed_institution
    first = send(client, raw_key, RECORD.request, "order-1")
    assert first.status_code == 200
    assert first.json["billing"]["charged"] is True
    assert "Idempotent-Replayed" not in first.headers
    live_registries.behave("error")  # a replay never reaches the registry
    reordered = dict(reversed(list(RECORD.request.items())))
    second = send(client, raw_key, reordered, "order-1")
    assert second.status_code == 200
    assert_conforms(second)
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.json == {**first.json, "billing": {"charged": False, "amount": 0, "currency": "EUR"}}
    assert ledger_size(app) == 1


def test_not_found_answers_are_replayed_too(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    assert send(client, raw_key, MISSING, "lookup-404").json["billing"]["charged"] is True
    replay = send(client, raw_key, MISSING, "lookup-404")
    assert replay.status_code == 404
    assert_conforms(replay)
    assert replay.json["billing"] == {"charged": False, "amount": 0, "currency": "EUR"}
    assert ledger_size(app) == 1


def test_same_key_with_a_different_body_is_422(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    send(client, raw_key, RECORD.request, "order-2")
    response = send(client, raw_key, MISSING, "order-2")
    assert response.status_code == 422
    assert_conforms(response)
    assert response.json["reason"] == "idempotency_key_reused"
    assert response.json["error"].startswith("This Idempotency-Key was already used with a different request")
    assert [(p["location"], p["name"]) for p in response.json["errors"]] == [("header", "Idempotency-Key")]
    assert ledger_size(app) == 1


def test_keys_are_scoped_to_the_credential(app, client, factory, live_registries, billed_institution):
    _, raw_key = billed_institution
    other = factory.institution()
    _, other_key = factory.api_key(other)
    send(client, raw_key, RECORD.request, "shared-key")
    response = send(client, other_key, MISSING, "shared-key")
    assert response.status_code == 404
    assert response.json["billing"]["charged"] is True
    assert ledger_size(app) == 2


def test_another_key_of_the_institution_runs_independently(app, client, factory, live_registries,
                                                            billed_institution):
    institution, raw_key = billed_institution
    _, second_key = factory.api_key(institution, name="second")
    send(client, raw_key, RECORD.request, "batch-7")
    other = send(client, second_key, RECORD.request, "batch-7")
    assert "Idempotent-Replayed" not in other.headers
    assert other.json["billing"]["charged"] is True
    assert ledger_size(app) == 2


def test_a_failed_lookup_releases_the_key_for_a_retry(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    live_registries.behave("error", registry="UNEB")
    assert send(client, raw_key, RECORD.request, "retry-me").status_code == 503
    live_registries.behave("normal")
    retried = send(client, raw_key, RECORD.request, "retry-me")
    assert retried.status_code == 200
    assert retried.json["billing"]["charged"] is True
    assert ledger_size(app) == 1


def test_with_a_key_the_charge_is_kept_only_with_the_stored_answer(app, client, live_registries,
                                                                   billed_institution, monkeypatch):
    """Without a key a charge commits on its own, at once; with one it must commit with the stored answer, or
    a retry after a failure would be charged a second time."""
    _, raw_key = billed_institution

    def storage_fails(*args, **kwargs):
        raise RuntimeError("the answer could not be stored")

    with monkeypatch.context() as failing:
        failing.setattr(keys, "store_answer", storage_fails)
        assert send(client, raw_key, RECORD.request, "order-lost").status_code == 500
    assert ledger_size(app) == 0
    assert post_json(client, "/api/v1/verifications", RECORD.request, auth_header(raw_key)).status_code == 200
    assert ledger_size(app) == 1


def test_a_key_in_flight_gives_409(app, client, live_registries, billed_institution, monkeypatch):
    _, raw_key = billed_institution
    live_registries.behave("error", registry="UNEB")
    with monkeypatch.context() as dying:  # a first attempt claims the key, then its worker dies before answering
        dying.setattr(keys, "release", lambda claimed: db.session.rollback())
        assert send(client, raw_key, RECORD.request, "in-flight").status_code == 503
    live_registries.behave("normal")
    response = send(client, raw_key, RECORD.request, "in-flight")
    assert response.status_code == 409
    assert response.json["reason"] == "idempotency_key_in_use"
    assert_conforms(response)
    assert ledger_size(app) == 0
    with app.app_context():  # the first attempt died: once its lock lapses the key can be taken over
        db.session.execute(update(IdempotencyKey).values(locked_until=utcnow() - timedelta(seconds=1)))
        db.session.commit()
    assert send(client, raw_key, RECORD.request, "in-flight").status_code == 200
    assert ledger_size(app) == 1


def test_answers_expire_after_24_hours(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    send(client, raw_key, RECORD.request, "yesterday")
    with app.app_context():
        db.session.execute(update(IdempotencyKey).values(expires_at=utcnow() - timedelta(seconds=1)))
        db.session.commit()
    again = send(client, raw_key, MISSING, "yesterday")
    assert again.status_code == 404
    assert again.json["billing"]["charged"] is True
    assert ledger_size(app) == 2
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(IdempotencyKey)) == 1


def test_trial_requests_honour_the_key_without_billing(app, client):
    body = {"issuer": "KNEC", "index_number": "20403001045", "year": "2022", "examination": "KCSE"}
    first = send(client, "sk_trial_demo", body, "trial-1")
    replay = send(client, "sk_trial_demo", body, "trial-1")
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json == first.json
    assert send(client, "sk_trial_demo", MISSING, "trial-1").status_code == 422
    assert ledger_size(app) == 0


def test_concurrent_requests_with_one_key_are_billed_once(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    live_registries.behave("slow", delay=0.3, registry="UNEB")
    statuses = []

    def attempt():
        statuses.append(send(app.test_client(), raw_key, RECORD.request, "concurrent").status_code)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(statuses) == [200, 409]
    assert ledger_size(app) == 1
    assert send(client, raw_key, RECORD.request, "concurrent").headers["Idempotent-Replayed"] == "true"
