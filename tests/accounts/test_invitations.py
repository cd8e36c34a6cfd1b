"""Invitations by email: the link in a real SMTP sink, the invitee's own password, single use, and nothing
told about accounts at other institutions."""
from __future__ import annotations

import re

from sqlalchemy import select

from core.db import db
from core.models import User
from core.models.accounts import StaffInvitation
from tests.accounts.conftest import audit_rows, deliver, emails_to, form_token, link_path
from tests.portal.conftest import PASSWORD, sign_in

NEW_PASSWORD = "kilimanjaro-sunrise-42"


def _invite(admin, email: str, role: str = "staff"):
    return admin.post("/users", {"email": email, "role": role})


def _set_password(client, path: str, password: str = NEW_PASSWORD, confirm: str | None = None):
    token = form_token(client, path)
    return client.post(path, data={"password": password, "confirm": confirm or password, "csrf_token": token})


def _text(response) -> str:
    return response.get_data(as_text=True)


def test_invite_email_set_password_then_sign_in(mail_app, smtp, admin, app):
    response = _invite(admin, "Grace@Example.ac.rw", role="admin")
    assert response.status_code == 201
    assert "invitation is on its way to grace@example.ac.rw" in _text(response)
    assert "password" not in re.sub(r"<[^>]+>", "", _text(response)).lower().split("invite a colleague")[0]
    assert "temporary-password" not in _text(response)
    assert "grace@example.ac.rw" in _text(admin.get("/users"))  # listed as pending

    deliver(app)
    [email] = emails_to(smtp, "grace@example.ac.rw")
    assert admin.institution.name in email["Subject"]
    path = link_path(email)
    assert path.startswith("/account/invitation/")

    invitee = app.test_client()
    page = invitee.get(path)
    assert page.status_code == 200 and "grace@example.ac.rw" in _text(page)
    done = _set_password(invitee, path)
    assert done.status_code == 302 and done.headers["Location"] == "/login"
    assert sign_in(invitee, "grace@example.ac.rw", NEW_PASSWORD).status_code == 302
    assert invitee.get("/users").status_code == 200  # invited as admin

    again = app.test_client()
    assert again.get(path).status_code == 410  # single use
    assert "This link cannot be used" in _text(again.get(path))
    assert "grace@example.ac.rw" not in _text(admin.get("/users")).split("Accounts")[0]  # no longer pending

    actions = [(row.action, row.target) for row in audit_rows(app)]
    assert any(action == "invitation.send" for action, _ in actions)
    assert any(action == "invitation.accepted" for action, _ in actions)
    assert not any(NEW_PASSWORD in (row.target + row.path + row.query) for row in audit_rows(app))
    assert not any(path.rsplit("/", 1)[1] in (row.target + row.path + row.query) for row in audit_rows(app))


def test_admins_see_the_invitation_email_without_its_link(mail_app, smtp, admin, app):
    _invite(admin, "amani@example.ac.ke")
    deliver(app)
    token = link_path(emails_to(smtp, "amani@example.ac.ke")[0]).rsplit("/", 1)[1]
    with app.app_context():
        message_id = db.session.scalars(select(StaffInvitation)).one() and re.search(
            r'href="/messages/(msg_[A-Za-z0-9]+)"', _text(admin.get("/messages"))).group(1)
    detail = _text(admin.get(f"/messages/{message_id}"))
    assert "(personal link, hidden)" in detail and token not in detail
    html = _text(admin.get(f"/messages/{message_id}/html"))
    assert "(personal link, hidden)" in html and token not in html


def test_the_password_rules_apply_and_a_refused_password_keeps_the_link(mail_app, smtp, admin, app):
    _invite(admin, "baraka.otieno@example.ac.ke")
    deliver(app)
    path = link_path(emails_to(smtp, "baraka.otieno@example.ac.ke")[0])
    invitee = app.test_client()
    for password, reason in [("short-pass1", "at least 12 characters"),
                             ("baseball1234", "commonly used passwords"),
                             ("Baraka.Otieno-2026!", "name part of your email"),
                             ]:
        refused = _set_password(invitee, path, password)
        assert refused.status_code == 422 and reason in _text(refused), password
    assert _set_password(invitee, path, NEW_PASSWORD, confirm="something-else-entirely").status_code == 422
    assert _set_password(invitee, path).status_code == 302


def test_forged_expired_revoked_and_resent_links_change_nothing(mail_app, smtp, admin, app, clock):
    from datetime import timedelta
    visitor = app.test_client()
    assert visitor.get("/account/invitation/" + "A" * 43).status_code == 410
    assert visitor.get("/account/invitation/short").status_code == 410

    _invite(admin, "expired@example.ac.rw")
    deliver(app)
    old_path = link_path(emails_to(smtp, "expired@example.ac.rw")[0])
    clock.advance(timedelta(hours=72, minutes=1))
    assert visitor.get(old_path).status_code == 410

    with app.app_context():
        invitation_id = db.session.scalars(select(StaffInvitation.id)).one()
    resent = admin.post(f"/users/invitations/{invitation_id}/resend")
    assert resent.status_code == 302
    deliver(app)
    new_path = link_path(emails_to(smtp, "expired@example.ac.rw")[-1])
    assert new_path != old_path
    assert _set_password(visitor, old_path).status_code == 410  # the earlier link no longer works

    assert admin.post(f"/users/invitations/{invitation_id}/revoke").status_code == 302
    assert _set_password(visitor, new_path).status_code == 410
    with app.app_context():
        assert db.session.scalars(select(User).where(User.email == "expired@example.ac.rw")).all() == []


