"""A message's personal link at rest: kept encrypted only until the message is sent, under a key of its own.

Read from outside (the database, as someone holding a copy of it would): once sent, the row keeps no sealed
link, so a database copy and the key taken later open nothing; a ciphertext of another use of SECRET_KEY (a
webhook signing secret) copied into a message's link is unreadable there, so it is never emailed to whoever
the message goes to."""
from __future__ import annotations

from sqlalchemy import select, update

from core.db import db
from core.messages.private_links import unseal
from core.models.messages import Message
from core.models.webhooks import WebhookEndpoint
from core.scoping import InstitutionScope
from core.webhooks.endpoints import save_endpoint
from tests.messages.conftest import all_messages, drain_now, send_decisions


def _stored_links(app) -> dict[str, str | None]:
    with app.app_context():
        return dict(db.session.execute(select(Message.recipient, Message.private_link)).all())


def test_a_sent_message_keeps_no_sealed_link_and_a_refused_one_keeps_it_to_resend(mail_app, smtp, factory):
    institution = factory.institution()
    _, key = factory.api_key(institution)
    delivered = factory.application(institution, email="delivered@example.com")
    refused = factory.application(institution, email="refused@example.com")
    assert send_decisions(mail_app.test_client(), key, [delivered.id]).status_code == 200
    with mail_app.app_context():
        [sealed] = _stored_links(mail_app).values()
        link = unseal(sealed)  # what the key opens while the message waits
    assert link and "/decisions/respond/" in link

    drain_now(mail_app)
    [received] = smtp.received
    assert link in received.message.get_body(("plain",)).get_content()
    assert _stored_links(mail_app) == {"delivered@example.com": None}, "the sent message still holds its link"

    smtp.recorder.rcpt_answers.append("550 5.1.1 no such user")
    assert send_decisions(mail_app.test_client(), key, [refused.id]).status_code == 200
    drain_now(mail_app)
    failed = all_messages(mail_app, recipient="refused@example.com")[0]
    assert failed.status == "failed"
    assert _stored_links(mail_app)["refused@example.com"] is not None  # resending it needs it


def test_a_webhook_secret_copied_into_a_message_link_is_never_emailed(mail_app, smtp, factory, monkeypatch):
    """Were the links' key derived under the webhook secrets' label, the copied secret would open as the link
    and be emailed to the applicant's address."""
    institution = factory.institution()
    _, key = factory.api_key(institution)
    application = factory.application(institution, email="someone@example.com")
    monkeypatch.setitem(mail_app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
    monkeypatch.setitem(mail_app.config, "WEBHOOK_ALLOW_HTTP", True)
    with mail_app.app_context():
        _, webhook_secret = save_endpoint(InstitutionScope(institution.id), "http://127.0.0.1:9/hooks")
    assert send_decisions(mail_app.test_client(), key, [application.id]).status_code == 200
    with mail_app.app_context():
        secret_ciphertext = db.session.scalar(select(WebhookEndpoint.secret_ciphertext))
        db.session.execute(update(Message).values(private_link=secret_ciphertext))
        db.session.commit()

    drain_now(mail_app)
    assert all(webhook_secret not in received.data.decode("utf-8", "replace") for received in smtp.received)
    [message] = all_messages(mail_app)
    assert message.status == "failed" and "personal link" in message.last_error
    assert smtp.received == []
