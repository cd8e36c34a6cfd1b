"""University sign-in (OpenID Connect) against a real provider on a local HTTPS port: the sign-in itself, every
refusal (a clear page, an `auth.sso.refused` audit row, nobody signed in, never a 500), key rotation, required SSO
beside a break-glass admin, first sign-in creating staff, two institutions with two providers, and sign-out."""
from __future__ import annotations

import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pyotp
import pytest
import requests
from sqlalchemy import select

from core.db import db
from core.models import User
from core.models.accounts import StaffSession
from tests.accounts.oidc_provider import Person
from tests.accounts.sso_fixtures import (  # noqa: F401 (fixtures)
    _provider_as_configured, provider, sso_audit_rows, sso_trust, start_provider, university, walk_sign_in,
)
from tests.portal.conftest import _fresh_login_counters, csrf_token, sign_in  # noqa: F401
from tests.portal.test_two_factor import secret_on

DOMAIN = "ur.ac.rw"


def signed_in(client) -> bool:
    return client.get("/dashboard").status_code == 200


def user_with(app, email: str) -> User | None:
    with app.app_context():
        user = db.session.scalars(select(User).where(User.email == email)).one_or_none()
        if user is not None:
            db.session.expunge(user)
        return user


def test_a_staff_member_signs_in_with_the_university_account(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    start = client.get("/login/sso", query_string={"email": "Amina@UR.ac.rw", "next": "/applicants"})
    assert start.status_code == 302
    request = urlsplit(start.headers["Location"])
    parameters = {name: values[0] for name, values in parse_qs(request.query).items()}
    assert f"{request.scheme}://{request.netloc}" == provider.issuer
    assert parameters["response_type"] == "code" and parameters["client_id"] == "karibu-client"
    assert parameters["code_challenge_method"] == "S256" and len(parameters["code_challenge"]) == 43
    assert len(parameters["state"]) >= 32 and len(parameters["nonce"]) >= 32
    assert parameters["scope"] == "openid email profile" and parameters["login_hint"] == "amina@ur.ac.rw"
    assert parameters["redirect_uri"] == "http://127.0.0.1:8000/login/sso/callback"

    answer = requests.get(start.headers["Location"], verify=sso_trust.bundle, allow_redirects=False, timeout=10)
    callback = urlsplit(answer.headers["Location"])
    done = client.get(f"{callback.path}?{callback.query}")
    assert done.status_code == 302 and done.headers["Location"] == "/applicants"
    assert signed_in(client)
    account = client.get("/account").get_data(as_text=True)
    assert "amina@ur.ac.rw" in account and "(this browser)" in account  # a named server-side session
    [row] = sso_audit_rows(app, "auth.sso.signed_in")
    assert row.institution_id == institution.id and row.actor == "amina@ur.ac.rw"
    assert "amr=pwd,mfa" in row.detail and "acr=urn:test:mfa" in row.detail
    returned_code = parse_qs(callback.query)["code"][0]
    assert "code=" not in row.path and "code=[REDACTED]" in row.query and returned_code not in row.query


def test_the_provider_is_trusted_only_through_its_certificate_authority(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    app.config["SSO_CA_BUNDLE"] = ""  # the system store does not know the tests' CA
    try:
        refused = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})
    finally:
        app.config["SSO_CA_BUNDLE"] = sso_trust.bundle
    assert refused.status_code == 503
    assert "did not answer properly" in refused.get_data(as_text=True)
    assert [row.target for row in sso_audit_rows(app)] == ["provider_unavailable"]


NOW = int(time.time())
BAD_TOKENS = {
    "audience": {"aud": "another-client"},
    "audience_with_azp": {"aud": "another-client", "azp": "karibu-client"},
    "issuer": {"iss": "https://issuer.example.org"},
    "expired": {"exp": NOW - 3600, "iat": NOW - 7200},
    "nonce": {"nonce": "a-nonce-karibu-never-sent"},
    "no_nonce": {"nonce": None},
    "email_unverified": {"email_verified": False},
}


