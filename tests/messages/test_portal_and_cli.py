"""Where messages show: the applicant file's timeline (with resend), the admin Messages page, the CLI; and staff
recording an applicant's answer."""
from __future__ import annotations

import json
import re

from sqlalchemy import select

from core.db import db
from core.models import Event
from tests.messages.conftest import all_messages, drain_now, send_decisions
from tests.portal.bulk_confirmation import confirmation_token
from tests.portal.conftest import PASSWORD, csrf_token, sign_in


def _signed_in(app, factory, institution, role="admin"):
    user = factory.user(institution, role=role)
    client = app.test_client()
    assert sign_in(client, user.email, PASSWORD).status_code == 302
    return client, csrf_token(client, "/dashboard")


def _decided(factory, mail_app, smtp, decision="accepted", **options):
    institution = factory.institution("Makerere University")
    _, key = factory.api_key(institution)
    application = factory.application(institution, first_name="Brian", last_name="Okello", **options)
    send_decisions(mail_app.test_client(), key, [application.id], decision)
    return institution, application


def test_a_failed_email_shows_on_the_file_with_the_servers_answer_and_can_be_resent(mail_app, smtp, factory):
    institution, application = _decided(factory, mail_app, smtp)
    smtp.recorder.rcpt_answers = ["550 5.1.1 Mailbox does not exist"]
    drain_now(mail_app)
    client, token = _signed_in(mail_app, factory, institution, role="staff")
    page = client.get(f"/applicants/{application.id}").get_data(as_text=True)
    assert "550 5.1.1 Mailbox does not exist" in page and ">failed<" in page
    [message] = all_messages(mail_app)
    assert f'/messages/{message.id}/resend' in page

    response = client.post(f"/messages/{message.id}/resend", data={"csrf_token": token, "source": "file"},
                           headers={"HX-Request": "true", "X-CSRFToken": token})
    assert response.status_code == 200 and "queued again" in response.get_data(as_text=True)
    assert all_messages(mail_app)[0].status == "queued"
    drain_now(mail_app)
    assert all_messages(mail_app)[0].status == "sent" and len(smtp.received) == 1
    again = client.post(f"/messages/{message.id}/resend", data={"csrf_token": token, "source": "file"})
    assert again.status_code == 409


def test_resend_needs_the_form_token_and_stays_inside_the_institution(mail_app, smtp, factory):
    institution, application = _decided(factory, mail_app, smtp)
    smtp.recorder.rcpt_answers = ["550 no"]
    drain_now(mail_app)
    [message] = all_messages(mail_app)
    client, token = _signed_in(mail_app, factory, institution)
    assert client.post(f"/messages/{message.id}/resend", data={}).status_code == 400
    other, other_token = _signed_in(mail_app, factory, factory.institution())
    assert other.post(f"/messages/{message.id}/resend", data={"csrf_token": other_token}).status_code == 404
    assert other.get(f"/messages/{message.id}").status_code == 404
    assert all_messages(mail_app)[0].status == "failed"


def test_the_messages_page_lists_filters_and_shows_each_message(mail_app, smtp, factory):
    institution, application = _decided(factory, mail_app, smtp, email="brian@example.com")
    drain_now(mail_app)
    client, _ = _signed_in(mail_app, factory, institution)
    page = client.get("/messages").get_data(as_text=True)
    assert "brian@example.com" in page and "Makerere University" in page and ">sent<" in page
    assert "brian@example.com" not in client.get("/messages?status=failed").get_data(as_text=True)
    assert "brian@example.com" in client.get("/messages?status=sent&channel=email").get_data(as_text=True)
    assert "brian@example.com" not in client.get("/messages?channel=sms").get_data(as_text=True)
    assert client.get("/messages?status=lost").status_code == 400
    [message] = all_messages(mail_app)
    detail = client.get(f"/messages/{message.id}").get_data(as_text=True)
    assert "Dear Brian," in detail and message.message_id_header.replace("<", "&lt;").replace(">", "&gt;") in detail
    html = client.get(f"/messages/{message.id}/html")
    assert html.status_code == 200 and html.mimetype == "text/html"
    assert html.headers["Content-Security-Policy"].startswith("sandbox")
    assert "(personal link, hidden)" in html.get_data(as_text=True)
    assert "/decisions/respond/" not in html.get_data(as_text=True)  # the answer link is never shown or stored

    staff, _ = _signed_in(mail_app, factory, institution, role="staff")
    assert staff.get("/messages").status_code == 403


def decision_responded_events(app) -> list[Event]:
    with app.app_context():
        return list(db.session.scalars(select(Event).where(Event.type == "decision.responded")))


