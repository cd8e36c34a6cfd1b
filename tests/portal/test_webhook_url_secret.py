"""A token in the webhook URL's query string is sent to the receiver but never shown, logged or stored in
clear: the portal, the delivery log and the audit table see `?token=••••`."""
from __future__ import annotations

import re

from sqlalchemy import String, Text, cast, or_, select

from core.db import db
from core.models.audit import AuditLog
from core.models.webhooks import WebhookAttempt, WebhookEndpoint
from tests.portal.test_webhook_pages import _save, _text
from tests.webhooks.conftest import RECEIVER_HOST, delivering, receiver, resolver, run_worker  # noqa: F401 (fixtures)

TOKEN = "tok_9f8e7d6c5b4a39281706"


def stored_anywhere(app, needle: str) -> list[str]:
    """Every audit row, endpoint and attempt whose text contains `needle`."""
    with app.app_context():
        audit_columns = [column for column in AuditLog.__table__.columns if isinstance(column.type, (String, Text))]
        found = [f"audit {row.id}" for row in db.session.scalars(select(AuditLog).where(
            or_(*(cast(column, Text).contains(needle) for column in audit_columns))))]
        found += [f"endpoint {e.id}" for e in db.session.scalars(select(WebhookEndpoint).where(
            or_(WebhookEndpoint.url.contains(needle), WebhookEndpoint.url_query_ciphertext.contains(needle))))]
        found += [f"attempt {a.id}" for a in db.session.scalars(select(WebhookAttempt).where(
            or_(WebhookAttempt.url.contains(needle), WebhookAttempt.error.contains(needle))))]
        db.session.rollback()
        return found


def test_the_query_token_is_delivered_but_shown_masked_and_never_stored_in_clear(admin, delivering, app):
    url = delivering.url(RECEIVER_HOST, path="/hooks") + f"?token={TOKEN}&v=2"
    masked = delivering.url(RECEIVER_HOST, path="/hooks") + "?token=••••&v=••••"
    assert _save(admin, url).status_code == 200

    page = _text(admin.get("/webhooks"))
    assert TOKEN not in page
    assert f'value="{masked.replace("&", "&amp;")}"' in page

    # saving the form as shown (the masked URL) keeps the token
    assert _save(admin, masked, events=("decision.sent",)).status_code == 200
    admin.post("/webhooks/ping", htmx=True)
    run_worker(app)
    [request] = delivering.server.wait_for(1)
    assert request.path == f"/hooks?token={TOKEN}&v=2"

    log = _text(admin.get("/webhooks/deliveries", htmx=True))
    delivery_id = re.search(r'id="delivery-(whd_[A-Za-z0-9]+)"', log).group(1)
    detail = _text(admin.get(f"/webhooks/deliveries/{delivery_id}"))
    assert masked.replace("&", "&amp;") in detail and TOKEN not in detail

    # a refused URL with a token is audited masked too
    refused = _save(admin, f"http://hooks.example.test/x?token={TOKEN}")
    assert refused.status_code == 422
    assert stored_anywhere(app, TOKEN) == []


def test_a_new_token_replaces_the_old_one(admin, delivering, app):
    base = delivering.url(RECEIVER_HOST, path="/hooks")
    _save(admin, f"{base}?token=first-token-value")
    _save(admin, f"{base}?token=second-token-value")
    admin.post("/webhooks/ping", htmx=True)
    run_worker(app)
    assert delivering.server.wait_for(1)[0].path == "/hooks?token=second-token-value"
    _save(admin, base)  # and dropping the query string drops the token
    admin.post("/webhooks/ping", htmx=True)
    run_worker(app)
    assert delivering.server.wait_for(2)[1].path == "/hooks"
    with app.app_context():
        assert db.session.scalars(select(WebhookEndpoint.url_query_ciphertext)).all() == [None]