EXPECTED_REASON = {"audience_with_azp": "audience", "no_nonce": "nonce"}


@pytest.mark.parametrize("reason", list(BAD_TOKENS))
def test_an_id_token_that_fails_a_check_signs_nobody_in(app, client, factory, provider, sso_trust, reason):
    institution = university(app, factory, provider, DOMAIN, create_users="staff")
    factory.user(institution, email="amina@ur.ac.rw")
    provider.claim_changes = BAD_TOKENS[reason]
    walk = walk_sign_in(client, sso_trust, "amina@ur.ac.rw")
    assert walk.response.status_code in (401, 403), walk.response.get_data(as_text=True)
    assert "You are not signed in" in walk.response.get_data(as_text=True)
    assert not signed_in(client)
    [row] = sso_audit_rows(app)
    assert (row.target, row.institution_id) == (EXPECTED_REASON.get(reason, reason), institution.id)


def test_a_token_without_email_verified_signs_nobody_in(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    provider.claim_changes = {"email_verified": None}
    walk = walk_sign_in(client, sso_trust, "amina@ur.ac.rw")
    assert walk.response.status_code == 403 and "not verified" in walk.response.get_data(as_text=True)
    assert [row.target for row in sso_audit_rows(app)] == ["email_unverified"]


def test_an_email_outside_the_institutions_domains_signs_nobody_in(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN, create_users="staff")
    factory.user(institution, email="amina@gmail.com")
    provider.identity = Person("amina@gmail.com")  # the provider vouches for an address off the domains
    walk = walk_sign_in(client, sso_trust, "amina@ur.ac.rw")
    assert walk.response.status_code == 403
    assert "is not an address of" in walk.response.get_data(as_text=True)
    assert not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["domain"]
    assert user_with(app, "amina@gmail.com").role == "staff"


def test_a_token_signed_with_a_key_the_provider_does_not_publish_is_refused(app, client, factory, provider,
                                                                            sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    provider.sign_with_unpublished_key = True
    walk = walk_sign_in(client, sso_trust, "amina@ur.ac.rw")
    assert walk.response.status_code == 401 and not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["unknown_key"]


def test_a_forged_state_signs_nobody_in(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    start = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})
    answer = requests.get(start.headers["Location"], verify=sso_trust.bundle, allow_redirects=False, timeout=10)
    callback = urlsplit(answer.headers["Location"])
    arguments = {name: values[0] for name, values in parse_qs(callback.query).items()}
    forged = client.get(f"{callback.path}?{urlencode({**arguments, 'state': 'forged-' + arguments['state']})}")
    assert forged.status_code == 400 and "could not be used" in forged.get_data(as_text=True)
    assert not signed_in(client)
    # The browser's pending sign-in is gone with the forged answer: the real one is refused too.
    assert client.get(f"{callback.path}?{callback.query}").status_code == 400
    assert not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["state", "no_pending_sign_in"]


def test_a_callback_from_a_browser_that_started_nothing_signs_nobody_in(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    victim = app.test_client()
    walk_start = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})
    answer = requests.get(walk_start.headers["Location"], verify=sso_trust.bundle, allow_redirects=False, timeout=10)
    callback = urlsplit(answer.headers["Location"])
    # Someone else's answer pushed into another browser (login CSRF) signs that browser in as nobody.
    assert victim.get(f"{callback.path}?{callback.query}").status_code == 400
    assert not signed_in(victim)
    assert [row.target for row in sso_audit_rows(app)] == ["no_pending_sign_in"]