def test_inviting_an_address_known_elsewhere_reveals_nothing(mail_app, smtp, portal_as, factory, app):
    ours = portal_as("admin")
    elsewhere = factory.institution("Makerere University")
    factory.user(elsewhere, email="known@example.ac.ug", role="admin")

    known = _invite(ours, "known@example.ac.ug")
    unknown = _invite(ours, "unknown@example.ac.ug")
    assert known.status_code == unknown.status_code == 201

    def comparable(response, email):
        text = _text(response).replace(email, "EMAIL")
        text = re.sub(r'(csrf-token" content="|name="csrf_token"[^>]*value=")[^"]+', r"\1", text)
        text = re.sub(r"inv_[A-Za-z0-9]+", "inv_", text)
        text = re.sub(r"\d{2} \w{3} \d{4}, \d{2}:\d{2} UTC", "TIME", text)
        # the table of pending invitations lists both addresses in both answers
        return re.sub(r'<div id="invitation-table".*?</table>', "", text, flags=re.S)
    assert comparable(known, "known@example.ac.ug") == comparable(unknown, "unknown@example.ac.ug")
    assert "Makerere" not in _text(known)

    deliver(app)
    [email] = emails_to(smtp, "known@example.ac.ug")
    path = link_path(email)
    assert _set_password(app.test_client(), path).status_code == 302
    with app.app_context():
        accounts = db.session.scalars(select(User).where(User.email == "known@example.ac.ug")).all()
        assert sorted(user.institution_id for user in accounts) == sorted([ours.institution.id, elsewhere.id])


def test_inviting_someone_who_already_has_an_account_here_is_refused(mail_app, admin, factory):
    colleague = factory.user(admin.institution, email="here@example.ac.rw")
    refused = _invite(admin, colleague.email.upper())
    assert refused.status_code == 422
    assert "already has an account with this email" in _text(refused)


def test_one_email_at_two_institutions_asks_which_only_after_the_right_password(app, factory):
    first, second = factory.institution("Kigali Tech"), factory.institution("Gulu College")
    factory.user(first, email="shared@example.org", password=PASSWORD)
    factory.user(second, email="shared@example.org", password=PASSWORD, role="admin")
    client = app.test_client()

    wrong = sign_in(client, "shared@example.org", "not-the-password-at-all")
    assert wrong.status_code == 401 and "Kigali" not in _text(wrong) and "Gulu" not in _text(wrong)
    assert client.get("/login/institution").headers["Location"] == "/login"

    right = sign_in(client, "shared@example.org")
    assert right.status_code == 302 and right.headers["Location"] == "/login/institution"
    choice = client.get("/login/institution")
    assert "Kigali Tech" in _text(choice) and "Gulu College" in _text(choice)
    account = re.search(r'<option value="(usr_[A-Za-z0-9]+)">Gulu College', _text(choice)).group(1)
    token = form_token(client, "/login/institution")
    assert client.post("/login/institution", data={"account": "usr_forged", "csrf_token": token}).status_code == 422
    chosen = client.post("/login/institution", data={"account": account, "csrf_token": token})
    assert chosen.status_code == 302
    assert "Gulu College" in _text(client.get("/dashboard"))
    assert client.get("/users").status_code == 200  # the admin account of the second institution


def test_different_passwords_at_two_institutions_sign_straight_in(app, factory):
    first, second = factory.institution("Arusha Institute"), factory.institution("Moshi College")
    factory.user(first, email="twice@example.org", password=PASSWORD)
    factory.user(second, email="twice@example.org", password="another-long-secret-9")
    client = app.test_client()
    response = sign_in(client, "twice@example.org", "another-long-secret-9")
    assert response.headers["Location"] == "/dashboard"
    assert "Moshi College" in _text(client.get("/dashboard"))


def test_the_cli_still_creates_users_and_explains_a_refused_password(app, factory):
    institution = factory.institution()
    runner = app.test_cli_runner()
    refused = runner.invoke(args=["users", "create", "--institution", institution.id, "--email",
                                  "ops@example.org", "--password", "short"])
    assert refused.exit_code == 1 and "at least 12 characters" in refused.output
    created = runner.invoke(args=["users", "create", "--institution", institution.id, "--email",
                                  "ops@example.org", "--password", "a-long-operator-secret"])
    assert created.exit_code == 0, created.output
    assert sign_in(app.test_client(), "ops@example.org", "a-long-operator-secret").status_code == 302
