"""The webhook page for a season of use: attempt detail as sent and received, failures in words, a status
column that is always a status, the page updating itself after the first save, disable and remove, example
events of every subscribed type, a log refresh that never touches a form, and form errors in labels."""
import hashlib
import hmac
import json
import re

import pytest
from sqlalchemy import func, select

from core.db import db
from core.models import AuditLog, Event
from core.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from tests.conftest import auth_header
from tests.webhooks.conftest import (  # noqa: F401 (fixtures)
    RECEIVER_HOST, delivering, free_port, receiver, resolver, run_worker,
)
from tests.webhooks.webhook_receiver import Receiver

DELIVERY_ID = re.compile(r'id="delivery-(whd_[A-Za-z0-9]+)"')


def _text(response) -> str:
    return response.get_data(as_text=True)



def _save(admin, url, events=("application.submitted", "decision.sent")):
    return admin.post("/webhooks", {"url": url, "events": list(events)}, htmx=True)


def _secret(response) -> str:
    return re.search(r'<code id="signing-secret">(whsec_[^<]+)</code>', _text(response)).group(1)


def _ping_and_deliver(admin, app) -> str:
    """Queue a ping, run the worker, return the delivery id."""
    admin.post("/webhooks/ping", htmx=True)
    run_worker(app)
    return DELIVERY_ID.search(_text(admin.get("/webhooks/deliveries/table", htmx=True))).group(1)


def _audit(app, institution_id) -> list[tuple[str, str, int]]:
    with app.app_context():
        return [tuple(row) for row in db.session.execute(
            select(AuditLog.action, AuditLog.target, AuditLog.status)
            .where(AuditLog.institution_id == institution_id, AuditLog.action.like("webhook.%"))
            .order_by(AuditLog.id))]


def test_attempt_detail_shows_the_request_as_sent_and_the_response_as_received(admin, delivering, app):
    secret = _secret(_save(admin, delivering.url(RECEIVER_HOST)))
    delivering.behaviour.body = b'{"received": true}'
    delivering.behaviour.headers = {"X-Receiver-Trace": "trace-42"}
    delivery_id = _ping_and_deliver(admin, app)
    received = delivering.server.wait_for(1)[0]

    detail = _text(admin.get(f"/webhooks/deliveries/{delivery_id}"))
    signature = received.headers["X-Karibu-Signature"]
    assert f"X-Karibu-Signature: {signature}" in detail, "the signature as sent"
    assert f"X-Karibu-Timestamp: {received.headers['X-Karibu-Timestamp']}" in detail
    assert "User-Agent: Karibu-Webhooks/1" in detail
    assert secret not in detail, "the signing secret is never shown"
    body = re.search(r'<pre id="request-body">([^<]+)</pre>', detail).group(1)
    sent = received.body.decode("utf-8")
    assert json.loads(body.replace("&#34;", '"').replace("&quot;", '"')) == json.loads(sent)
    expected = hmac.new(secret.encode(), received.headers["X-Karibu-Timestamp"].encode() + b"." + received.body,
                        hashlib.sha256).hexdigest()
    assert signature == f"v1={expected}", "the body shown is the one the signature covers"
    assert "X-Receiver-Trace: trace-42" in detail, "the response headers as received"
    assert "{&#34;received&#34;: true}" in detail or '{"received": true}' in detail, "the response body"
    assert "Response status" in detail and '<span class="mono">200</span>' in detail


def _failing_delivery(admin, app, url) -> tuple[str, str]:
    """Save `url`, ping, run one attempt; the detail page and the log table."""
    admin.post("/webhooks", {"url": url, "events": ["decision.sent"]}, htmx=True)
    delivery_id = _ping_and_deliver(admin, app)
    return _text(admin.get(f"/webhooks/deliveries/{delivery_id}")), _text(admin.get("/webhooks/deliveries/table",
                                                                                   htmx=True))


def _last_response_cell(table: str) -> str:
    return re.search(r"<td[^>]*data-last-response>(.*?)</td>", table, re.S).group(1)