def test_a_replayed_callback_signs_nobody_in(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    start = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})
    cookie_with_pending_sign_in = client.get_cookie("session").value
    answer = requests.get(start.headers["Location"], verify=sso_trust.bundle, allow_redirects=False, timeout=10)
    callback = urlsplit(answer.headers["Location"])
    callback_url = f"{callback.path}?{callback.query}"
    assert client.get(callback_url).status_code == 302 and signed_in(client)

    replay = app.test_client()  # a copy of the cookie from before the callback, and the callback's address
    replay.set_cookie("session", cookie_with_pending_sign_in)
    replayed = replay.get(callback_url)
    assert replayed.status_code == 400 and not signed_in(replay)
    assert [row.target for row in sso_audit_rows(app)] == ["replayed"]


def test_a_forged_code_and_a_refusal_by_the_provider_sign_nobody_in(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    start = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})
    state = parse_qs(urlsplit(start.headers["Location"]).query)["state"][0]
    forged = client.get("/login/sso/callback", query_string={"state": state, "code": "forged-code"})
    assert forged.status_code == 401 and "refused this answer" in forged.get_data(as_text=True)

    provider.deny = True
    denied = walk_sign_in(client, sso_trust, "amina@ur.ac.rw").response
    assert denied.status_code == 401 and "The person declined" in denied.get_data(as_text=True)
    assert not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["token_exchange", "provider_error"]


def test_odd_requests_get_a_page_never_a_server_error(app, client, factory, provider, sso_trust):
    university(app, factory, provider, DOMAIN)
    assert client.get("/login/sso").status_code == 422
    assert client.get("/login/sso", query_string={"email": "not an email"}).status_code == 422
    unknown = client.get("/login/sso", query_string={"email": "someone@elsewhere.ac.ke"})
    assert unknown.status_code == 404 and "No university sign-in is set up for elsewhere.ac.ke" in unknown.get_data(
        as_text=True)
    for query in ("", "?state=&code=", "?state=x&code=y&error=access_denied", "?code=" + "x" * 5000):
        assert client.get("/login/sso/callback" + query).status_code == 400


