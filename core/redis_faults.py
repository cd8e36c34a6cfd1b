"""Redis faults the web app rode out: logged once each, counted per component (for /healthz and as
`karibu_redis_faults_total`), and the back-off that keeps a request to at most one timeout."""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from contextvars import ContextVar

import prometheus_client

log = logging.getLogger(__name__)

# Flask-Limiter's own logger: it warns when it falls back to in-process counting or swallows a storage error.
RATE_LIMITER_LOGGER = "flask-limiter"

_counts: Counter[str] = Counter()
_lock = threading.Lock()
REDIS_FAULTS = prometheus_client.Counter(
    "karibu_redis_faults_total", "Redis faults ridden out: rate limits counted in-process, drains left to the sweep",
    ["component"])


class RequestFaults:
    """What one app context (a request, a job, a command) knows of Redis faults: `met`, it waited for one."""

    def __init__(self) -> None:
        self.met = False


# The current app context's, set by the web layer for each one (`wsgi.register_request_state`); None outside.
REQUEST_FAULTS: ContextVar[RequestFaults | None] = ContextVar("karibu_request_faults", default=None)


def count_redis_fault(component: str, *, skipped: bool = False) -> None:
    """Count a fault; `skipped`: Redis was not even tried (a back-off)."""
    with _lock:
        _counts[component] += 1
    faults = REQUEST_FAULTS.get()
    if not skipped and faults is not None:
        faults.met = True
    REDIS_FAULTS.labels(component).inc()


def request_met_redis_fault() -> bool:
    """Whether this request (app context) already waited for a Redis fault: the rest of it leaves Redis alone."""
    faults = REQUEST_FAULTS.get()
    return faults is not None and faults.met


def redis_fault_counts() -> dict[str, int]:
    """Faults seen by this process since it started, per component (`rate_limit`, `queue`)."""
    with _lock:
        return dict(_counts)


def record_redis_fault(component: str, error: BaseException) -> None:
    """Count and log a Redis fault by class (a Redis error's text may hold a command's arguments)."""
    count_redis_fault(component)
    log.warning("Redis unavailable for %s (%s); carrying on without it", component, type(error).__name__)


class RedisBackoff:
    """When a component of the request path may try Redis again after a fault: `first` seconds, doubling up to
    `longest`, one caller probing; skipped too in a request that already met a fault elsewhere."""

    def __init__(self, component: str, first: float = 1.0, longest: float = 2.0):
        self.component, self.first, self.longest = component, first, longest
        self._pause = 0.0
        self._retry_at = float("-inf")
        self._lock = threading.Lock()

    def may_try(self) -> bool:
        """Whether to try Redis now; when not, the skip is counted as a fault ridden out (not logged)."""
        now = time.monotonic()
        with self._lock:
            if now < self._retry_at or request_met_redis_fault():
                count_redis_fault(self.component, skipped=True)
                return False
            if self._pause:
                self._retry_at = now + self._pause  # this caller probes; the others skip meanwhile
            return True

    def succeeded(self) -> None:
        with self._lock:
            self._pause, self._retry_at = 0.0, float("-inf")

    def failed(self, error: BaseException) -> None:
        """Record the fault (counted and logged) and start or lengthen the pause."""
        record_redis_fault(self.component, error)
        with self._lock:
            self._pause = min(self.longest, self._pause * 2 if self._pause else self.first)
            self._retry_at = time.monotonic() + self._pause


class _CountRateLimiterFaults(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            count_redis_fault("rate_limit")
        return True


def count_rate_limiter_faults() -> None:
    """Count every warning of the rate limiter (each is a storage fault it rode out); idempotent."""
    logger = logging.getLogger(RATE_LIMITER_LOGGER)
    if not any(isinstance(existing, _CountRateLimiterFaults) for existing in logger.filters):
        logger.addFilter(_CountRateLimiterFaults())