def test_a_certificate_for_another_name_is_explained_and_the_raw_error_kept(admin, app, resolver, tmp_path,  # noqa: F811
                                                                            redis_client, monkeypatch):
    wrong_name = Receiver(tmp_path, hostnames=("elsewhere.example",)).start()
    try:
        monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
        monkeypatch.setitem(app.config, "WEBHOOK_CA_BUNDLE", wrong_name.ca_path)
        redis_client.flushdb()
        detail, table = _failing_delivery(admin, app, wrong_name.url(RECEIVER_HOST))
    finally:
        wrong_name.stop()
    assert "The receiver&#39;s TLS certificate is not valid for this name" in detail
    raw = re.search(r"<details>(.*?)</details>", detail, re.S).group(1)
    assert "Technical detail for engineers" in raw and "<code>tls</code>" in raw and "certificate" in raw.lower()
    cell = _last_response_cell(table)
    assert cell.startswith("—") and "TLS" in cell, "a dash with the error class, never `tls` as a code"


@pytest.mark.parametrize("behaviour, sentence, cell_status", [
    ({"status": 503}, "The receiver failed with a server error (HTTP 503 Service Unavailable)", "503"),
    ({"status": 401}, "rejected the request as not authorised (HTTP 401 Unauthorized)", "401"),
    ({"status": 302, "location": "https://elsewhere.example/"}, "redirects are not followed", "302"),
])
def test_http_failures_are_explained_with_their_status(admin, delivering, app, behaviour, sentence, cell_status):
    for name, value in behaviour.items():
        setattr(delivering.behaviour, name, value)
    detail, table = _failing_delivery(admin, app, delivering.url(RECEIVER_HOST))
    assert sentence in detail
    assert f'<span class="mono">{cell_status}</span>' in _last_response_cell(table)


def test_a_receiver_that_does_not_answer_in_time_is_explained(admin, delivering, app):
    delivering.behaviour.delay_seconds = 11
    detail, table = _failing_delivery(admin, app, delivering.url(RECEIVER_HOST))
    assert "The receiver did not answer within 10 seconds" in detail
    assert _last_response_cell(table).startswith("—") and "timed out" in _last_response_cell(table)


def test_refused_connections_dns_failures_and_blocked_addresses_are_explained(admin, app, resolver,  # noqa: F811
                                                                              redis_client, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", True)
    redis_client.flushdb()
    detail, table = _failing_delivery(admin, app, f"https://{RECEIVER_HOST}:{free_port()}/hooks")  # nobody listens
    # A receiver nobody can connect to is down for every delivery: the delivery waits for it, its attempts kept.
    assert "Karibu could not connect to the receiver" in detail and "does not use up this delivery" in detail
    assert "connection" in _last_response_cell(table)

    resolver.answers["gone.example.test"] = [["93.184.216.34"], []]
    detail, table = _failing_delivery(admin, app, "https://gone.example.test/hooks")
    assert "could not be found in DNS" in detail and "Nothing was sent" in detail
    assert "DNS" in _last_response_cell(table)

    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", False)
    resolver.answers["rebinds.example.test"] = [["93.184.216.34"], ["10.0.0.7"]]
    detail, table = _failing_delivery(admin, app, "https://rebinds.example.test/hooks")
    assert "webhooks only go to public addresses" in detail and "10.0.0.7" in detail
    assert "blocked address" in _last_response_cell(table)


def test_the_first_save_brings_the_deliveries_panel_without_a_reload(admin, delivering):
    assert 'id="deliveries"' in _text(admin.get("/webhooks"))
    assert "Send test ping" not in _text(admin.get("/webhooks"))
    first = _text(_save(admin, delivering.url(RECEIVER_HOST)))
    swapped = re.search(r'<section id="deliveries"[^>]*hx-swap-oob="true"[^>]*>(.*?)</section>', first, re.S)
    assert swapped, "the deliveries section comes out of band with the save"
    assert "Send test ping" in swapped.group(1) and 'id="log-table"' in swapped.group(1)
    again = _text(_save(admin, delivering.url(RECEIVER_HOST)))
    assert 'id="deliveries"' not in again, "later saves leave the log (and what is typed there) alone"


def test_disable_stops_deliveries_and_is_audited(admin, delivering, app):
    _save(admin, delivering.url(RECEIVER_HOST))
    admin.post("/webhooks/ping", htmx=True)  # pending, not sent yet
    disabled = admin.post("/webhooks/disable", htmx=True)
    html = _text(disabled)
    assert disabled.status_code == 200 and "An admin disabled it" in html and "Re-enable the endpoint" in html
    assert re.search(r'<div id="log-table"[^>]*hx-swap-oob="true"', html), "the log table is updated too"
    assert "endpoint disabled" in html
    run_worker(app)
    assert delivering.requests == [], "nothing is sent while disabled"
    refused = admin.post("/webhooks/ping", htmx=True)
    assert refused.status_code == 409 and "re-enable it first" in _text(refused)
    assert re.search(r'<div id="log-table"', _text(refused)), "the table stays in place"
    assert admin.post("/webhooks/disable", htmx=True).status_code == 409
    enabled = admin.post("/webhooks/enable", htmx=True)
    assert "Disable the endpoint" in _text(enabled)
    endpoint_id = re.search(r"whe_[A-Za-z0-9]+", str(_audit(app, admin.institution.id))).group(0)
    assert [row for row in _audit(app, admin.institution.id) if row[0] in ("webhook.disable", "webhook.enable")] == [
        ("webhook.disable", endpoint_id, 200), ("webhook.enable", endpoint_id, 200)]


def test_remove_deletes_the_endpoint_and_its_log_but_not_the_events(admin, delivering, app, factory, client):
    _save(admin, delivering.url(RECEIVER_HOST))
    delivered = _ping_and_deliver(admin, app)
    admin.post("/webhooks/ping", htmx=True)  # a second one, still pending
    page = _text(admin.get("/webhooks"))
    assert "Remove the endpoint?" in page, "removal asks for confirmation"

    removed = admin.post("/webhooks/remove", htmx=True)
    html = _text(removed)
    assert removed.status_code == 200 and "The endpoint and its delivery log were removed" in html
    assert re.search(r'<section id="deliveries" hx-swap-oob="true">\s*</section>', html), "the log goes away"
    assert "Save and create the signing secret" in html
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(WebhookEndpoint)
                                 .where(WebhookEndpoint.institution_id == admin.institution.id)) == 0
        assert db.session.scalar(select(func.count()).select_from(WebhookDelivery)
                                 .where(WebhookDelivery.institution_id == admin.institution.id)) == 0
        assert db.session.scalar(select(func.count()).select_from(WebhookAttempt)
                                 .where(WebhookAttempt.delivery_id == delivered)) == 0
        assert db.session.scalar(select(func.count()).select_from(Event)
                                 .where(Event.institution_id == admin.institution.id)) == 2, "events stay"
    run_worker(app)
    assert len(delivering.requests) == 1, "the pending delivery was never sent"
    assert admin.get(f"/webhooks/deliveries/{delivered}").status_code == 404
    assert ("webhook.remove", 200) in [(action, status) for action, _, status in _audit(app, admin.institution.id)]
    assert admin.post("/webhooks/remove", htmx=True).status_code == 404