def test_the_provider_rotating_its_key_is_followed_by_one_new_fetch_of_its_keys(app, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    first = app.test_client()
    assert walk_sign_in(first, sso_trust, "amina@ur.ac.rw").response.status_code == 302
    fetched = provider.jwks_requests
    provider.rotate_key()
    second = app.test_client()
    assert walk_sign_in(second, sso_trust, "amina@ur.ac.rw").response.status_code == 302
    assert signed_in(second) and provider.jwks_requests == fetched + 1
    third = app.test_client()  # the new key is kept: no fetch for the next sign-in
    assert walk_sign_in(third, sso_trust, "amina@ur.ac.rw").response.status_code == 302
    assert provider.jwks_requests == fetched + 1


def test_required_sso_refuses_the_password_while_a_break_glass_admin_signs_in(app, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN, require=True, name="University of Rwanda")
    factory.user(institution, email="amina@ur.ac.rw")
    factory.user(institution, email="it.office@karibu-ops.org", role="admin")

    staff_browser = app.test_client()
    refused = sign_in(staff_browser, "amina@ur.ac.rw")
    assert refused.status_code == 401
    assert "University of Rwanda signs its staff in with their university account" in refused.get_data(as_text=True)
    assert not signed_in(staff_browser)
    wrong_password = sign_in(app.test_client(), "amina@ur.ac.rw", "not-the-password-9")
    assert wrong_password.status_code == 401 and "university account" in wrong_password.get_data(as_text=True)
    assert walk_sign_in(staff_browser, sso_trust, "amina@ur.ac.rw").response.status_code == 302
    assert signed_in(staff_browser)

    admin_browser = app.test_client()
    accepted = sign_in(admin_browser, "it.office@karibu-ops.org")
    assert accepted.status_code == 302
    assert accepted.headers["Location"] == "/login/two-factor/enrol"  # password + two factors
    page = admin_browser.get("/login/two-factor/enrol")
    assert page.status_code == 200


def test_requiring_sso_signs_out_the_password_sessions_on_its_domains(app, factory, provider, sso_trust,
                                                                       portal_as):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    amina = app.test_client()
    assert sign_in(amina, "amina@ur.ac.rw").status_code == 302 and signed_in(amina)
    admin = portal_as("admin", institution=institution)
    saved = admin.post("/settings/sso", {"issuer": provider.issuer, "client_id": "karibu-client",
                                         "client_secret": "", "domains": DOMAIN, "require": "y",
                                         "create_users": "none"})
    assert saved.status_code == 302
    assert not signed_in(amina)
    assert signed_in(admin.client)  # not on the domain: a break-glass admin
    with app.app_context():
        assert db.session.scalars(select(StaffSession.ended_reason).join(User, User.id == StaffSession.user_id)
                                  .where(User.email == "amina@ur.ac.rw")).one() == "sso_required"
    settings_page = admin.get("/settings/sso").get_data(as_text=True)
    assert "Break-glass admins" in settings_page and admin.user.email in settings_page


def test_first_sign_in_creates_a_staff_account_never_an_admin(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN, create_users="staff")
    provider.claim_changes = {"role": "admin", "groups": ["admins"]}
    walk = walk_sign_in(client, sso_trust, "new.lecturer@ur.ac.rw")
    assert walk.response.status_code == 302 and signed_in(client)
    created = user_with(app, "new.lecturer@ur.ac.rw")
    assert (created.role, created.institution_id) == ("staff", institution.id)
    assert client.get("/users").status_code == 403
    [row] = sso_audit_rows(app, "auth.sso.user_created")
    assert row.target == created.id and "staff account created" in row.detail
    # A second sign-in finds the account: no second one.
    again = app.test_client()
    assert walk_sign_in(again, sso_trust, "new.lecturer@ur.ac.rw").response.status_code == 302
    assert len(sso_audit_rows(app, "auth.sso.user_created")) == 1


def test_without_account_creation_a_newcomer_is_told_who_can_invite_them(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN, name="University of Rwanda")
    factory.user(institution, email="registrar@ur.ac.rw", role="admin")
    walk = walk_sign_in(client, sso_trust, "new.lecturer@ur.ac.rw")
    page = walk.response.get_data(as_text=True)
    assert walk.response.status_code == 403
    assert "Ask an admin of University of Rwanda to invite you: registrar@ur.ac.rw" in page
    assert user_with(app, "new.lecturer@ur.ac.rw") is None and not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["no_account"]


def test_a_switched_off_account_is_not_signed_in(app, client, factory, provider, sso_trust, portal_as):
    institution = university(app, factory, provider, DOMAIN, create_users="staff")
    user = factory.user(institution, email="amina@ur.ac.rw")
    admin = portal_as("admin", institution=institution)
    assert admin.post(f"/users/{user.id}/active", {"active": "false"}).status_code in (200, 302)
    walk = walk_sign_in(client, sso_trust, "amina@ur.ac.rw")
    assert walk.response.status_code == 403 and not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["account_deactivated"]


def test_an_admin_who_must_use_two_factor_is_let_in_by_the_provider(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="registrar@ur.ac.rw", role="admin")
    with app.app_context():
        from core.models import Institution
        db.session.get(Institution, institution.id).require_admin_two_factor = True
        db.session.commit()
    assert walk_sign_in(client, sso_trust, "registrar@ur.ac.rw").response.status_code == 302
    assert client.get("/users").status_code == 200  # not sent to Karibu's own two-factor enrolment


def test_signing_out_ends_the_session_opened_by_the_provider(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    assert walk_sign_in(client, sso_trust, "amina@ur.ac.rw").response.status_code == 302
    signed_in_cookie = client.get_cookie("session").value
    token = csrf_token(client, "/dashboard")
    assert client.post("/logout", data={"csrf_token": token}).status_code == 302
    assert not signed_in(client)
    copy = app.test_client()
    copy.set_cookie("session", signed_in_cookie)
    assert not signed_in(copy)
    with app.app_context():
        assert db.session.scalars(select(StaffSession.ended_reason)).one() == "sign_out"


def test_a_token_signed_with_an_algorithm_karibu_does_not_accept_is_refused(app, client, factory, provider,
                                                                           sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    provider.signing_algorithm = "RS384"  # the provider's own published key, an algorithm outside RS256/ES256
    walk = walk_sign_in(client, sso_trust, "amina@ur.ac.rw")
    assert walk.response.status_code == 401 and not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["algorithm"]


def test_a_discovery_document_naming_another_issuer_is_not_followed(app, client, factory, provider, sso_trust):
    from core.accounts import sso as sso_module
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    provider.discovery_issuer = "https://impostor.example.org"
    sso_module._forget_provider(provider.issuer)
    refused = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})
    sso_module._forget_provider(provider.issuer)
    assert refused.status_code == 503 and not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["provider_unavailable"]


def test_an_answer_that_comes_back_too_late_signs_nobody_in(app, client, factory, provider, sso_trust, monkeypatch):
    from core.accounts import sso as sso_module
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    start = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})
    answer = requests.get(start.headers["Location"], verify=sso_trust.bundle, allow_redirects=False, timeout=10)
    callback = urlsplit(answer.headers["Location"])
    later = time.time() + sso_module.SIGN_IN_SECONDS + 5
    monkeypatch.setattr(sso_module.time, "time", lambda: later)
    late = client.get(f"{callback.path}?{callback.query}")
    assert late.status_code == 400 and "took too long" in late.get_data(as_text=True)
    assert [row.target for row in sso_audit_rows(app)] == ["expired_sign_in"]


