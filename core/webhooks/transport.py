"""One webhook HTTP attempt: vet the URL, connect to the vetted address, POST, classify the outcome."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from requests_hardened import Config, HTTPSession
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from core.webhooks.signing import USER_AGENT
from core.webhooks.urls import Resolver, UnsafeURL, check_url

DEADLINE_SECONDS = 10.0
BODY_EXCERPT_BYTES = 1024
# Response bodies are read (and the connection kept alive) up to this size; past it the connection is dropped.
MAX_BODY_READ = 64 * 1024
# The response headers an attempt records, at most.
MAX_RESPONSE_HEADERS = 50
MAX_RESPONSE_HEADER_BYTES = 8 * 1024

_current = threading.local()


class _Attempt:
    """The sockets one attempt uses, and whether the watchdog cut them off."""

    __slots__ = ("deadline", "sockets", "fired")

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.sockets: list[socket.socket] = []
        self.fired = False


class _Watchdog:
    """One thread for every attempt of the process: shuts the sockets of an attempt past its deadline."""

    def __init__(self):
        self._lock = threading.Condition()
        self._attempts: dict[int, _Attempt] = {}
        self._wakes_at: float | None = None  # when the thread will next look; None: it waits for a notify
        self._thread: threading.Thread | None = None

    def watch(self, seconds: float) -> "_Watching":
        return _Watching(self, seconds)

    def _enter(self, attempt: _Attempt) -> None:
        with self._lock:
            self._attempts[id(attempt)] = attempt
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="webhook-deadlines", daemon=True)
                self._thread.start()
            elif self._wakes_at is None or attempt.deadline < self._wakes_at:
                self._lock.notify()

    def _leave(self, attempt: _Attempt) -> None:
        with self._lock:
            self._attempts.pop(id(attempt), None)

    def add_socket(self, attempt: _Attempt, sock: socket.socket) -> None:
        with self._lock:
            attempt.sockets.append(sock)
            if attempt.fired:
                _shutdown(sock)

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for attempt in list(self._attempts.values()):
                    if attempt.deadline <= now and not attempt.fired:
                        attempt.fired = True
                        for sock in attempt.sockets:
                            _shutdown(sock)
                pending = [a.deadline for a in self._attempts.values() if not a.fired]
                self._wakes_at = min(pending) if pending else None
                self._lock.wait(None if self._wakes_at is None else self._wakes_at - now)


class _Watching:
    """`with` block of one attempt under the watchdog."""

    def __init__(self, watchdog: _Watchdog, seconds: float):
        self._watchdog = watchdog
        self.attempt = _Attempt(time.monotonic() + seconds)

    @property
    def fired(self) -> bool:
        return self.attempt.fired

    def __enter__(self) -> "_Watching":
        _current.watching = self
        self._watchdog._enter(self.attempt)
        return self

    def __exit__(self, *exc_info) -> None:
        _current.watching = None
        self._watchdog._leave(self.attempt)

    def watch(self, sock: socket.socket | None) -> None:
        if sock is not None:
            self._watchdog.add_socket(self.attempt, sock)


_watchdog = _Watchdog()


def _shutdown(sock: socket.socket) -> None:
    """Shut both directions, which wakes a thread blocked reading it. For a TLS socket the plain socket's
    shutdown is called: SSLSocket.shutdown would also drop the TLS state the reading thread is using."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, ValueError):
        pass


def _watch(sock: socket.socket | None) -> None:
    watching = getattr(_current, "watching", None)
    if watching is not None:
        watching.watch(sock)


class _WatchedHTTPConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        _watch(sock)
        return sock

    def request(self, *args, **kwargs):  # type: ignore[override]
        _watch(self.sock)  # a pooled connection being reused
        return super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        _watch(sock)
        return sock

    def request(self, *args, **kwargs):  # type: ignore[override]
        _watch(self.sock)
        return super().request(*args, **kwargs)


