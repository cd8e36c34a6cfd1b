"""Two-factor sign-in (TOTP and recovery codes) through the portal's pages, with codes computed by pyotp."""
from __future__ import annotations

import dataclasses
import json
import re
import time

import pyotp
import pytest
from sqlalchemy import select

from core.db import db
from core.models import AuditLog, Institution, RecoveryCode, TwoFactorCredential
from tests.portal.conftest import PASSWORD, csrf_token, sign_in

_SECRET = re.compile(r'<code id="two-factor-secret">([A-Z2-7 ]+)</code>')
_RECOVERY_CODE = re.compile(r"<li><code>([0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4})</code></li>")
THROTTLE_NOTICE = "Too many wrong codes. Wait a few minutes, then try again."


def secret_on(page) -> str:
    match = _SECRET.search(page.get_data(as_text=True))
    assert match, page.get_data(as_text=True)
    return match.group(1).replace(" ", "")


def recovery_codes_on(page) -> list[str]:
    return _RECOVERY_CODE.findall(page.get_data(as_text=True))


def next_step_code(secret: str) -> str:
    """The code of the next 30-second step: accepted (one step of drift) and newer than any code used so far."""
    return pyotp.TOTP(secret).at(time.time() + 30)


def enrol(portal) -> tuple[str, list[str]]:
    """Switch two-factor on for a signed-in portal user: (secret, recovery codes)."""
    secret = secret_on(portal.get("/account/two-factor/enrol"))
    confirmed = portal.post("/account/two-factor/enrol", {"code": pyotp.TOTP(secret).now()})
    assert confirmed.status_code == 201, confirmed.get_data(as_text=True)
    codes = recovery_codes_on(confirmed)
    assert len(codes) == 10 and len(set(codes)) == 10
    return secret, codes


def sign_out(portal) -> None:
    assert portal.post("/logout").status_code == 302


def send_code(client, code: str, token_from: str = "/login/two-factor"):
    return client.post("/login/two-factor", data={"code": code, "csrf_token": csrf_token(client, token_from)})


def audit_rows(app, *actions):
    with app.app_context():
        return list(db.session.execute(select(AuditLog.action, AuditLog.target, AuditLog.status)
                                       .where(AuditLog.action.in_(actions)).order_by(AuditLog.id)))


@pytest.fixture
def throttle(app, monkeypatch):
    def set_limits(account: str = "1000/minute", address: str = "1000/minute"):
        monkeypatch.setitem(app.config, "PORTAL_TWO_FACTOR_RATE_LIMIT", account)
        monkeypatch.setitem(app.config, "PORTAL_TWO_FACTOR_ADDRESS_RATE_LIMIT", address)
    return set_limits


def test_enrol_with_a_code_from_the_qr_secret(app, staff):
    page = staff.get("/account/two-factor")
    assert "Off" in page.get_data(as_text=True) and "/account/two-factor/enrol" in page.get_data(as_text=True)
    enrol_page = staff.get("/account/two-factor/enrol")
    html = enrol_page.get_data(as_text=True)
    assert 'src="data:image/svg+xml' in html  # the QR code is drawn here, inline; no external service
    secret = secret_on(enrol_page)
    assert secret_on(staff.get("/account/two-factor/enrol")) == secret  # reopening keeps the app's set-up valid

    wrong = staff.post("/account/two-factor/enrol", {"code": "000000" if pyotp.TOTP(secret).now() != "000000"
                                                     else "111111"})
    assert wrong.status_code == 422 and "That code does not match" in wrong.get_data(as_text=True)
    assert "Off" in staff.get("/account/two-factor").get_data(as_text=True)

    confirmed = staff.post("/account/two-factor/enrol", {"code": pyotp.TOTP(secret).now()})
    assert confirmed.status_code == 201
    codes = recovery_codes_on(confirmed)
    assert len(codes) == 10
    status = staff.get("/account/two-factor").get_data(as_text=True)
    assert "On" in status and re.search(r"Recovery codes left</dt>\s*<dd>10", status)
    # Stored encrypted and hashed; nothing secret in the audit log.
    with app.app_context():
        credential = db.session.get(TwoFactorCredential, staff.user.id)
        assert secret not in credential.secret_ciphertext and credential.confirmed_at is not None
        hashes = set(db.session.scalars(select(RecoveryCode.code_hash).where(RecoveryCode.user_id == staff.user.id)))
        assert len(hashes) == 10 and not hashes & set(codes)
        logged = " ".join(f"{row.action} {row.target} {row.query} {row.path}" for row in db.session.scalars(
            select(AuditLog)))
    assert secret not in logged and not any(code in logged for code in codes)
    assert ("two_factor.enrolled", staff.user.id, 201) in audit_rows(app, "two_factor.enrolled")


