"""Rotating SECRET_KEY from outside (docs/operations.md, "Rotating SECRET_KEY"): real gunicorn and worker
processes, a real SMTP server and webhook receiver, the `secrets reencrypt` command.

Under the old key: a signed-in session, a decision link and an account reset link emailed, an API cursor, a
webhook endpoint (secret and a token in its URL), a two-factor enrolment, an invitation still queued and one
refused by the mail server. With `SECRET_KEY` new and the old key in `SECRET_KEY_FALLBACKS`, all of it still
works; `secrets reencrypt` rewrites the stored ciphertexts; with the fallback dropped, the webhook secret, the
stored links and two-factor still work while the old session, decision link and cursor are refused."""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import uuid
from urllib.parse import urlsplit

import pyotp
import pytest
import requests
from sqlalchemy import select

from core.db import db
from core.models.messages import Message
from tests.conftest import REDIS_URL, auth_header
from tests.messages.smtp_server import SmtpServer
from tests.ops.processes import ROOT, Processes, app_environment
from tests.portal.conftest import PASSWORD
from tests.webhooks.conftest import wait_until
from tests.webhooks.independent_verifier import verify
from tests.webhooks.webhook_receiver import Receiver

OLD_KEY = secrets.token_urlsafe(48)
NEW_KEY = secrets.token_urlsafe(48)
_CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
_SECRET = re.compile(r'<code id="two-factor-secret">([A-Z2-7 ]+)</code>')
_LINK = re.compile(r"https?://[^\s\"<>]+/(?:account/(?:invitation|reset)|decisions/respond)/[A-Za-z0-9._-]+")
URL_TOKEN = "receiver-token-1234"


@pytest.fixture
def outside(app, database_url, tmp_path, redis_client):
    """The world around the processes: an SMTP server, a webhook receiver (plain HTTP on loopback) and a way to
    start web and worker processes under a key ring."""
    redis_client.flushdb()
    smtp = SmtpServer().start()
    receiver = Receiver(tmp_path, tls=False).start()
    world = World(Processes(tmp_path), database_url, tmp_path, smtp, receiver)
    try:
        yield world
    finally:
        world.processes.stop_all()
        receiver.stop()
        smtp.stop()
        redis_client.flushdb()


class World:
    def __init__(self, processes: Processes, database_url: str, tmp_path, smtp: SmtpServer, receiver: Receiver):
        self.processes, self.database_url, self.tmp_path = processes, database_url, tmp_path
        self.smtp, self.receiver = smtp, receiver
        self.rate_prefix = f"karibu-rotation-{uuid.uuid4().hex[:8]}"
        self.web = self.worker = None
        self.base = ""

    def environment(self, key: str, fallbacks: str = "") -> dict:
        return app_environment(self.database_url, REDIS_URL, self.tmp_path, SECRET_KEY=key,
                               SECRET_KEY_FALLBACKS=fallbacks, MAIL_SERVER="127.0.0.1", MAIL_PORT=str(self.smtp.port),
                               MAIL_TIMEOUT="5", WEBHOOK_ALLOW_PRIVATE_TARGETS="true", WEBHOOK_ALLOW_HTTP="true",
                               RATELIMIT_KEY_PREFIX=self.rate_prefix, WORKER_MAINTENANCE_SECONDS="1",
                               WEBHOOK_SWEEP_SECONDS="1")

    def run(self, key: str, fallbacks: str = "", worker: bool = True) -> None:
        """Web and worker processes under this key ring, the previous ones stopped first."""
        self.stop()
        env = self.environment(key, fallbacks)
        self.base = self.processes.gunicorn(env, name=f"web-{len(self.processes.started)}", workers=1)
        self.web = self.processes.started[-1]
        self.worker = self.processes.worker(env, name=f"worker-{len(self.processes.started)}") if worker else None

    def start_worker(self, key: str, fallbacks: str = "") -> None:
        self.worker = self.processes.worker(self.environment(key, fallbacks),
                                            name=f"worker-{len(self.processes.started)}")

    def stop_worker(self) -> None:
        if self.worker is not None:
            _stop(self.worker)
            self.worker = None

    def stop(self) -> None:
        self.stop_worker()
        if self.web is not None:
            _stop(self.web)
            self.web = None

    def cli(self, key: str, fallbacks: str, *args: str) -> dict:
        completed = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", *args, "--json"],
                                   env=self.environment(key, fallbacks), cwd=ROOT, capture_output=True, text=True,
                                   timeout=120)
        assert completed.returncode == 0, completed.stderr
        return json.loads(completed.stdout)

    def emails_to(self, address: str) -> list:
        return [received.message for received in self.smtp.received if address in received.recipients]

    def link_to(self, address: str, timeout: float = 60) -> str:
        """The path of the one link in the only email to `address`, waited for."""
        assert wait_until(lambda: len(self.emails_to(address)) == 1, timeout), self._worker_log()
        [email] = self.emails_to(address)
        [link] = set(_LINK.findall(email.get_body(("plain",)).get_content()))
        return urlsplit(link).path

    def webhooks(self, count: int, timeout: float = 60) -> list:
        requests_seen = self.receiver.server.wait_for(count, timeout)
        assert len(requests_seen) >= count, self._worker_log()
        return requests_seen

    def _worker_log(self) -> str:
        logs = sorted(self.tmp_path.glob("worker-*.log"))
        return logs[-1].read_text()[-4000:] if logs else "no worker log"


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class Browser:
    """A browser of the portal: its cookies survive the servers' restarts, as a real one's do."""

    def __init__(self, world: World):
        self.world = world
        self.session = requests.Session()
        self.session.headers["User-Agent"] = "Rotation test browser"

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.session.get(self.world.base + path, allow_redirects=False, timeout=30, **kwargs)

    def token(self, path: str) -> str:
        page = self.get(path)
        match = _CSRF_META.search(page.text)
        assert match, (path, page.status_code, page.text[:500])
        return match.group(1)

    def post(self, path: str, data: dict, token: str | None = None) -> requests.Response:
        return self.session.post(self.world.base + path, data={**data, "csrf_token": token or self.token(path)},
                                 allow_redirects=False, timeout=30)

    def sign_in(self, email: str, password: str = PASSWORD) -> requests.Response:
        return self.post("/login", {"email": email, "password": password}, self.token("/login"))

    def signed_in(self) -> bool:
        return self.get("/account").status_code == 200


