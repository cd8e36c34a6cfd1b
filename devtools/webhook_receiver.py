"""Development webhook receiver: keeps the demo's deliveries to `POST /hooks/<institution id>` in memory with
their signatures checked, shown at `GET /` and `GET /deliveries`. Never for production.
"""
from __future__ import annotations

import hmac
import json
import threading
from collections import deque
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Callable

from markupsafe import escape
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from core.webhooks.signing import sign, sign_standard
from core.webhooks.urls import DEV_RECEIVER_IDENTITY, DEV_RECEIVER_IDENTITY_PATH

KEEP = 200
MAX_BODY_BYTES = 1024 * 1024
SecretLookup = Callable[[str], "str | None"]


@dataclass(frozen=True)
class ReceivedDelivery:
    received_at: str  # ISO 8601, UTC
    institution_id: str
    event_id: str
    event_type: str
    signature_verified: bool
    reason: str  # why the signature is not verified ("" when it is)
    body: str


def verify(secret: str | None, headers, body: bytes) -> tuple[bool, str]:
    """(verified, reason): both signatures (X-Karibu-Signature and Standard Webhooks' webhook-signature) must
    match `secret`."""
    if not secret:
        return False, "this institution has no webhook endpoint (no signing secret to check with)"
    try:
        timestamp = int(headers.get("X-Karibu-Timestamp", ""))
    except ValueError:
        return False, "X-Karibu-Timestamp is missing"
    if not hmac.compare_digest(sign(secret, timestamp, body), headers.get("X-Karibu-Signature", "")):
        return False, "X-Karibu-Signature does not match the endpoint's secret"
    message_id = headers.get("webhook-id", "")
    try:
        standard = sign_standard(secret, message_id, int(headers.get("webhook-timestamp", "")), body)
    except ValueError:
        return False, "webhook-timestamp is missing"
    presented = headers.get("webhook-signature", "").split()
    if not any(hmac.compare_digest(standard, value) for value in presented):
        return False, "webhook-signature does not match the endpoint's secret"
    return True, ""


class WebhookReceiver:
    """The WSGI application; `received()` lists what arrived, newest first."""

    def __init__(self, secret_for: SecretLookup):
        self.secret_for = secret_for
        self._lock = threading.Lock()
        self._received: deque[ReceivedDelivery] = deque(maxlen=KEEP)
        self.url_map = Map([
            Rule("/", endpoint="page", methods=["GET"]),
            Rule("/deliveries", endpoint="list", methods=["GET"]),
            Rule("/favicon.ico", endpoint="no_icon", methods=["GET"]),
            Rule("/hooks/<institution_id>", endpoint="hook", methods=["POST"]),
            Rule(DEV_RECEIVER_IDENTITY_PATH, endpoint="identity", methods=["GET"]),
        ])

    def received(self) -> list[ReceivedDelivery]:
        with self._lock:
            return list(reversed(self._received))

    def __call__(self, environ, start_response):
        request = Request(environ)
        request.max_content_length = MAX_BODY_BYTES
        adapter = self.url_map.bind_to_environ(environ)
        try:
            endpoint, values = adapter.match()
            response = getattr(self, f"on_{endpoint}")(request, **values)
        except HTTPException as error:
            response = error.get_response(environ)
        return response(environ, start_response)

    def on_hook(self, request: Request, institution_id: str) -> Response:
        body = request.get_data(cache=False)
        verified, reason = verify(self.secret_for(institution_id), request.headers, body)
        delivery = ReceivedDelivery(
            received_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            institution_id=institution_id, event_id=request.headers.get("X-Karibu-Event-Id", ""),
            event_type=request.headers.get("X-Karibu-Event-Type", ""), signature_verified=verified,
            reason=reason, body=body.decode("utf-8", "replace"))
        with self._lock:
            self._received.append(delivery)
        return Response(json.dumps({"received": True, "signature_verified": verified}),
                        content_type="application/json")

    def on_identity(self, request: Request) -> Response:
        """Who answers here: the app admits WEBHOOK_DEV_RECEIVER_URL only when this answer comes back."""
        return Response(json.dumps(DEV_RECEIVER_IDENTITY), content_type="application/json")

    def on_no_icon(self, request: Request) -> Response:
        """No icon (and no 404 in the browser's console)."""
        return Response(status=204)

    def on_list(self, request: Request) -> Response:
        return Response(json.dumps({"deliveries": [asdict(item) for item in self.received()]}),
                        content_type="application/json")

    def on_page(self, request: Request) -> Response:
        rows = "".join(_row(item) for item in self.received()) or (
            '<tr><td colspan="5">Nothing received yet. In the portal, open Webhooks, choose "Use the development '
            'receiver", then "Send test ping".</td></tr>')
        return Response(PAGE.format(rows=rows, keep=KEEP), content_type="text/html; charset=utf-8")


def _row(item: ReceivedDelivery) -> str:
    verdict = "yes" if item.signature_verified else f"no: {escape(item.reason)}"
    try:
        body = json.dumps(json.loads(item.body), indent=2, ensure_ascii=False)
    except ValueError:
        body = item.body
    return (f'<tr><td><time datetime="{item.received_at}">{item.received_at.replace("T", " ")}</time></td>'
            f"<td><code>{escape(item.event_type)}</code></td><td><code>{escape(item.event_id)}</code></td>"
            f'<td class="{"ok" if item.signature_verified else "bad"}">{verdict}</td>'
            f"<td><details><summary>Body</summary><pre>{escape(body)}</pre></details></td></tr>")


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="5">
<title>Karibu development webhook receiver</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; margin: 1.5rem; color: #1a1a1a; }}
table {{ border-collapse: collapse; width: 100%; }} th, td {{ text-align: left; padding: .4rem; border-bottom: 1px solid #ccc;
vertical-align: top; }} .ok {{ color: #0b6e2f; font-weight: 600; }} .bad {{ color: #a30000; font-weight: 600; }}
pre {{ white-space: pre-wrap; word-break: break-all; }} .note {{ background: #fff4d6; padding: .5rem .75rem; }}
</style></head><body><main>
<h1>Development webhook receiver</h1>
<p class="note">For the demo only: it accepts every delivery sent to it and checks its signatures with the signing
secret of the institution's endpoint. Times are UTC. The latest {keep} deliveries are kept in memory; the page
reloads every 5 seconds.</p>
<table><caption>Received deliveries, newest first</caption>
<thead><tr><th scope="col">Received (UTC)</th><th scope="col">Event type</th><th scope="col">Event id</th>
<th scope="col">Signature verified</th><th scope="col">Body</th></tr></thead>
<tbody>{rows}</tbody></table>
</main></body></html>
"""


class _QuietRequestHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs) -> None:
        pass


def create_server(host: str, port: int, secret_for: SecretLookup) -> tuple[BaseWSGIServer, WebhookReceiver]:
    """A threaded HTTP server; `port=0` picks a free port (see `server.server_port`)."""
    receiver = WebhookReceiver(secret_for)
    server = make_server(host, port, receiver, threaded=True, request_handler=_QuietRequestHandler)
    server.daemon_threads = True
    return server, receiver