def test_an_example_of_each_subscribed_type_is_sent_marked_as_a_test(admin, delivering, app, factory, client):
    _save(admin, delivering.url(RECEIVER_HOST), events=("application.submitted", "decision.sent",
                                                        "payment.completed"))
    page = _text(admin.get("/webhooks"))
    options = re.findall(r'<option value="([a-z._]+)">', re.search(r'id="test-event-type".*?</select>', page,
                                                                   re.S).group(0))
    assert options == ["webhook.test", "application.submitted", "decision.sent", "payment.completed"]

    for event_type in ("decision.sent", "application.submitted", "payment.completed"):
        queued = admin.post("/webhooks/test-event", {"event_type": event_type}, htmx=True)
        assert queued.status_code == 200 and f"Example {event_type} event queued" in _text(queued)
    run_worker(app)
    bodies = {json.loads(request.body)["type"]: json.loads(request.body) for request in delivering.server.wait_for(3)}
    decision = bodies["decision.sent"]
    assert decision["test"] is True and decision["institution_id"] == admin.institution.id
    assert set(decision) == {"event_id", "type", "occurred_at", "institution_id", "livemode", "data", "test"}
    assert set(decision["data"]) == {"decision_id", "submission_id", "admission_id", "institution_id",
                                     "decision_status", "sent_at"}
    assert bodies["application.submitted"]["data"]["applicant"] is None, "include-name is off"
    assert bodies["payment.completed"]["data"]["amount"] == 50000.0

    refused = admin.post("/webhooks/test-event", {"event_type": "decision.responded"}, htmx=True)
    assert refused.status_code == 400, "only subscribed types"
    assert re.search(r'<div id="log-table"', _text(refused)), "the table stays in place"
    assert re.search(r'id="log-message" hx-swap-oob="innerHTML"><div class="alert alert-bad"><p>Choose an event type '
                     r'the endpoint is subscribed to', _text(refused))

    changed = _text(_save(admin, delivering.url(RECEIVER_HOST), events=("decision.responded",)))
    options = re.search(r'<select id="test-event-type"[^>]*hx-swap-oob="true"[^>]*>(.*?)</select>', changed, re.S)
    assert re.findall(r'value="([a-z._]+)"', options.group(1)) == ["webhook.test", "decision.responded"], \
        "a save brings the example list up to date"

    _, raw_key = factory.api_key(admin.institution)
    feed = client.get("/api/v1/events", headers=auth_header(raw_key)).get_json()
    assert [event["type"] for event in feed["data"]] == [], "examples are not events of the feed"


