"""WEBHOOK_DEV_RECEIVER_URL (issue #39): it admits an http/loopback webhook target only while Karibu's own
development receiver answers at that origin, and only on the receiver's path `/hooks/<institution id>`. Aimed at
another loopback service (a Redis-like TCP server, the app itself) it admits nothing, so no admin can aim webhooks
there."""
from __future__ import annotations

import socketserver
import threading

import pytest

from core.webhooks import urls
from devtools.webhook_receiver import create_server
from tests.live_server import base_url, serving
from tests.portal.conftest import _fresh_login_counters, admin, portal_as  # noqa: F401 (fixtures)


def _text(response) -> str:
    return response.get_data(as_text=True)


@pytest.fixture(autouse=True)
def _fresh_checks(monkeypatch):
    monkeypatch.setattr(urls, "_dev_receiver_checks", {})


@pytest.fixture
def receiver():
    server, _ = create_server("127.0.0.1", 0, lambda institution_id: None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


class _RedisLike(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.recv(1024)
        self.request.sendall(b"-ERR unknown command 'GET'\r\n")


@pytest.fixture
def redis_like():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _RedisLike)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _save(admin, url):
    return admin.post("/webhooks", {"url": url, "events": ["decision.sent"]}, htmx=True)


@pytest.mark.parametrize("service", ["redis_like", "the_app"])
def test_a_loopback_service_that_is_not_the_receiver_admits_nothing(app, admin, monkeypatch, request, service):
    if service == "the_app":
        context = serving(app)
        base = base_url(context.__enter__())
        request.addfinalizer(lambda: context.__exit__(None, None, None))
    else:
        base = request.getfixturevalue("redis_like")
    monkeypatch.setitem(app.config, "WEBHOOK_DEV_RECEIVER_URL", base)
    page = _text(admin.get("/webhooks"))
    assert "Use the development receiver" not in page
    assert admin.post("/webhooks/dev-receiver", htmx=True).status_code == 404
    for path in (f"/hooks/{admin.institution.id}", "/", "/api/v1/applications"):
        refused = _save(admin, base + path)
        assert refused.status_code == 422, (base + path, _text(refused))
        assert "the URL must use https" in _text(refused)


def test_the_receiver_is_admitted_on_its_hook_path_only(app, admin, receiver, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_DEV_RECEIVER_URL", receiver)
    assert "Use the development receiver" in _text(admin.get("/webhooks"))
    for path in ("/", "/deliveries", f"/hooks/{admin.institution.id}/more", f"/hooks/{admin.institution.id}?x=1",
                 "/karibu-development-webhook-receiver"):
        refused = _save(admin, receiver + path)
        assert refused.status_code == 422, path
    accepted = _save(admin, f"{receiver}/hooks/{admin.institution.id}")
    assert accepted.status_code == 200 and "development receiver</span>" in _text(accepted)


def test_choosing_the_receiver_says_so_once_and_the_url_help_names_its_exception(app, admin, receiver, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_DEV_RECEIVER_URL", receiver)
    chosen = _text(admin.post("/webhooks/dev-receiver", htmx=True))
    assert chosen.count("go to the development receiver") == 1
    assert "Deliveries now go to the development receiver. Send a test ping" in chosen
    later = _text(admin.get("/webhooks"))
    assert later.count("go to the development receiver") == 1 and 'id="dev-receiver-in-use"' in later
    hint = later[later.index('id="webhook-url-hint"'):]
    hint = hint[:hint.index("</p>")]
    assert "loopback, link-local and metadata addresses are refused" in hint
    assert (f"The one exception, in this demo only: the development receiver's <code>http</code> loopback "
            f"address (<code>{receiver}/hooks/…</code>) is accepted, while Karibu's own receiver answers "
            "there.") in hint


def test_without_the_receiver_the_url_help_names_no_exception(app, admin):
    assert "The one exception" not in _text(admin.get("/webhooks"))
