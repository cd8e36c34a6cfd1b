"""The whole path a decision takes to an applicant and back: email over SMTP, the link in it opened with a
plain HTTP client against a live server, the answer, and `decision.responded` at the institution's webhook."""
from __future__ import annotations

import re
import threading
import time

import pytest
import requests
from werkzeug.serving import make_server

from tests.events.sources.conftest import csrf_token, subscribe
from tests.messages.conftest import all_messages, run_message_worker, send_decisions
from tests.webhooks.conftest import delivering, engine, receiver, resolver, run_worker  # noqa: F401 (fixtures)
from tests.webhooks.independent_verifier import verify


@pytest.fixture
def live(mail_app, engine, monkeypatch):  # noqa: F811
    """The app served on loopback; links in messages point at it."""
    server = make_server("127.0.0.1", 0, mail_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setitem(mail_app.config, "PUBLIC_BASE_URL", base)
    monkeypatch.setitem(mail_app.config, "PUBLIC_FORM_RATE_LIMIT", "100000/minute")
    yield base
    server.shutdown()
    thread.join(timeout=10)


def test_the_applicant_accepts_through_the_emailed_link(live, mail_app, smtp, receiver, factory):  # noqa: F811
    institution = factory.institution("Gulu University")
    _, key = factory.api_key(institution)
    program = factory.program(institution, name="BSc Agriculture")
    cycle = factory.cycle(institution, programs=[program], name="2026/27 Intake")
    application = factory.application(institution, program=program, cycle=cycle, first_name="Grace",
                                      last_name="Achieng", email="grace@example.com")
    secret = subscribe(mail_app, institution, receiver, events=["decision.sent", "decision.responded"])

    assert send_decisions(mail_app.test_client(), key, [application.id], "waitlisted").status_code == 200
    run_message_worker(mail_app)

    [received] = smtp.received
    email = received.message
    assert received.recipients == ["grace@example.com"]
    text = email.get_body(("plain",)).get_content()
    [link] = re.findall(r"http://\S+/decisions/respond/\S+", text)
    assert link.startswith(live + "/decisions/respond/")
    html = email.get_body(("html",)).get_content()
    assert f'href="{link}"' in html

    applicant = requests.Session()
    page = applicant.get(link, timeout=10)
    assert page.status_code == 200 and "Waitlisted" in page.text and "BSc Agriculture" in page.text
    step = applicant.get(link + "/confirm", params={"response": "accepted"}, timeout=10)
    assert step.status_code == 200 and "<strong>Stay on the waiting list</strong>" in step.text
    answered = applicant.post(link, data={"response": "accepted", "csrf_token": csrf_token(step.text)},
                              timeout=10, allow_redirects=True)
    assert answered.status_code == 200 and "You chose to stay on the waiting list on" in answered.text

    run_worker(mail_app)  # webhook deliveries
    bodies = {body["type"]: body for body in (verify(secret, r.headers, r.body, time.time())
                                              for r in receiver.requests)}
    assert sorted(bodies) == ["decision.responded", "decision.sent"] and len(receiver.requests) == 2
    responded = bodies["decision.responded"]["data"]
    assert responded["response"] == "accepted" and responded["submission_id"] == application.id
    [message] = all_messages(mail_app)
    assert message.decision_id == responded["decision_id"] and message.status == "sent"