def test_sign_in_asks_for_a_code_and_a_code_is_never_accepted_twice(app, staff):
    secret, _ = enrol(staff)
    used_at_enrolment = pyotp.TOTP(secret).now()
    sign_out(staff)
    client = staff.client

    response = sign_in(client, staff.user.email)
    assert response.status_code == 302 and response.headers["Location"] == "/login/two-factor"
    assert client.get("/dashboard").status_code == 302  # the password alone signs nobody in

    replayed = send_code(client, used_at_enrolment)
    assert replayed.status_code == 401 and "That code is not valid" in replayed.get_data(as_text=True)
    code = next_step_code(secret)
    accepted = send_code(client, code)
    assert accepted.status_code == 302 and accepted.headers["Location"] == "/dashboard"
    assert client.get("/dashboard").status_code == 200
    assert [row.action for row in audit_rows(app, "login.two_factor_due", "two_factor.failed",
                                             "two_factor.used")] == [
        "login.two_factor_due", "two_factor.failed", "two_factor.used"]
    assert audit_rows(app, "two_factor.used")[0].target == f"{staff.user.id} (code)"

    # The same code in another browser, within its window: refused.
    client.post("/logout", data={"csrf_token": csrf_token(client, "/dashboard")})
    other = app.test_client()
    sign_in(other, staff.user.email)
    assert send_code(other, code).status_code == 401


def test_sign_in_keeps_the_page_asked_for(staff):
    secret, _ = enrol(staff)
    sign_out(staff)
    client = staff.client
    token = csrf_token(client, "/login?next=/applicants")
    client.post("/login?next=/applicants", data={"email": staff.user.email, "password": PASSWORD, "csrf_token": token})
    assert send_code(client, next_step_code(secret)).headers["Location"] == "/applicants"


def test_a_recovery_code_works_once(app, staff):
    _, codes = enrol(staff)
    sign_out(staff)
    client = staff.client
    sign_in(client, staff.user.email)
    typed = codes[3].lower().replace("-", " ")  # as someone might type it
    response = send_code(client, typed)
    assert response.status_code == 302
    assert "9 left" in client.get("/dashboard").get_data(as_text=True)
    assert audit_rows(app, "two_factor.used")[-1].target == f"{staff.user.id} (recovery code)"
    client.post("/logout", data={"csrf_token": csrf_token(client, "/dashboard")})

    sign_in(client, staff.user.email)
    assert send_code(client, codes[3]).status_code == 401
    assert send_code(client, codes[4]).status_code == 302


def test_new_recovery_codes_replace_the_old_ones(staff):
    _, old_codes = enrol(staff)
    regenerated = staff.post("/account/two-factor/recovery-codes")
    assert regenerated.status_code == 200
    new_codes = recovery_codes_on(regenerated)
    assert len(new_codes) == 10 and not set(new_codes) & set(old_codes)
    sign_out(staff)
    sign_in(staff.client, staff.user.email)
    assert send_code(staff.client, old_codes[0]).status_code == 401
    assert send_code(staff.client, new_codes[0]).status_code == 302


def test_wrong_codes_are_throttled_per_account_from_any_address(app, staff, throttle):
    throttle(account="3/minute")
    secret, _ = enrol(staff)
    wrong = str((int(next_step_code(secret)) + 1) % 1_000_000).zfill(6)
    statuses = []
    for number in range(4):
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = f"10.9.{number}.7"
        sign_in(client, staff.user.email)
        statuses.append(send_code(client, wrong))
    assert [response.status_code for response in statuses] == [401, 401, 401, 429]
    assert THROTTLE_NOTICE in statuses[-1].get_data(as_text=True) and statuses[-1].headers["Retry-After"]
    # The right code waits too while the account is throttled.
    assert send_code(client, next_step_code(secret)).status_code == 429
    assert ("two_factor.throttled", staff.user.id, 429) in audit_rows(app, "two_factor.throttled")