def test_the_refresh_swaps_only_the_table_and_announces_a_summary(admin, delivering, app):
    _save(admin, delivering.url(RECEIVER_HOST))
    admin.post("/webhooks/ping", htmx=True)
    page = _text(admin.get("/webhooks"))
    table = re.search(r'<div id="log-table"[^>]*>', page).group(0)
    assert 'hx-trigger="every 2s"' in table and "data-pause-while-editing" in table
    assert 'aria-live' not in table, "the table is not a live region"
    assert re.search(r'<p id="log-announcer"[^>]*role="status"', page)

    full_log = _text(admin.get("/webhooks/deliveries"))
    assert 'id="recover-since"' in full_log and 'id="log-table"' in full_log and "webhook.test" in full_log

    refreshed = _text(admin.get("/webhooks/deliveries/table", htmx=True))
    assert 'id="recover-since"' not in refreshed and "<form method=\"get\"" not in refreshed, "never a form field"
    assert 'data-summary="1 delivery shown: 1 pending."' in refreshed

    for _ in range(30):
        admin.post("/webhooks/ping", htmx=True)
    assert len(DELIVERY_ID.findall(_text(admin.get("/webhooks/deliveries/table", htmx=True)))) == 25
    assert len(DELIVERY_ID.findall(_text(admin.get("/webhooks/deliveries/table?rows=31", htmx=True)))) == 31, \
        "the refresh keeps the older rows the page loaded"

    recovered = _text(admin.post("/webhooks/recover", {"since": "2020-01-01T00:00"}, htmx=True))
    assert 'id="recover-since"' not in recovered, "an action answers with the table, not the forms"
    assert re.search(r'<div id="log-message" hx-swap-oob="innerHTML">.*queued again', recovered, re.S)
    run_worker(app)
    done = _text(admin.get("/webhooks/deliveries/table?rows=31", htmx=True))
    assert 'hx-trigger="every 2s"' not in done and "31 deliveries shown: 31 delivered." in done


def test_form_errors_name_the_labels_and_mark_the_field(admin, resolver):  # noqa: F811
    response = _save(admin, "http://hooks.example.test/x")
    html = _text(response)
    assert response.status_code == 422
    assert "This endpoint URL is not allowed: the URL must use https." in html
    assert re.search(r'id="webhook-url"[^>]*aria-invalid="true"', html, re.S)

    no_events = admin.post("/webhooks", {"url": "https://public.example.test/hooks"}, htmx=True)
    assert no_events.status_code == 422 and "Choose at least one event type." in _text(no_events)
    assert "events must" not in _text(no_events)
    assert 'aria-invalid="true" aria-describedby="webhook-events-error"' in _text(no_events)

    assert "since must" not in _text(admin.post("/webhooks/recover", {"since": "soon"}, htmx=True))


def test_the_try_page_puts_focus_on_the_result_heading_and_announces_it(client):
    page = client.get("/try").get_data(as_text=True)
    assert re.search(r'<p id="verification-status"[^>]*role="status"', page)
    assert 'id="verification-result" aria-live' not in page, "the whole result is not read out"

    demo = client.get("/try?issuer=UNEB&demo=0", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert 'data-focus-after-swap="#verify-button"' in demo and "filled in. Press Verify" in demo

    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    fields = re.findall(r'name="([a-z_]+)" value="([^"]*)"', demo)
    selects = re.findall(r'<select id="field-([a-z_]+)".*?<option value="([^"]+)" selected>', demo, re.S)
    data = {"csrf_token": token, "issuer": "UNEB", **dict(fields), **dict(selects)}
    result = client.post("/try", data=data, headers={"HX-Request": "true", "X-CSRFToken": token})
    html = result.get_data(as_text=True)
    heading = re.search(r'<h2 id="result-heading"([^>]*)>([^<]+)</h2>', html)
    assert heading and 'tabindex="-1"' in heading.group(1) and "data-focus-after-swap" in heading.group(1)
    assert 'data-announce="verification-status"' in heading.group(1)
    assert heading.group(2).startswith("Result: Authentic")
