"""Two institutions, two providers (one signing RS256, the other ES256): the email's domain picks the provider,
and one institution's provider never signs anyone into the other."""
from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from core.accounts import sso
from core.errors import Conflict
from core.scoping import InstitutionScope
from tests.accounts.oidc_provider import Person
from tests.accounts.sso_fixtures import (  # noqa: F401 (fixtures)
    _provider_as_configured, provider, sso_audit_rows, sso_trust, start_provider, university, walk_sign_in,
)
from tests.portal.conftest import _fresh_login_counters  # noqa: F401


@pytest.fixture(scope="module")
def second_provider(sso_trust):
    started = start_provider(sso_trust, "karibu-at-makerere", "client-secret-of-karibu-2", algorithm="ES256")
    yield started
    started.stop()


@pytest.fixture
def two_universities(app, factory, provider, second_provider):
    second_provider.reset()
    rwanda = university(app, factory, provider, "ur.ac.rw", create_users="staff", name="University of Rwanda")
    makerere = university(app, factory, second_provider, "mak.ac.ug, cit.mak.ac.ug", create_users="staff",
                          name="Makerere University")
    return rwanda, makerere


def signed_in_user(client) -> str:
    page = client.get("/account")
    assert page.status_code == 200
    return page.get_data(as_text=True)


def test_the_emails_domain_picks_the_provider_and_the_institution(app, factory, provider, second_provider,
                                                                  sso_trust, two_universities):
    rwanda, makerere = two_universities
    factory.user(rwanda, email="amina@ur.ac.rw")
    factory.user(makerere, email="okello@cit.mak.ac.ug")
    at_rwanda, at_makerere = app.test_client(), app.test_client()
    first = walk_sign_in(at_rwanda, sso_trust, "amina@ur.ac.rw")
    second = walk_sign_in(at_makerere, sso_trust, "okello@cit.mak.ac.ug")
    assert first.start.headers["Location"].startswith(provider.issuer + "/authorize?")
    assert second.start.headers["Location"].startswith(second_provider.issuer + "/authorize?")
    assert first.response.status_code == second.response.status_code == 302
    assert "amina@ur.ac.rw" in signed_in_user(at_rwanda)
    assert "okello@cit.mak.ac.ug" in signed_in_user(at_makerere)
    rows = sso_audit_rows(app, "auth.sso.signed_in")
    assert [(row.actor, row.institution_id) for row in rows] == [("amina@ur.ac.rw", rwanda.id),
                                                                 ("okello@cit.mak.ac.ug", makerere.id)]


def test_one_institutions_provider_cannot_sign_anyone_into_the_other(app, factory, provider, second_provider,
                                                                     sso_trust, two_universities):
    rwanda, makerere = two_universities
    factory.user(makerere, email="okello@mak.ac.ug", role="admin")
    # Rwanda's provider vouches for a Makerere address: it is not one of Rwanda's domains.
    provider.identity = Person("okello@mak.ac.ug")
    client = app.test_client()
    walk = walk_sign_in(client, sso_trust, "amina@ur.ac.rw")
    assert walk.response.status_code == 403
    assert client.get("/dashboard").status_code == 302
    assert [(row.target, row.institution_id) for row in sso_audit_rows(app)] == [("domain", rwanda.id)]


def test_an_answer_of_the_other_provider_is_refused(app, factory, provider, second_provider, sso_trust,
                                                    two_universities):
    rwanda, makerere = two_universities
    factory.user(rwanda, email="amina@ur.ac.rw")
    factory.user(makerere, email="okello@mak.ac.ug")
    client = app.test_client()
    start = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})  # pending at Rwanda's provider
    state = parse_qs(urlsplit(start.headers["Location"]).query)["state"][0]
    # A code Makerere's provider issued, handed to the callback of the sign-in pending at Rwanda's.
    other = app.test_client().get("/login/sso", query_string={"email": "okello@mak.ac.ug"})
    answer = requests.get(other.headers["Location"], verify=sso_trust.bundle, allow_redirects=False, timeout=10)
    code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
    crossed = client.get("/login/sso/callback?" + urlencode({"state": state, "code": code}))
    assert crossed.status_code == 401
    assert client.get("/dashboard").status_code == 302
    assert [(row.target, row.institution_id) for row in sso_audit_rows(app)] == [("token_exchange", rwanda.id)]


def test_a_domain_belongs_to_one_institution(app, factory, provider, second_provider, two_universities):
    rwanda, makerere = two_universities
    with app.app_context(), pytest.raises(Conflict, match="ur.ac.rw"):
        sso.configure(InstitutionScope(makerere.id), issuer=second_provider.issuer, client_id="x",
                      client_secret="y", domains="mak.ac.ug, ur.ac.rw", require=False, create_users="none")
    with app.app_context():
        assert sso.configuration(InstitutionScope(makerere.id)).domains == ["cit.mak.ac.ug", "mak.ac.ug"]


def test_an_account_of_the_same_email_at_another_institution_is_not_signed_in(app, factory, provider,
                                                                              second_provider, sso_trust):
    rwanda = university(app, factory, provider, "ur.ac.rw", name="University of Rwanda")
    elsewhere = factory.institution("Kigali Institute of Health")
    factory.user(elsewhere, email="amina@ur.ac.rw", role="admin")  # a password account at a third institution
    factory.user(rwanda, email="registrar@ur.ac.rw", role="admin")
    client = app.test_client()
    walk = walk_sign_in(client, sso_trust, "amina@ur.ac.rw")
    assert walk.response.status_code == 403 and "no account at University of Rwanda" in walk.response.get_data(
        as_text=True)
    assert client.get("/dashboard").status_code == 302
    assert [(row.target, row.institution_id) for row in sso_audit_rows(app)] == [("no_account", rwanda.id)]
