"""Staff accounts: a real SMTP sink, signed-in portal clients, and reading the emailed links."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

from sqlalchemy import select

from core.db import db
from core.models import AuditLog
from tests.messages.conftest import clock, drain_now, mail_app, smtp  # noqa: F401 (fixtures)
from tests.portal.conftest import _fresh_login_counters, admin, portal_as, staff  # noqa: F401 (fixtures)

ACCOUNT_LINK = re.compile(r"https?://[^\s\"<>]+/account/(?:invitation|reset)/[A-Za-z0-9]+")


def deliver(app) -> None:
    """Send every queued message now (as the worker does) to the SMTP sink."""
    drain_now(app)


def emails_to(smtp, address: str) -> list:  # noqa: F811
    return [received.message for received in smtp.received if address in received.recipients]


def link_path(message) -> str:
    """The path of the one account link in an email's plain-text part (the HTML part has the same)."""
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    links = set(ACCOUNT_LINK.findall(text))
    assert len(links) == 1, text
    assert links == set(ACCOUNT_LINK.findall(html))
    return urlsplit(links.pop()).path


def audit_rows(app) -> list[AuditLog]:
    with app.app_context():
        rows = list(db.session.scalars(select(AuditLog).order_by(AuditLog.id)))
        for row in rows:
            db.session.expunge(row)
        return rows


def form_token(client, path: str) -> str:
    page = client.get(path).get_data(as_text=True)
    match = re.search(r'<meta name="csrf-token" content="([^"]+)"', page)
    assert match, f"no CSRF token on {path}"
    return match.group(1)
