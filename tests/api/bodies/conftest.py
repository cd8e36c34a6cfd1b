"""Every JSON endpoint of the app (partner API and payment callbacks), ready to receive a raw body: the
credentials, the processors' signatures and the statuses each one documents."""
from __future__ import annotations

import hashlib
import hmac
import io
from dataclasses import dataclass
from typing import Callable

import pytest

from tests.conftest import auth_header

MPESA_SECRET = "mpesa-aggregator-secret-for-body-tests"
FLUTTERWAVE_HASH = "flutterwave-hash-for-body-tests"


@dataclass(frozen=True)
class JsonEndpoint:
    name: str
    method: str
    path: str
    signed_headers: Callable[[bytes], dict]
    documented: frozenset  # its documented answers to a body (never a 5xx: the registries are up in these tests)

    def send(self, client, raw: bytes, *, chunked: bool = False, content_type: str = "application/json"):
        """Send `raw` as the body; `chunked` sends it without Content-Length, as a chunked request arrives."""
        headers = {**self.signed_headers(raw), "Content-Type": content_type}
        if not chunked:
            return client.open(self.path, method=self.method, data=raw, headers=headers)
        # What a WSGI server hands the app for `Transfer-Encoding: chunked`: a decoded stream of unknown length.
        return client.open(self.path, method=self.method, input_stream=io.BytesIO(raw), headers=headers,
                           environ_overrides={"wsgi.input_terminated": True, "HTTP_TRANSFER_ENCODING": "chunked"})


def mpesa_signature(raw: bytes) -> str:
    return hmac.new(MPESA_SECRET.encode(), raw, hashlib.sha256).hexdigest()


@pytest.fixture
def json_endpoints(app, factory, monkeypatch, live_registries) -> dict[str, JsonEndpoint]:
    """The five ways a JSON body enters the app, each with valid credentials so that the body is parsed."""
    monkeypatch.setitem(app.config, "MPESA_CALLBACK_SECRET", MPESA_SECRET)
    monkeypatch.setitem(app.config, "FLUTTERWAVE_SECRET_HASH", FLUTTERWAVE_HASH)
    _, live_key = factory.api_key(factory.institution("Hostile Bodies University"))
    endpoints = [
        JsonEndpoint("update", "PATCH", "/api/v1/applications/update", lambda raw: auth_header(live_key),
                     frozenset({200, 400, 413})),
        JsonEndpoint("verify-trial", "POST", "/api/v1/verifications", lambda raw: auth_header("sk_trial_demo"),
                     frozenset({200, 400, 404, 409, 413})),
        JsonEndpoint("verify-live", "POST", "/api/v1/verifications", lambda raw: auth_header(live_key),
                     frozenset({200, 400, 404, 409, 413})),
        JsonEndpoint("flutterwave", "POST", "/callbacks/payments/flutterwave",
                     lambda raw: {"verif-hash": FLUTTERWAVE_HASH}, frozenset({200, 400, 409, 413})),
        JsonEndpoint("mpesa", "POST", "/callbacks/payments/mpesa",
                     lambda raw: {"X-Karibu-Mpesa-Signature": mpesa_signature(raw)}, frozenset({200, 400, 409, 413})),
    ]
    return {endpoint.name: endpoint for endpoint in endpoints}