def test_wrong_codes_are_throttled_per_address_across_accounts(app, portal_as, throttle):
    throttle(address="2/minute")
    people = [portal_as("staff") for _ in range(3)]
    for person in people:
        enrol(person)
        sign_out(person)
    statuses = []
    for person in people:
        sign_in(person.client, person.user.email)
        statuses.append(send_code(person.client, "ZZZZ-ZZZZ-ZZZZ-ZZZZ").status_code)
    assert statuses == [401, 401, 429]


def test_a_pending_sign_in_opens_no_page(app, staff):
    """Every portal GET page answers a browser halfway through sign-in exactly as it answers a stranger."""
    enrol(staff)
    sign_out(staff)
    pending = staff.client
    assert sign_in(pending, staff.user.email).headers["Location"] == "/login/two-factor"
    anonymous = app.test_client()
    adapter = app.url_map.bind("localhost")
    checked = 0
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("portal.") or "GET" not in rule.methods or rule.endpoint.startswith(
                "portal.two_factor_") and rule.rule.startswith("/login/"):
            continue
        url = adapter.build(rule.endpoint, {name: "x" for name in rule.arguments})
        stranger, halfway = anonymous.get(url), pending.get(url)
        assert (halfway.status_code, halfway.headers.get("Location")) == (
            stranger.status_code, stranger.headers.get("Location")), url
        checked += stranger.status_code == 302
    assert checked >= 15
    # Also through htmx: told to sign in, like anyone without a session.
    assert pending.get("/applicants", headers={"HX-Request": "true"}).status_code == 401


def test_an_expired_pending_sign_in_starts_over(app, staff, monkeypatch):
    secret, _ = enrol(staff)
    sign_out(staff)
    monkeypatch.setattr("portal.accounts.pending_sign_in.PENDING_SECONDS", -1)
    sign_in(staff.client, staff.user.email)
    response = send_code(staff.client, next_step_code(secret), token_from="/login")
    assert response.status_code == 302 and response.headers["Location"] == "/login"
    assert staff.client.get("/dashboard").status_code == 302


def test_turning_off_needs_the_password_or_a_code(app, staff, throttle):
    secret, _ = enrol(staff)
    refused = staff.post("/account/two-factor/disable", {"proof": "not-my-password"})
    assert refused.status_code == 422 and "neither your password nor a valid code" in refused.get_data(as_text=True)
    assert "On" in staff.get("/account/two-factor").get_data(as_text=True)
    turned_off = staff.post("/account/two-factor/disable", {"proof": PASSWORD})
    assert turned_off.status_code == 302
    assert "Off" in staff.get("/account/two-factor").get_data(as_text=True)
    sign_out(staff)
    assert sign_in(staff.client, staff.user.email).headers["Location"] == "/dashboard"
    staff = dataclasses.replace(staff, token=csrf_token(staff.client, "/dashboard"))  # sign-in rotates the session

    # With a code instead of the password.
    secret, _ = enrol(staff)
    assert staff.post("/account/two-factor/disable", {"proof": next_step_code(secret)}).status_code == 302
    with app.app_context():
        assert db.session.get(TwoFactorCredential, staff.user.id) is None
    assert [row.action for row in audit_rows(app, "two_factor.disabled", "two_factor.failed")] == [
        "two_factor.failed", "two_factor.disabled", "two_factor.disabled"]


def test_guessing_the_proof_to_turn_off_is_throttled(staff, throttle):
    throttle(account="2/minute")
    enrol(staff)
    statuses = [staff.post("/account/two-factor/disable", {"proof": f"guess-{n}"}).status_code for n in range(3)]
    assert statuses == [422, 422, 429]
    assert staff.post("/account/two-factor/disable", {"proof": PASSWORD}).status_code == 429


