"""No usable token at rest or in a log: after an invitation, a password reset and a decision email have been
sent (and their links opened), neither the whole database nor any log record holds one of their tokens."""
from __future__ import annotations

import logging
import re

from sqlalchemy import select

from core.db import db
from tests.accounts.conftest import deliver, emails_to
from tests.messages.conftest import send_decisions
from tests.portal.conftest import csrf_token

TOKEN_LINK = re.compile(r"/(?:account/invitation|account/reset|decisions/respond)/([A-Za-z0-9._-]{16,})")


def _tokens(message) -> set[str]:
    parts = [message.get_body(("plain",)).get_content(), message.get_body(("html",)).get_content()]
    return {token for part in parts for token in TOKEN_LINK.findall(part)}


def _database_dump(app) -> str:
    """Every row of every table, as text."""
    with app.app_context():
        return "\n".join(repr(tuple(row)) for table in db.metadata.sorted_tables
                         for row in db.session.execute(select(table)).all())


def test_no_token_of_a_sent_link_is_left_in_the_database_or_the_logs(mail_app, smtp, admin, factory, app,
                                                                      caplog):
    caplog.set_level(logging.DEBUG)
    assert admin.post("/users", {"email": "neema@example.ac.tz", "role": "staff"}).status_code == 201
    visitor = app.test_client()
    visitor.post("/login/forgot", data={"email": admin.user.email, "csrf_token": csrf_token(visitor, "/login/forgot")})
    _, key = factory.api_key(admin.institution)
    application = factory.application(admin.institution, email="baraka@example.com")
    assert send_decisions(app.test_client(), key, [application.id]).status_code == 200
    deliver(app)

    tokens = set()
    for address in ("neema@example.ac.tz", admin.user.email, "baraka@example.com"):
        [email] = emails_to(smtp, address)
        found = _tokens(email)
        assert len(found) == 1, email
        tokens |= found
    # Each link is opened, so request logs and audit rows see the paths.
    for path in [match.group(0) for email in (received.message for received in smtp.received)
                 for match in TOKEN_LINK.finditer(email.get_body(("plain",)).get_content())]:
        assert app.test_client().get(path).status_code == 200

    dump = _database_dump(app)
    assert "baraka@example.com" in dump  # the dump is real
    # Every log record but the test's own SMTP server's (aiosmtpd's `mail.log` is the recipient's inbox).
    ours = [record for record in caplog.records if not record.name.startswith("mail.log")]
    logged = "\n".join(f"{record.getMessage()} {record.__dict__!r}" for record in ours)
    assert "GET /" in logged  # and the request log was captured
    for token in tokens:
        assert token not in dump
        assert token not in logged
