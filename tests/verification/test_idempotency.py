"""Idempotency-Key: 24 h replay without a second charge, conflicts, scoping, expiry, failed lookups."""
from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import func, select, update

from core.db import db
from core.models import VerificationCharge, VerificationIdempotency, utcnow
from core.verification import idempotency
from core.verification.idempotency import request_fingerprint
from core.verification.service import current_settings
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


def test_same_key_with_a_different_body_is_400(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    send(client, raw_key, RECORD.request, "order-2")
    response = send(client, raw_key, MISSING, "order-2")
    assert response.status_code == 400
    assert_conforms(response)
    assert response.json["error"].startswith("This Idempotency-Key was already used with a different request body")
    assert [(p["location"], p["name"]) for p in response.json["errors"]] == [("header", "Idempotency-Key")]
    assert ledger_size(app) == 1


def test_keys_are_scoped_to_the_institution(app, client, factory, live_registries, billed_institution):
    _, raw_key = billed_institution
    other = factory.institution()
    _, other_key = factory.api_key(other)
    send(client, raw_key, RECORD.request, "shared-key")
    response = send(client, other_key, MISSING, "shared-key")
    assert response.status_code == 404
    assert response.json["billing"]["charged"] is True
    assert ledger_size(app) == 2


def test_keys_are_shared_by_the_institution_s_keys(app, client, factory, live_registries, billed_institution):
    institution, raw_key = billed_institution
    _, second_key = factory.api_key(institution, name="second")
    send(client, raw_key, RECORD.request, "batch-7")
    replay = send(client, second_key, RECORD.request, "batch-7")
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert ledger_size(app) == 1


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

    monkeypatch.setattr(idempotency, "store_answer", storage_fails)
    assert send(client, raw_key, RECORD.request, "order-lost").status_code == 500
    assert ledger_size(app) == 0
    assert post_json(client, "/api/v1/verifications", RECORD.request, auth_header(raw_key)).status_code == 200
    assert ledger_size(app) == 1


def test_a_key_in_flight_gives_409(app, client, live_registries, billed_institution):
    institution, raw_key = billed_institution
    with app.app_context():
        now = utcnow()
        fingerprint = request_fingerprint(current_settings().hash_key, RECORD.request)
        db.session.add(VerificationIdempotency(
            scope=institution.id, idempotency_key="in-flight", request_hash=fingerprint, created_at=now,
            locked_until=now + timedelta(seconds=30), expires_at=now + timedelta(hours=24)))
        db.session.commit()
    response = send(client, raw_key, RECORD.request, "in-flight")
    assert response.status_code == 409
    assert_conforms(response)
    assert ledger_size(app) == 0
    with app.app_context():  # the first attempt died: once its lock lapses the key can be taken over
        db.session.execute(update(VerificationIdempotency).values(locked_until=utcnow() - timedelta(seconds=1)))
        db.session.commit()
    assert send(client, raw_key, RECORD.request, "in-flight").status_code == 200
    assert ledger_size(app) == 1


def test_answers_expire_after_24_hours(app, client, live_registries, billed_institution):
    _, raw_key = billed_institution
    send(client, raw_key, RECORD.request, "yesterday")
    with app.app_context():
        db.session.execute(update(VerificationIdempotency).values(expires_at=utcnow() - timedelta(seconds=1)))
        db.session.commit()
    again = send(client, raw_key, MISSING, "yesterday")
    assert again.status_code == 404
    assert again.json["billing"]["charged"] is True
    assert ledger_size(app) == 2
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(VerificationIdempotency)) == 1


def test_trial_requests_honour_the_key_without_billing(app, client):
    body = {"issuer": "KNEC", "index_number": "20403001045", "year": "2022", "examination": "KCSE"}
    first = send(client, "sk_trial_demo", body, "trial-1")
    replay = send(client, "sk_trial_demo", body, "trial-1")
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json == first.json
    assert send(client, "sk_trial_demo", MISSING, "trial-1").status_code == 400
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