def test_staff_record_an_answer_given_by_phone_after_confirming_it(mail_app, smtp, factory):
    institution, application = _decided(factory, mail_app, smtp, decision="deferred")
    client, token = _signed_in(mail_app, factory, institution, role="staff")
    page = client.get(f"/applicants/{application.id}").get_data(as_text=True)
    decision_id = re.search(r"/decisions/(dec_[A-Za-z0-9]+)/answer", page).group(1)
    select_html = re.search(r'<select[^>]*name="response".*?</select>', page, re.S).group(0)
    assert ">Choose the answer…</option>" in select_html
    assert not re.search(r'<option selected value="(accepted|declined)"', select_html)  # nothing preselected
    address = f"/applicants/{application.id}/decisions/{decision_id}/answer"
    assert client.post(address, data={"response": "maybe", "csrf_token": token}).status_code == 400
    assert client.post(address, data={"response": "", "csrf_token": token}).status_code == 400

    for headers in ({"HX-Request": "true", "X-CSRFToken": token}, {}):  # htmx, then without JavaScript
        asked = client.post(address, data={"response": "declined", "csrf_token": token}, headers=headers)
        assert asked.status_code == 200
        text = asked.get_data(as_text=True)
        assert "Record that Brian Okello declined the decision “Deferred”?" in text
        assert 'name="confirm" value="y"' in text and "Record: declined" in text
        assert decision_responded_events(mail_app) == []  # the first press records nothing

    response = client.post(address, data={"response": "declined", "confirm": "y", "csrf_token": token},
                           headers={"HX-Request": "true", "X-CSRFToken": token})
    assert response.status_code == 200 and "the applicant declined the decision" in response.get_data(as_text=True)
    [event] = decision_responded_events(mail_app)
    assert event.payload["response"] == "declined" and event.payload["decision_id"] == decision_id
    changed = client.post(address, data={"response": "accepted", "csrf_token": token})
    assert changed.status_code == 409
    assert len(decision_responded_events(mail_app)) == 1


def test_an_answer_by_phone_is_recorded_without_javascript_after_its_confirmation(mail_app, smtp, factory):
    institution, application = _decided(factory, mail_app, smtp, decision="accepted")
    client, token = _signed_in(mail_app, factory, institution, role="staff")
    page = client.get(f"/applicants/{application.id}").get_data(as_text=True)
    decision_id = re.search(r"/decisions/(dec_[A-Za-z0-9]+)/answer", page).group(1)
    address = f"/applicants/{application.id}/decisions/{decision_id}/answer"
    asked = client.post(address, data={"response": "accepted", "csrf_token": token}).get_data(as_text=True)
    assert "Record that Brian Okello accepted the decision “Accepted”?" in asked
    assert decision_responded_events(mail_app) == []
    confirmed = client.post(address, data={"response": "accepted", "confirm": "y", "csrf_token": token})
    assert confirmed.status_code == 302
    assert "the applicant accepted the decision" in client.get(confirmed.headers["Location"]).get_data(as_text=True)
    [event] = decision_responded_events(mail_app)
    assert event.payload["response"] == "accepted"


def test_cli_lists_messages_as_json(mail_app, smtp, factory):
    institution, _ = _decided(factory, mail_app, smtp, email="brian@example.com")
    smtp.recorder.rcpt_answers = ["550 5.1.1 unknown user"]
    drain_now(mail_app)
    runner = mail_app.test_cli_runner()
    result = runner.invoke(args=["messages", "list", "--status", "failed", "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.output)["messages"]
    assert (row["recipient"], row["status"], row["last_error"]) == ("brian@example.com", "failed",
                                                                     "550 5.1.1 unknown user")
    assert json.loads(runner.invoke(args=["messages", "list", "--status", "sent", "--json"]).output) == {
        "messages": []}
    human = runner.invoke(args=["messages", "list", "--institution", institution.id])
    assert "brian@example.com" in human.output and "550 5.1.1 unknown user" in human.output
    assert runner.invoke(args=["messages", "list", "--status", "lost"]).exit_code == 2


def test_the_openapi_document_names_the_public_base_url(app, client, monkeypatch):
    monkeypatch.setitem(app.config, "PUBLIC_BASE_URL", "https://admissions.example.ac.ke")
    servers = client.get("/api/v1/openapi.json").json["servers"]
    assert [server["url"] for server in servers] == ["https://admissions.example.ac.ke"]


def test_the_portals_bulk_send_emails_every_applicant_once(mail_app, smtp, factory):
    institution = factory.institution("Mbarara University")
    applications = [factory.application(institution, email=f"bulk{n}@example.com") for n in range(3)]
    client, token = _signed_in(mail_app, factory, institution, role="staff")
    data = {"ids": [a.id for a in applications], "decision": "accepted", "send_decision": "true",
            "csrf_token": token}
    data["confirmation"] = confirmation_token(client.post("/applicants/bulk", data=data))
    assert client.post("/applicants/bulk", data=data).status_code == 302
    assert client.post("/applicants/bulk", data=data).status_code == 200  # the same confirmation again: asked anew
    drain_now(mail_app)
    assert sorted(r.recipients[0] for r in smtp.received) == [f"bulk{n}@example.com" for n in range(3)]
    assert {m.status for m in all_messages(mail_app)} == {"sent"} and len(all_messages(mail_app)) == 3


def test_sending_a_decision_twice_from_the_file_says_nothing_was_sent_again(mail_app, smtp, factory):
    institution = factory.institution()
    application = factory.application(institution, decision="accepted")
    client, token = _signed_in(mail_app, factory, institution, role="staff")
    headers = {"HX-Request": "true", "X-CSRFToken": token}
    first = client.post(f"/applicants/{application.id}/send-decision", data={"confirm": "y"}, headers=headers)
    assert "The decision “Accepted” was sent to the applicant." in first.get_data(as_text=True)
    again = client.post(f"/applicants/{application.id}/send-decision", data={"confirm": "y"}, headers=headers)
    assert "Nothing was sent: this decision was already sent on " in again.get_data(as_text=True)
    assert len(all_messages(mail_app)) == 1