class Authenticator:
    """The staff member's authenticator app: a new code for each sign-in (a code is accepted once)."""

    def __init__(self, secret: str):
        self.totp = pyotp.TOTP(secret)
        self.last_step = int(time.time() // 30) - 1

    def code(self) -> str:
        step = max(self.last_step + 1, int(time.time() // 30) - 1)  # one step of drift is accepted
        while step > int(time.time() // 30) + 1:
            time.sleep(1)
        self.last_step = step
        return self.totp.at(step * 30)


def _sign_in_with_two_factor(world: World, email: str, authenticator: Authenticator) -> Browser:
    browser = Browser(world)
    assert browser.sign_in(email).headers["Location"].endswith("/login/two-factor")
    answer = browser.post("/login/two-factor", {"code": authenticator.code()})
    assert answer.status_code == 302, answer.text[:1000]
    assert browser.signed_in()
    return browser


def _pings(world: World) -> list:
    return [request for request in world.receiver.requests if json.loads(request.body)["type"] == "webhook.test"]


def _ping_verified(world: World, browser: Browser, secret: str, token: str | None = None) -> None:
    """A test ping queued from the portal is delivered to the URL with its token, signed with `secret`."""
    pings_before = len(_pings(world))
    queued = browser.post("/webhooks/ping", {}, token or browser.token("/webhooks"))
    assert queued.status_code == 302 and queued.headers["Location"].endswith("/webhooks"), queued.text[:1000]
    assert wait_until(lambda: len(_pings(world)) > pings_before, 60), world._worker_log()
    delivered = _pings(world)[pings_before]
    assert delivered.path == f"/hooks?token={URL_TOKEN}"
    verify(secret, delivered.headers, delivered.body, time.time())  # raises Rejected on a wrong signature


def _readyz(world: World) -> dict:
    return requests.get(world.base + "/readyz", timeout=30).json()


def _message_to(app, address: str) -> Message:
    with app.app_context():
        message = db.session.scalars(select(Message).where(Message.recipient == address)).one()
        db.session.expunge(message)
        return message


def test_a_rotation_keeps_sessions_links_and_secrets_then_reencrypt_lets_the_old_key_go(app, factory, outside):
    world = outside
    institution = factory.institution()
    admin = factory.user(institution, role="admin", email="admin@rotation.ac.ke", password=PASSWORD)
    staff = factory.user(institution, email="otieno@rotation.ac.ke", password=PASSWORD)
    _, api_key = factory.api_key(institution)
    applicant_file = factory.application(institution, email="amani@example.com")
    factory.application(institution)

    # --- under the old key -------------------------------------------------------------------------------
    world.run(OLD_KEY)
    secret = world.cli(OLD_KEY, "", "webhooks", "set", "--institution", institution.id, "--url",
                       world.receiver.url("127.0.0.1", f"/hooks?token={URL_TOKEN}"))["signing_secret"]
    browser, idle = Browser(world), Browser(world)
    for signing_in in (browser, idle):
        assert signing_in.sign_in(admin.email).status_code == 302 and signing_in.signed_in()
    old_form_token = browser.token("/webhooks")

    world.smtp.recorder.rcpt_answers.append("550 5.1.1 no such user")
    assert browser.post("/users", {"email": "bounced@rotation.ac.ke", "role": "staff"}).status_code == 201
    assert wait_until(lambda: _message_to(app, "bounced@rotation.ac.ke").status == "failed", 60)

    sent = requests.patch(world.base + "/api/v1/applications/update", headers=auth_header(api_key), timeout=30,
                          json={"updates": [{"id": applicant_file.id, "decision": "accepted", "send_decision": True}]})
    assert sent.status_code == 200, sent.text
    decision_link = world.link_to("amani@example.com")
    decision_event = world.webhooks(1)[0]
    verify(secret, decision_event.headers, decision_event.body, time.time())

    forgot = Browser(world)
    assert forgot.post("/login/forgot", {"email": staff.email}).status_code in (200, 302)
    reset_link = world.link_to(staff.email)

    page = requests.get(world.base + "/api/v1/applications?limit=1", headers=auth_header(api_key), timeout=30)
    cursor = page.json()["cursor"]

    enrolling = Browser(world)
    assert enrolling.sign_in(staff.email).status_code == 302
    two_factor_secret = _SECRET.search(enrolling.get("/account/two-factor/enrol").text).group(1).replace(" ", "")
    authenticator = Authenticator(two_factor_secret)
    assert enrolling.post("/account/two-factor/enrol", {"code": authenticator.code()}).status_code == 201

    world.stop_worker()
    assert browser.post("/users", {"email": "neema@rotation.ac.ke", "role": "staff"}).status_code == 201
    assert _message_to(app, "neema@rotation.ac.ke").status == "queued"  # its link sealed under the old key

    # --- SECRET_KEY new, the old key a fallback ----------------------------------------------------------
    world.run(NEW_KEY, OLD_KEY)
    assert browser.signed_in(), "the session signed in under the old key ended"
    _ping_verified(world, browser, secret, token=old_form_token)  # a form opened before the rotation
    assert requests.get(world.base + decision_link, timeout=30).status_code == 200
    assert requests.get(world.base + reset_link, timeout=30).status_code == 200
    listed = requests.get(world.base + "/api/v1/applications", params={"limit": 1, "cursor": cursor},
                          headers=auth_header(api_key), timeout=30)
    assert listed.status_code == 200, listed.text
    invitation_link = world.link_to("neema@rotation.ac.ke")  # sent now: its link was sealed under the old key
    assert requests.get(world.base + invitation_link, timeout=30).status_code == 200
    _sign_in_with_two_factor(world, staff.email, authenticator)

    assert _readyz(world)["secret_key_rotation"]["fallback_keys"] == 1
    assert wait_until(lambda: "columns" in _readyz(world)["secret_key_rotation"], 30)  # counted in the background
    rotation = _readyz(world)["secret_key_rotation"]
    assert rotation["columns"] == {
        "webhook_endpoints.secret_ciphertext": {"to_reencrypt": 1, "unreadable": 0},
        "webhook_endpoints.url_query_ciphertext": {"to_reencrypt": 1, "unreadable": 0},
        "two_factor_credentials.secret_ciphertext": {"to_reencrypt": 1, "unreadable": 0},
        "messages.private_link": {"to_reencrypt": 1, "unreadable": 0},  # the refused invitation's, kept to resend
        "sender_domains.dkim_private_key_ciphertext": {"to_reencrypt": 0, "unreadable": 0},
        "sso_configurations.client_secret_ciphertext": {"to_reencrypt": 0, "unreadable": 0},
    }
    first = world.cli(NEW_KEY, OLD_KEY, "secrets", "reencrypt")
    assert (first["reencrypted"], first["unreadable"], first["changed_meanwhile"]) == (4, 0, 0)
    again = world.cli(NEW_KEY, OLD_KEY, "secrets", "reencrypt")
    assert (again["reencrypted"], again["already_current"], again["unreadable"]) == (0, 4, 0)
    assert wait_until(lambda: _readyz(world)["secret_key_rotation"]["rows_to_reencrypt"] == 0, 60)

    # --- the fallback dropped ----------------------------------------------------------------------------
    world.run(NEW_KEY)
    assert "secret_key_rotation" not in _readyz(world)
    # A session not seen while the fallback was set still carries the old key's signature: refused. (One used
    # meanwhile was signed again under the new key whenever it changed, and goes on.)
    assert not idle.signed_in(), "a session signed under a dropped key is still accepted"
    refused = requests.get(world.base + decision_link, timeout=30)
    assert refused.status_code == 404 and "not valid" in refused.text
    stale = requests.get(world.base + "/api/v1/applications", params={"limit": 1, "cursor": cursor},
                         headers=auth_header(api_key), timeout=30)
    assert stale.status_code == 400 and stale.json()["errors"][0]["name"] == "cursor"
    # Account links are random tokens kept as hashes, not signed with SECRET_KEY: valid until they expire.
    assert requests.get(world.base + reset_link, timeout=30).status_code == 200

    again_signed_in = Browser(world)
    assert again_signed_in.sign_in(admin.email).status_code == 302
    _ping_verified(world, again_signed_in, secret)
    bounced = _message_to(app, "bounced@rotation.ac.ke")
    assert again_signed_in.post(f"/messages/{bounced.id}/resend", {}, again_signed_in.token("/messages")
                                ).status_code in (200, 302)
    resent_link = world.link_to("bounced@rotation.ac.ke")  # the stored link, re-encrypted, opens
    assert requests.get(world.base + resent_link, timeout=30).status_code == 200
    _sign_in_with_two_factor(world, staff.email, authenticator)