def test_required_for_admins_forces_enrolment(app, portal_as, factory):
    admin = portal_as("admin")
    institution = admin.institution
    staff = portal_as("staff", institution=institution)
    other_admin = factory.user(institution, role="admin")
    elsewhere = portal_as("admin")

    assert 'name="required"' in admin.get("/users").get_data(as_text=True)
    turned_on = admin.post("/users/two-factor-rule", {"required": "y"})
    assert turned_on.status_code == 302
    assert ("institution.admin_two_factor", "required", 302) in audit_rows(app, "institution.admin_two_factor")
    with app.app_context():
        assert db.session.get(Institution, elsewhere.institution.id).require_admin_two_factor is False

    # A signed-in admin enrols before opening anything else; staff and other institutions go on as before.
    assert admin.get("/dashboard").headers["Location"] == "/account/two-factor/enrol"
    hx = admin.get("/applicants", htmx=True)
    assert hx.status_code == 403 and hx.headers["HX-Redirect"] == "/account/two-factor/enrol"
    assert staff.get("/dashboard").status_code == 200
    assert elsewhere.get("/dashboard").status_code == 200
    secret, _ = enrol(admin)
    assert admin.get("/dashboard").status_code == 200
    page = admin.get("/account/two-factor").get_data(as_text=True)
    assert "cannot be turned off" in page and "/account/two-factor/disable" not in page
    assert admin.post("/account/two-factor/disable", {"proof": PASSWORD}).status_code == 409

    # An admin signing in without two-factor enrols to finish signing in, and gets nowhere else before.
    client = app.test_client()
    assert sign_in(client, other_admin.email).headers["Location"] == "/login/two-factor/enrol"
    assert client.get("/dashboard").status_code == 302
    assert client.get("/login/two-factor").headers["Location"] == "/login/two-factor/enrol"
    forced = client.get("/login/two-factor/enrol")
    assert "requires two-factor sign-in for admins" in forced.get_data(as_text=True)
    other_secret = secret_on(forced)
    token = csrf_token(client, "/login/two-factor/enrol")
    done = client.post("/login/two-factor/enrol", data={"code": pyotp.TOTP(other_secret).now(), "csrf_token": token})
    assert done.status_code == 201 and len(recovery_codes_on(done)) == 10
    assert client.get("/dashboard").status_code == 200
    assert [row.target for row in audit_rows(app, "two_factor.enrolled")] == [admin.user.id, other_admin.id]

    # Staff sign in with the password alone, as before.
    sign_out(staff)
    assert sign_in(staff.client, staff.user.email).headers["Location"] == "/dashboard"

    # Optional again: admins may turn it off.
    assert admin.post("/users/two-factor-rule", {}).status_code == 302
    assert admin.post("/account/two-factor/disable", {"proof": PASSWORD}).status_code == 302


def test_the_rule_is_for_admins_to_change(staff):
    assert staff.post("/users/two-factor-rule", {"required": "y"}).status_code == 403


def test_forms_refuse_a_missing_csrf_token(staff):
    enrol(staff)
    for path, data in (("/account/two-factor/recovery-codes", {}), ("/account/two-factor/disable",
                                                                   {"proof": PASSWORD})):
        refused = staff.post(path, data, csrf=False)
        assert refused.status_code == 400 and "form expired" in refused.get_data(as_text=True)
    assert "On" in staff.get("/account/two-factor").get_data(as_text=True)
    sign_out(staff)
    sign_in(staff.client, staff.user.email)
    refused = staff.client.post("/login/two-factor", data={"code": "123456"})
    assert refused.status_code == 400


def test_an_unknown_address_cannot_start_the_code_step(client):
    response = client.get("/login/two-factor")
    assert response.status_code == 302 and response.headers["Location"] == "/login"
    assert client.get("/login/two-factor/enrol").headers["Location"] == "/login"


def test_an_operator_can_remove_a_lost_two_factor_set_up(app, staff):
    enrol(staff)
    sign_out(staff)
    runner = app.test_cli_runner()
    foreign = runner.invoke(args=["users", "reset-two-factor", "--institution", "ins_elsewhere", "--email",
                                  staff.user.email])
    assert foreign.exit_code == 1 and "User not found" in foreign.output
    result = runner.invoke(args=["users", "reset-two-factor", "--institution", staff.institution.id, "--email",
                                 staff.user.email.upper(), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"user_id": staff.user.id, "had_two_factor": True}
    assert sign_in(staff.client, staff.user.email).headers["Location"] == "/dashboard"
    assert ("two_factor.reset", staff.user.id, 200) in audit_rows(app, "two_factor.reset")
