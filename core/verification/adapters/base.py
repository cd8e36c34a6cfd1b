"""What every registry adapter shares: a hardened HTTP session, timeouts, size cap, no redirects.

Anything but a well-formed answer or the registry's own not-found raises `RegistryUnavailable`.
"""
from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.verification.exam_records import ExamRecord
from core.verification.registries import Registry

if TYPE_CHECKING:  # requests (heavy, with urllib3) is imported by the first live lookup, not at start
    import requests

logger = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 256 * 1024
USER_AGENT = "Karibu-Verification/1"


class RegistryUnavailable(Exception):
    """The registry did not give a usable answer; `reason` is one of the failure classes below."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class MalformedAnswer(ValueError):
    """Raised by adapters' parsers when a registry's body does not follow its wire format."""


@dataclass(frozen=True)
class RegistryEndpoint:
    base_url: str
    token: str
    connect_timeout: float
    read_timeout: float


@dataclass(frozen=True)
class RegistryAnswer:
    """`outcome` is `authentic`, `withheld`, `cancelled` or `not_found` (then `record` is None)."""

    outcome: str
    record: ExamRecord | None


@dataclass(frozen=True)
class WireRequest:
    method: str
    path: str
    headers: dict
    params: dict | None = None
    data: bytes | None = None


class RegistryAdapter(ABC):
    """One registry's wire format: subclasses build the HTTP request and parse the answer."""

    registry: Registry

    def __init__(self, endpoint: RegistryEndpoint):
        self.endpoint = endpoint
        self._local = threading.local()

    @abstractmethod
    def build_request(self, identifiers: dict[str, str]) -> WireRequest:
        """The registry's request for these identifiers."""

    @abstractmethod
    def parse_answer(self, status: int, body: bytes, identifiers: dict[str, str]) -> RegistryAnswer:
        """The registry's answer as a RegistryAnswer; raises RegistryUnavailable on anything unexpected."""

    def lookup(self, identifiers: dict[str, str]) -> RegistryAnswer:
        wire = self.build_request(identifiers)
        started = time.monotonic()
        status, body = self._exchange(wire)
        try:
            answer = self.parse_answer(status, body, identifiers)
        except MalformedAnswer as error:  # our own wording: names what is wrong, never a value
            self._fail("malformed_response", f"status {status}: {error}"[:300])
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
            self._fail("malformed_response", f"status {status}: {type(error).__name__}")
        logger.info("registry %s answered %s in %.0f ms", self.registry.code, answer.outcome,
                    (time.monotonic() - started) * 1000)
        return answer

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            from requests_hardened import Config, HTTPSession

            session = HTTPSession(Config(
                ip_filter_enable=False,
                ip_filter_allow_loopback_ips=True,
                never_redirect=True,
                default_timeout=(self.endpoint.connect_timeout, self.endpoint.read_timeout),
                user_agent_override=USER_AGENT,
            ))
            session.trust_env = False
            self._local.session = session
        return session

    def _exchange(self, wire: WireRequest) -> tuple[int, bytes]:
        import requests

        url = self.endpoint.base_url.rstrip("/") + wire.path
        try:
            response = self._session().request(
                wire.method, url, headers=wire.headers, params=wire.params, data=wire.data, stream=True,
                allow_redirects=False,
                timeout=(self.endpoint.connect_timeout, self.endpoint.read_timeout),
            )
            with response:
                if response.is_redirect or 300 <= response.status_code < 400:
                    self._fail("redirect", f"status {response.status_code}")
                if response.status_code >= 500:
                    self._fail("http_status", f"status {response.status_code}")
                if response.status_code in (401, 403):
                    self._fail("credentials_rejected", f"status {response.status_code}")
                return response.status_code, self._read_capped(response)
        except requests.Timeout as error:
            self._fail("timeout", type(error).__name__)
        except requests.RequestException as error:
            self._fail("connection", type(error).__name__)

    def _read_capped(self, response: requests.Response) -> bytes:
        chunks, size = [], 0
        for chunk in response.iter_content(16 * 1024):
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                self._fail("oversized_response", f"more than {MAX_RESPONSE_BYTES} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _fail(self, reason: str, detail: str):
        """Log and raise. `detail` never holds the URL, a body or an exception's text: the request path and
        parameters carry the candidate's identifiers (KNEC's index number is in the path)."""
        level = logging.ERROR if reason == "credentials_rejected" else logging.WARNING
        logger.log(level, "registry %s unavailable (%s): %s", self.registry.code, reason, detail)
        raise RegistryUnavailable(reason, detail)


def require(condition: bool, what: str) -> None:
    if not condition:
        raise MalformedAnswer(what)