class _WatchedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class PinnedAddressAdapter(HTTPAdapter):
    """Connects to `request.pinned_address` instead of resolving the URL's host again; Host, SNI and the
    certificate check stay the URL's host."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _WatchedHTTPConnectionPool,
            "https": _WatchedHTTPSConnectionPool,
        }

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        pinned = getattr(request, "pinned_address", None)
        if pinned is None:
            raise requests.exceptions.InvalidURL("webhook requests must carry a vetted address")
        hostname = host_params["host"]
        host_header = f"[{hostname}]" if ":" in hostname else hostname
        if host_params["port"] is not None:
            host_header += f":{host_params['port']}"
        request.headers = CaseInsensitiveDict(request.headers or {})
        request.headers["Host"] = host_header
        if host_params["scheme"] == "https":
            pool_kwargs["assert_hostname"] = hostname
            pool_kwargs["server_hostname"] = hostname
        host_params["host"] = f"[{pinned}]" if ":" in pinned else pinned
        return host_params, pool_kwargs


def new_session() -> requests.Session:
    session = HTTPSession(
        Config(
            ip_filter_enable=False,  # the pinned adapter below applies our stricter guard instead
            ip_filter_allow_loopback_ips=False,
            never_redirect=True,
            default_timeout=(DEADLINE_SECONDS, DEADLINE_SECONDS),
            user_agent_override=USER_AGENT,
        )
    )
    session.trust_env = False  # no proxies or .netrc from the environment: the vetted address is the target
    adapter = PinnedAddressAdapter(max_retries=0, pool_maxsize=16)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


@dataclass(frozen=True)
class AttemptOutcome:
    delivered: bool
    status_code: int | None
    error_class: str | None  # timeout, dns, tls, connection, redirect, blocked_address, http_status
    error: str | None
    body_excerpt: str | None
    duration_ms: int
    # What the attempt shows staff: the headers sent (as a list of pairs) and those received, when any.
    request_headers: list[list[str]] | None = None
    response_headers: list[list[str]] | None = None


@dataclass(frozen=True)
class TransportSettings:
    allow_private: bool = False
    allow_http: bool = False
    ca_bundle: str | None = None
    dev_origin: tuple[str, str, int] | None = None  # the development receiver's (scheme, host, port)
    deadline_seconds: float = DEADLINE_SECONDS


class Transport:
    """Sends signed webhook requests; one per worker process so keep-alive connections are reused."""

    def __init__(self, settings: TransportSettings, resolver: Resolver | None = None):
        self.settings = settings
        self.resolver = resolver
        self._session = new_session()

    def close(self) -> None:
        self._session.close()

    def post(self, url: str, headers: dict[str, str], body: bytes) -> AttemptOutcome:
        started = time.monotonic()

        request_headers = response_headers = None

        def outcome(delivered=False, status=None, error_class=None, error=None, excerpt=None):
            elapsed = int((time.monotonic() - started) * 1000)
            return AttemptOutcome(delivered, status, error_class, error, excerpt, elapsed,
                                  request_headers=request_headers, response_headers=response_headers)

        try:
            target = check_url(
                url,
                allow_private=self.settings.allow_private,
                allow_http=self.settings.allow_http,
                resolver=self.resolver,
                dev_origin=self.settings.dev_origin,
            )
        except UnsafeURL as exc:
            return outcome(error_class=exc.error_class, error=exc.reason)

        prepared = self._session.prepare_request(requests.Request("POST", url, headers=headers, data=body))
        prepared.pinned_address = target.pinned_address
        request_headers = [[name, value] for name, value in prepared.headers.items()]
        deadline = self.settings.deadline_seconds
        verify: bool | str = self.settings.ca_bundle or True
        with _watchdog.watch(deadline) as watchdog:
            try:
                response = self._session.send(
                    prepared, timeout=(deadline, deadline), verify=verify, stream=True, allow_redirects=False
                )
            except requests.exceptions.SSLError as exc:
                return outcome(error_class="tls", error=_short(exc))
            except requests.exceptions.Timeout as exc:
                return outcome(error_class="timeout", error=_short(exc))
            except (requests.exceptions.ConnectionError, urllib3.exceptions.HTTPError, OSError) as exc:
                if watchdog.fired:
                    return outcome(error_class="timeout", error=f"no answer within {deadline:g} s")
                return outcome(error_class="connection", error=_short(exc))
            status = response.status_code
            response_headers = _header_pairs(response)
            excerpt = _read_excerpt(response)
        if 200 <= status < 300:
            return outcome(delivered=True, status=status, excerpt=excerpt)
        if 300 <= status < 400:
            location = response.headers.get("Location", "")
            return outcome(status=status, error_class="redirect",
                           error=f"redirects are not followed (Location: {location[:200]})", excerpt=excerpt)
        return outcome(status=status, error_class="http_status", error=f"HTTP {status}", excerpt=excerpt)


def _header_pairs(response: requests.Response) -> list[list[str]]:
    """The response's headers as received (order and repeats kept), capped so a receiver cannot fill the log."""
    pairs, size = [], 0
    for name, value in response.raw.headers.items():
        size += len(name) + len(value)
        if len(pairs) >= MAX_RESPONSE_HEADERS or size > MAX_RESPONSE_HEADER_BYTES:
            break
        pairs.append([name, value])
    return pairs


def _read_excerpt(response: requests.Response) -> str:
    """The first 1 KB of the body; the rest is read (up to a cap) so the connection can be reused."""
    collected = bytearray()
    total = 0
    try:
        for chunk in response.iter_content(8192):
            total += len(chunk)
            if len(collected) < BODY_EXCERPT_BYTES:
                collected.extend(chunk[: BODY_EXCERPT_BYTES - len(collected)])
            if total > MAX_BODY_READ:
                response.close()
                break
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, OSError):
        response.close()
    return bytes(collected).decode("utf-8", errors="replace")


def _short(exc: BaseException) -> str:
    return str(exc)[:500]
