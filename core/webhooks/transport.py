"""One webhook HTTP attempt: vet the URL, connect to the vetted address, POST, classify the outcome.

Built on requests + requests-hardened (never follow redirects, fixed User-Agent, default timeouts). The
connection is pinned to the address the URL guard vetted (no second DNS lookup) while TLS is verified
against the URL's host name (SNI and certificate checks). A watchdog closes the socket when the total
deadline passes, so a slow or dribbling receiver cannot hold an attempt longer than the limit.
"""

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


class _Watchdog:
    """Shuts every socket of the current attempt when the deadline passes."""

    def __init__(self, seconds: float):
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.fired = False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        try:
            handle = socket.fromfd(sock.fileno(), sock.family, sock.type)
        except OSError:
            return
        with self._lock:
            if self.fired:
                _shutdown(handle)
            self._sockets.append(handle)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for handle in self._sockets:
                _shutdown(handle)

    def __enter__(self) -> "_Watchdog":
        _current.watchdog = self
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()
        _current.watchdog = None
        with self._lock:
            for handle in self._sockets:
                handle.close()
            self._sockets.clear()


def _shutdown(handle: socket.socket) -> None:
    try:
        handle.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _watch(sock: socket.socket | None) -> None:
    watchdog = getattr(_current, "watchdog", None)
    if watchdog is not None:
        watchdog.watch(sock)


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
    """Connects to `request.pinned_address` instead of resolving the URL's host again.

    The Host header, SNI and certificate host name stay the URL's host, as in requests-hardened's
    IPFilterAdapter; the address comes from our own guard, which vetted every resolved address.
    """

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
            )
        except UnsafeURL as exc:
            return outcome(error_class=exc.error_class, error=exc.reason)

        prepared = self._session.prepare_request(requests.Request("POST", url, headers=headers, data=body))
        prepared.pinned_address = target.pinned_address
        request_headers = [[name, value] for name, value in prepared.headers.items()]
        deadline = self.settings.deadline_seconds
        verify: bool | str = self.settings.ca_bundle or True
        with _Watchdog(deadline) as watchdog:
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
