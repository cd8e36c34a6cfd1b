"""Webhook settings, the one-time secret, rotate, ping, the delivery log and its actions."""
import re


from tests.webhooks.conftest import RECEIVER_HOST, delivering, receiver, resolver, run_worker  # noqa: F401 (fixtures)


def _text(response) -> str:
    return response.get_data(as_text=True)



def _save(admin, url, events=("application.submitted", "decision.sent"), include_name=False):
    data = {"url": url, "events": list(events)}
    if include_name:
        data["include_name"] = "true"
    return admin.post("/webhooks", data, htmx=True)


def test_secret_is_shown_once_and_rotation_replaces_it(admin, delivering):
    url = delivering.url(RECEIVER_HOST)
    saved = _save(admin, url)
    assert saved.status_code == 200
    secret = re.search(r'<code id="signing-secret">(whsec_[^<]+)</code>', _text(saved)).group(1)

    page = _text(admin.get("/webhooks"))
    assert secret not in page and url in page
    assert 'value="decision.sent" checked' in page and 'value="payment.completed" checked' not in page

    again = _save(admin, url, events=("payment.completed",), include_name=True)
    assert "signing-secret" not in _text(again), "saving again keeps the secret and does not show it"
    rotated = admin.post("/webhooks/rotate", htmx=True)
    new_secret = re.search(r'<code id="signing-secret">(whsec_[^<]+)</code>', _text(rotated)).group(1)
    assert new_secret != secret


def test_unsafe_urls_are_refused_with_the_reason(admin, resolver):  # noqa: F811
    for url, reason in (("http://hooks.example.test/x", "https"), ("https://127.0.0.1/x", "")):
        response = _save(admin, url)
        assert response.status_code == 422
        assert "This endpoint URL is not allowed" in _text(response) and reason in _text(response)
        assert "url is not allowed" not in _text(response), "the label, never the field name"
    assert "No deliveries" not in _text(admin.get("/webhooks")), "no endpoint was created"


def test_ping_appears_in_the_log_and_is_delivered(admin, delivering, app):
    _save(admin, delivering.url(RECEIVER_HOST))
    pinged = admin.post("/webhooks/ping", htmx=True)
    html = _text(pinged)
    assert pinged.status_code == 200 and "Test ping queued" in html
    assert "webhook.test" in html and "pending" in html
    assert 'hx-trigger="every 2s"' in html, "the log refreshes itself while a delivery is pending"

    run_worker(app)
    assert delivering.server.wait_for(1)[0].headers["X-Karibu-Event-Type"] == "webhook.test"
    log = admin.get("/webhooks/deliveries", htmx=True)
    assert "delivered" in _text(log) and 'hx-trigger="every 2s"' not in _text(log)

    delivery_id = re.search(r'id="delivery-(whd_[A-Za-z0-9]+)"', _text(log)).group(1)
    detail = _text(admin.get(f"/webhooks/deliveries/{delivery_id}"))
    assert "Attempt 1" in detail and "acknowledged" in detail and "200" in detail

    filtered = admin.get("/webhooks/deliveries?status=dead", htmx=True)
    assert "No deliveries with status" in _text(filtered)
    assert admin.get("/webhooks/deliveries?status=lost").status_code == 400

    again = admin.post(f"/webhooks/deliveries/{delivery_id}/redeliver", htmx=True)
    assert again.status_code == 200 and "queued again" in _text(again)
    recovered = admin.post("/webhooks/recover", {"since": "2020-01-01T00:00"}, htmx=True)
    assert recovered.status_code == 200 and "queued again" in _text(recovered)
    assert admin.post("/webhooks/recover", {"since": "soon"}, htmx=True).status_code == 400


def test_webhook_pages_are_for_admins_and_their_institution(staff, admin, portal_as, delivering, app):
    assert staff.get("/webhooks").status_code == 403
    assert staff.post("/webhooks/ping", htmx=True).status_code == 403
    _save(admin, delivering.url(RECEIVER_HOST))
    admin.post("/webhooks/ping", htmx=True)
    delivery_id = re.search(r'id="delivery-(whd_[A-Za-z0-9]+)"', _text(admin.get("/webhooks"))).group(1)

    other = portal_as("admin")
    assert other.get(f"/webhooks/deliveries/{delivery_id}").status_code == 404
    assert other.post(f"/webhooks/deliveries/{delivery_id}/redeliver", htmx=True).status_code == 404
    assert delivery_id not in _text(other.get("/webhooks"))


def test_the_page_offers_the_events_feed_as_the_alternative(admin):
    page = _text(admin.get("/webhooks"))
    assert 'id="events-feed-alternative"' in page
    assert "GET /api/v1/events" in page and 'href="/api/v1/docs#/Events/listEvents"' in page


def test_the_portal_header_links_to_the_api_reference(admin, client):
    for page in (_text(admin.get("/dashboard")), client.get("/login").get_data(as_text=True)):
        assert '<a href="/api/v1/docs">API reference</a>' in page
