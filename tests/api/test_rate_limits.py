"""API rate limits are keyed on the resolved credential: no spelling, route or junk key gets a fresh count, and
every /api/v1 request counts, routed or not, with a live institution or not."""
from __future__ import annotations

import itertools

import pytest

from core.db import db
from core.models import Institution
from tests.api.test_auth import oidc  # noqa: F401 (fixture)
from tests.openapi_check import assert_conforms

_addresses = (f"10.{a}.{b}.{c}" for a, b, c in itertools.product(range(1, 250), repeat=3))


@pytest.fixture
def address():
    """A client address of its own per test, so address-keyed counters never carry over between tests."""
    return next(_addresses)


@pytest.fixture
def limits(app, monkeypatch):
    def set_limits(per_credential: str = "100000/minute", auth_failures: str = "100000/minute"):
        monkeypatch.setitem(app.config, "API_RATE_LIMIT", per_credential)
        monkeypatch.setitem(app.config, "API_AUTH_FAILURE_RATE_LIMIT", auth_failures)
    return set_limits


def get(client, path, authorization=None, address="10.0.0.1"):
    headers = {"Authorization": authorization} if authorization is not None else {}
    return client.get(path, headers=headers, environ_overrides={"REMOTE_ADDR": address})


def test_every_spelling_of_the_scheme_counts_against_one_credential(client, factory, limits, address):
    limits(per_credential="3/minute")
    _, key = factory.api_key(factory.institution())
    spellings = [f"Bearer {key}", f"bearer {key}", f"BEARER {key}", f"Bearer  {key}", f"  bEaReR\t{key}  "]
    responses = [get(client, "/api/v1/institution", spelling, address) for spelling in spellings]
    assert [r.status_code for r in responses] == [200, 200, 200, 429, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in responses[:3]] == ["2", "1", "0"]
    assert all(r.headers["X-RateLimit-Limit"] == "3" for r in responses)
    refused = responses[3]
    assert refused.json["code"] == 429 and "Retry-After" in refused.json["error"]
    assert 0 < int(refused.headers["Retry-After"]) <= 61
    assert_conforms(refused)


def test_one_counter_per_credential_across_routes_and_addresses(client, factory, limits, address):
    limits(per_credential="3/minute")
    institution = factory.institution()
    _, key = factory.api_key(institution)
    statuses = [get(client, path, f"Bearer {key}", address=ip).status_code for path, ip in (
        ("/api/v1/institution", address), ("/api/v1/cycles", address), ("/api/v1/applications", "10.255.0.9"),
        ("/api/v1/applications/search?q=x", address), ("/api/v1/cycles", "10.255.0.10"))]
    assert statuses == [200, 200, 200, 429, 429]
    # Another key of the same institution has its own budget.
    _, other_key = factory.api_key(institution)
    assert get(client, "/api/v1/cycles", f"Bearer {other_key}", address).status_code == 200


def test_junk_keys_from_one_address_are_limited(client, factory, limits, address):
    limits(auth_failures="4/minute")
    _, key = factory.api_key(factory.institution())
    junk = ["Bearer junk1", "Bearer sk_live_" + "A" * 40, "Basic dXNlcjpwYXNz", None]
    assert [get(client, "/api/v1/institution", header, address).status_code for header in junk] == [401] * 4
    refused = get(client, "/api/v1/institution", "Bearer junk5", address)
    assert refused.status_code == 429
    assert refused.json["code"] == 429 and "Retry-After" in refused.json["error"]
    assert 0 < int(refused.headers["Retry-After"]) <= 61
    assert_conforms(refused)
    # Once the address has spent its failures even a valid key is refused there (no guessing oracle) ...
    assert get(client, "/api/v1/institution", f"Bearer {key}", address).status_code == 429
    # ... while other addresses are untouched.
    assert get(client, "/api/v1/institution", f"Bearer {key}", "10.254.0.1").status_code == 200
    assert get(client, "/api/v1/institution", "Bearer junk6", "10.254.0.2").status_code == 401


def test_successful_authentications_do_not_spend_the_failure_budget(client, factory, limits, address):
    limits(auth_failures="2/minute")
    _, key = factory.api_key(factory.institution())
    assert {get(client, "/api/v1/institution", f"Bearer {key}", address).status_code for _ in range(5)} == {200}


def test_trial_key_clients_at_different_addresses_have_their_own_counters(client, limits, address):
    limits(per_credential="3/minute")
    path, trial = "/api/v1/verifications/issuers", "Bearer sk_trial_demo"
    first = [get(client, path, trial, address).status_code for _ in range(4)]
    assert first == [200, 200, 200, 429]
    assert get(client, path, trial, "10.253.0.1").status_code == 200
    assert get(client, path, "bearer  sk_trial_demo", address).status_code == 429


def test_identity_provider_subject_has_one_counter_whatever_token_it_presents(client, factory, limits, oidc,
                                                                              address):
    limits(per_credential="3/minute")
    institution = factory.institution()
    subject = f"sis-sync-{next(_addresses)}"
    # Every call presents a freshly minted token (another jti, iat) for the same issuer and subject.
    tokens = [oidc.token(institution_id=institution.id, sub=subject, jti=str(n)) for n in range(4)]
    statuses = [get(client, "/api/v1/institution", f"Bearer {token}", address).status_code for token in tokens]
    assert statuses == [200, 200, 200, 429]
    other = oidc.token(institution_id=institution.id, sub=subject + "-other")
    assert get(client, "/api/v1/institution", f"Bearer {other}", address).status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/no-such-thing", "/api/v1/applications/x/y/z", "/api/v1"])
def test_probing_unrouted_paths_spends_the_failure_budget(client, limits, address, path):
    limits(auth_failures="3/minute")
    statuses = [get(client, path, None, address).status_code for _ in range(4)]
    assert statuses == [404, 404, 404, 429]
    assert get(client, "/api/v1/institution", "Bearer junk", address).status_code == 429  # one budget
    assert get(client, path, None, "10.254.0.3").status_code == 404  # per address


def test_a_wrong_method_without_a_key_spends_the_failure_budget(client, limits, address):
    limits(auth_failures="2/minute")
    answers = [client.post("/api/v1/institution", environ_overrides={"REMOTE_ADDR": address}) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [405, 405, 429]


def test_unrouted_paths_count_against_a_valid_key(client, factory, limits, address):
    limits(per_credential="3/minute", auth_failures="100/minute")
    _, key = factory.api_key(factory.institution())
    statuses = [get(client, path, f"Bearer {key}", address).status_code
                for path in ("/api/v1/no-such-thing", "/api/v1/institution", "/api/v1/nope", "/api/v1/institution")]
    assert statuses == [404, 200, 404, 429]


def test_keys_of_a_disabled_institution_spend_the_failure_budget(app, client, factory, limits, address):
    limits(auth_failures="3/minute")
    institution = factory.institution()
    _, key = factory.api_key(institution)
    with app.app_context():
        db.session.get(Institution, institution.id).status = "disabled"
        db.session.commit()
    statuses = [get(client, "/api/v1/institution", f"Bearer {key}", address).status_code for _ in range(4)]
    assert statuses == [404, 404, 404, 429]