def test_a_break_glass_admin_cannot_turn_two_factor_off(app, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN, require=True)
    admin = factory.user(institution, email="it.office@karibu-ops.org", role="admin")
    browser = app.test_client()
    assert sign_in(browser, admin.email).headers["Location"] == "/login/two-factor/enrol"
    secret = secret_on(browser.get("/login/two-factor/enrol"))
    token = csrf_token(browser, "/login/two-factor/enrol")
    enrolled = browser.post("/login/two-factor/enrol", data={"code": pyotp.TOTP(secret).now(), "csrf_token": token})
    assert enrolled.status_code == 201 and signed_in(browser)
    token = csrf_token(browser, "/account/two-factor")
    refused = browser.post("/account/two-factor/disable", data={"proof": "correct-horse-1", "csrf_token": token})
    assert refused.status_code == 409 and "break-glass" in refused.get_data(as_text=True)


def test_an_institution_switched_off_signs_nobody_in(app, client, factory, provider, sso_trust):
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    start = client.get("/login/sso", query_string={"email": "amina@ur.ac.rw"})
    with app.app_context():
        from core.models import Institution
        db.session.get(Institution, institution.id).status = "suspended"
        db.session.commit()
    answer = requests.get(start.headers["Location"], verify=sso_trust.bundle, allow_redirects=False, timeout=10)
    callback = urlsplit(answer.headers["Location"])
    assert client.get(f"{callback.path}?{callback.query}").status_code == 403 and not signed_in(client)
    assert [row.target for row in sso_audit_rows(app)] == ["institution_inactive"]


def test_refusals_are_throttled_per_address_and_sign_ins_are_not(app, factory, provider, sso_trust, monkeypatch):
    monkeypatch.setitem(app.config, "PORTAL_LOGIN_ADDRESS_RATE_LIMIT", "3/minute")
    institution = university(app, factory, provider, DOMAIN)
    factory.user(institution, email="amina@ur.ac.rw")
    for _ in range(4):  # one address, many colleagues: successful sign-ins are not counted
        assert walk_sign_in(app.test_client(), sso_trust, "amina@ur.ac.rw").response.status_code == 302
    guesser = app.test_client()
    answers = [guesser.get("/login/sso/callback", query_string={"state": f"guess-{n}", "code": "x"}).status_code
               for n in range(4)]
    assert answers == [400, 400, 400, 429]
