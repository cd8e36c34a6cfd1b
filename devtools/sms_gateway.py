"""A local stand-in for Africa's Talking's SMS API (`POST /version1/messaging`), for development and tests
(docs/messages.md).
"""
from __future__ import annotations

import hmac
import json
import re
import secrets
import threading
from dataclasses import asdict, dataclass, field

from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

_INTERNATIONAL = re.compile(r"^\+[1-9][0-9]{6,14}$")
COST = "KES 0.8000"


@dataclass
class SentSms:
    username: str
    to: str
    message: str
    sender: str | None
    message_id: str


@dataclass
class GatewayState:
    username: str
    api_key: str
    mode: str = "normal"  # normal | error
    sent: list[SentSms] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class SmsGatewayStandIn:
    def __init__(self, state: GatewayState):
        self.state = state

    def __call__(self, environ, start_response):
        request = Request(environ)
        return self.dispatch(request)(environ, start_response)

    def dispatch(self, request: Request) -> Response:
        if request.path == "/_stand-in/messages" and request.method == "GET":
            with self.state.lock:
                return _json({"messages": [asdict(sms) for sms in self.state.sent]}, 200)
        if request.path != "/version1/messaging" or request.method != "POST":
            return Response("Not found", 404, mimetype="text/plain")
        if self.state.mode == "error":
            return Response("Internal Server Error", 500, mimetype="text/plain")
        supplied = request.headers.get("apiKey", "")
        if not hmac.compare_digest(supplied.encode(), self.state.api_key.encode()) or \
                request.form.get("username") != self.state.username:
            return Response("The supplied authentication is invalid", 401, mimetype="text/plain")
        numbers = [number.strip() for number in (request.form.get("to") or "").split(",") if number.strip()]
        text = request.form.get("message") or ""
        if not numbers or not text:
            return Response("Missing to or message", 400, mimetype="text/plain")
        recipients, accepted = [], 0
        for number in numbers:
            if _INTERNATIONAL.match(number):
                message_id = "ATXid_" + secrets.token_hex(16)
                with self.state.lock:
                    self.state.sent.append(SentSms(request.form["username"], number, text,
                                                   request.form.get("from"), message_id))
                recipients.append({"statusCode": 101, "number": number, "status": "Success", "cost": COST,
                                   "messageId": message_id})
                accepted += 1
            else:
                recipients.append({"statusCode": 403, "number": number, "status": "InvalidPhoneNumber",
                                   "cost": "0", "messageId": "None"})
        summary = f"Sent to {accepted}/{len(numbers)} Total Cost: KES {0.8 * accepted:.4f}"
        return _json({"SMSMessageData": {"Message": summary, "Recipients": recipients}}, 201)


def _json(body: dict, status: int) -> Response:
    return Response(json.dumps(body), status, mimetype="application/json")


def create_server(host: str, port: int, username: str, api_key: str) -> tuple[BaseWSGIServer, GatewayState]:
    state = GatewayState(username=username, api_key=api_key)
    return make_server(host, port, SmsGatewayStandIn(state), threaded=True), state
