"""The small holes the probe of issue #39 found on the public and token pages, each checked from outside: a live
reset or invitation token in the request log of an unmatched path (a trailing slash), an erased applicant's
decision link still recording an answer, token pages and the answer pages' 400s without `no-store` and
`no-referrer`, and the brand stylesheet's name taking a trailing newline."""
from __future__ import annotations

import json
import logging
import re

import pytest
from sqlalchemy import select

from core.applications.decision_answers import decision_response_token
from core.db import db
from core.models import Decision
from core.models.history import ApplicationChange
from ops.logs import json_formatter
from tests.accounts.conftest import deliver, emails_to, form_token, link_path
from tests.messages.conftest import clock, drain_now, mail_app, smtp  # noqa: F401 (fixtures)
from tests.portal.conftest import _fresh_login_counters, admin, portal_as, staff  # noqa: F401 (fixtures)
from tests.portal.conftest import csrf_token

PRIVATE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _private(response) -> dict:
    return {name: response.headers.get(name) for name in PRIVATE}


@pytest.fixture
def reset_path(mail_app, smtp, factory):  # noqa: F811
    """The path of a live reset link, as emailed."""
    user = factory.user(factory.institution(), email="wanjiku@example.ac.ke")
    client = mail_app.test_client()
    client.post("/login/forgot", data={"email": user.email, "csrf_token": csrf_token(client, "/login/forgot")})
    deliver(mail_app)
    [email] = emails_to(smtp, user.email)
    return link_path(email)


@pytest.fixture
def invitation_path(mail_app, smtp, portal_as):  # noqa: F811
    """The path of a live invitation link, as emailed."""
    inviter = portal_as("admin")
    assert inviter.post("/users", {"email": "newcomer@example.ac.ke", "role": "staff"}).status_code == 201
    deliver(mail_app)
    [email] = emails_to(smtp, "newcomer@example.ac.ke")
    return link_path(email)


def _logged_paths(client, caplog, path: str) -> list[str]:
    with caplog.at_level(logging.INFO, logger="karibu.request"):
        response = client.get(path)
    assert response.status_code == 404
    records = [record for record in caplog.records if record.name == "karibu.request"]
    assert len(records) == 1
    return [logging.Formatter("%(message)s").format(records[0]),
            json.dumps(json.loads(json_formatter().format(records[0])))]


def test_a_live_reset_token_with_a_trailing_slash_is_redacted_in_the_request_log(mail_app, reset_path, caplog):
    token = reset_path.rsplit("/", 1)[1]
    for line in _logged_paths(mail_app.test_client(), caplog, reset_path + "/"):
        assert token not in line and "/account/reset/[REDACTED]/" in line


def test_a_live_invitation_token_with_a_trailing_slash_is_redacted_in_the_request_log(mail_app, invitation_path,
                                                                                     caplog):
    token = invitation_path.rsplit("/", 1)[1]
    for line in _logged_paths(mail_app.test_client(), caplog, invitation_path + "/extra"):
        assert token not in line and "/account/invitation/[REDACTED]/extra" in line


def test_token_pages_are_private_whatever_they_answer(mail_app, reset_path, invitation_path):
    for path in (reset_path, invitation_path):
        client = mail_app.test_client()
        assert _private(client.get(path)) == PRIVATE  # the form
        token = form_token(client, path)
        weak = client.post(path, data={"password": "x", "confirm": "x", "csrf_token": token})
        assert weak.status_code == 422 and _private(weak) == PRIVATE
        no_csrf = client.post(path, data={"password": "x", "confirm": "x"})
        assert no_csrf.status_code == 400 and _private(no_csrf) == PRIVATE
        refused_input = client.get(path + "?lang=%00")
        assert refused_input.status_code == 400 and _private(refused_input) == PRIVATE
    unknown = mail_app.test_client().get("/account/reset/" + "A" * 43)
    assert unknown.status_code == 410 and _private(unknown) == PRIVATE


@pytest.fixture
def answer_link(app, factory):
    """The answer path of a sent, answerable decision."""
    institution = factory.institution()
    application = factory.application(institution, decision="accepted")
    with app.app_context():
        decision = Decision(institution_id=institution.id, application_id=application.id, status="accepted",
                            sent_at=db.func.now())
        db.session.add(decision)
        db.session.commit()
        return institution, application, decision.id, "/decisions/respond/" + decision_response_token(decision)


def test_the_400s_of_the_answer_pages_are_private(client, answer_link):
    path = answer_link[3]
    bad_choice = client.get(path + "/confirm?response=maybe")
    assert bad_choice.status_code == 400 and _private(bad_choice) == PRIVATE
    no_csrf = client.post(path, data={"response": "accepted"})
    assert no_csrf.status_code == 400 and _private(no_csrf) == PRIVATE
    refused_input = client.get(path + "?lang=%00")
    assert refused_input.status_code == 400 and _private(refused_input) == PRIVATE
    refused_input = client.get(path + "/confirm?response=%00")
    assert refused_input.status_code == 400 and _private(refused_input) == PRIVATE


def test_an_erased_applicants_link_records_nothing(app, client, answer_link):
    institution, application, decision_id, path = answer_link
    page = client.get(path + "/confirm?response=accepted")
    assert page.status_code == 200
    [token] = re.findall(r'name="csrf_token" type="hidden" value="([^"]+)"', page.get_data(as_text=True))
    result = app.test_cli_runner().invoke(args=[
        "applicants", "erase", application.id, "--institution", institution.id, "--requested-by", "dpo@example.rw",
        "--reason", "Request 39", "--force", "--json"])
    assert result.exit_code == 0, result.output
    for response in (client.get(path), client.get(path + "/confirm?response=accepted"),
                     client.post(path, data={"response": "accepted", "csrf_token": token})):
        assert response.status_code == 404 and _private(response) == PRIVATE
    with app.app_context():
        decision = db.session.get(Decision, decision_id)
        assert (decision.response, decision.responded_at) == (None, None)
        assert not db.session.scalars(select(ApplicationChange).where(
            ApplicationChange.application_id == application.id, ApplicationChange.kind == "decision_answered")).all()


@pytest.mark.parametrize(("name", "status"), [
    ("0b5d57.css", 200), ("0b5d57%0A.css", 404), ("0b5d57%0a.css", 404), ("0B5D57.css", 404), ("0b5d5.css", 404),
])
def test_the_brand_stylesheet_matches_the_whole_name(client, name, status):
    response = client.get(f"/applicant-colours/{name}")
    assert response.status_code == status
    if status == 200:
        assert response.get_data(as_text=True) == ":root { --brand: #0b5d57; }\n"
