"""The audit log, the messages and the webhook delivery log page by keyset: a "Load older …" row at the end of
each page asks for the rows older than the last one shown (`?before=<id>`), in place, until none is left."""
from __future__ import annotations

import html as html_module
import re
from datetime import datetime, timedelta

import pytest

from core.db import db
from core.models import AuditLog
from core.models.messages import Message
from core.models.webhooks import WebhookDelivery, WebhookEndpoint
from tests.webhooks.conftest import RECEIVER_HOST, delivering, receiver, resolver  # noqa: F401 (fixtures)

START = datetime(2025, 3, 1, 8, 0)
LOAD_OLDER = re.compile(r'<tr class="load-more">\s*<td colspan="(\d+)">\s*<a class="btn btn-secondary btn-small" '
                        r'href="([^"]+)"\s+hx-get="([^"]+)" hx-target="closest tr" hx-swap="outerHTML">([^<]+)</a>')


def _text(response) -> str:
    return response.get_data(as_text=True)


def _read_every_page(admin, first_url: str, row_key: re.Pattern, label: str, columns: int, query: str = ""):
    """Follow the "Load older" rows from the first page to the last; every page's row keys, in order."""
    response = admin.get(first_url)
    assert response.status_code == 200
    pages = []
    for _ in range(10):
        body = _text(response)
        pages.append(row_key.findall(body))
        more = LOAD_OLDER.search(body)
        if more is None:
            return pages
        colspan, href, hx_get, text = more.groups()
        assert (int(colspan), text, href) == (columns, label, hx_get), "the same row, link and htmx request"
        url = html_module.unescape(href)
        assert re.search(r"[?&]before=[^&]+", url) and query in url, "the filters shown are kept"
        response = admin.get(url, htmx=True)
        assert response.status_code == 200 and "<!doctype html>" not in _text(response), "rows only, in place"
    raise AssertionError(f"still a load-more row after 10 pages: {pages}")


def _assert_newest_first_each_once(shown: list[str], written: dict[str, datetime]) -> None:
    """Rows that share a time are ordered by id (in the database's collation), so only the times are compared."""
    assert len(shown) == len(set(shown)) and set(shown) == set(written), "every row once, across the pages"
    times = [written[key] for key in shown]
    assert times == sorted(times, reverse=True), "newest first"


def test_the_audit_log_pages_by_id_and_keeps_its_filters(admin, app):
    with app.app_context():
        for minute in range(120):
            db.session.add(AuditLog(institution_id=admin.institution.id, actor="clerk", source="api",
                                    action=f"probe.{minute:03d}", status=200, method="GET", path="/api/v1/x",
                                    created_at=START + timedelta(minutes=minute)))
        db.session.commit()
    pages = _read_every_page(admin, "/audit?source=api", re.compile(r'<td class="audit-action"[^>]*>probe\.(\d+)</td>'),
                             "Load older entries", 6, query="source=api")
    assert [len(page) for page in pages] == [50, 50, 20]
    assert [int(key) for page in pages for key in page] == list(reversed(range(120))), "newest first, none twice"
    assert admin.get("/audit?before=soon").status_code == 400


def test_the_messages_page_by_date_and_id(admin, app, factory):
    application = factory.application(admin.institution)
    with app.app_context():
        for minute in range(55):
            db.session.add(Message(institution_id=admin.institution.id, application_id=application.id,
                                   channel="email", recipient=f"r{minute}@example.org", template="decision",
                                   language="en", subject=f"Decision {minute}", body_text="…", status="sent",
                                   created_at=START + timedelta(minutes=minute // 2)))  # ties on the time
        db.session.commit()
    pages = _read_every_page(admin, "/messages?channel=email", re.compile(r'<tr id="message-(msg_\w+)">'),
                             "Load older messages", 7, query="channel=email")
    assert [len(page) for page in pages] == [50, 5]
    with app.app_context():
        written = {message.id: message.created_at for message in db.session.query(Message)}
    _assert_newest_first_each_once([key for page in pages for key in page], written)


def test_the_delivery_log_pages_by_date_and_id(admin, app, delivering):  # noqa: F811
    saved = admin.post("/webhooks", {"url": delivering.url(RECEIVER_HOST), "events": ["decision.sent"]},
                       htmx=True)
    assert saved.status_code == 200
    assert admin.post("/webhooks/ping", htmx=True).status_code == 200
    with app.app_context():
        endpoint = db.session.query(WebhookEndpoint).one()
        ping = db.session.query(WebhookDelivery).one()
        for minute in range(54):
            db.session.add(WebhookDelivery(institution_id=admin.institution.id, endpoint_id=endpoint.id,
                                           event_id=ping.event_id, event_type="webhook.test", status="dead",
                                           attempts=1, created_at=START + timedelta(minutes=minute // 3)))
        db.session.commit()
    pages = _read_every_page(admin, "/webhooks/deliveries?status=dead",
                             re.compile(r'<tr id="delivery-(whd_\w+)">'), "Load older deliveries", 8,
                             query="status=dead")
    assert [len(page) for page in pages] == [25, 25, 4]
    with app.app_context():
        written = {delivery.id: delivery.created_at
                   for delivery in db.session.query(WebhookDelivery).filter_by(status="dead")}
    _assert_newest_first_each_once([key for page in pages for key in page], written)


@pytest.mark.parametrize("url", ["/audit", "/messages", "/webhooks/deliveries"])
def test_a_short_list_has_no_load_older_row(admin, url):
    response = admin.get(url)
    assert response.status_code == 200 and 'class="load-more"' not in _text(response)
