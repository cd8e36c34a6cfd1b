"""Redis faults the web app rode out: logged once each, and counted per component (in this process for
/healthz, and as `karibu_redis_faults_total` for /metrics, summed over gunicorn's workers).

Redis holds rate-limit counters and wakes workers; the database holds everything that matters. So when Redis
is down or frozen, requests go on: the rate limiter counts in-process until Redis answers again, and a drain
job that cannot be queued is left to the periodic sweep.
"""
from __future__ import annotations

import logging
import threading
from collections import Counter

import prometheus_client

log = logging.getLogger(__name__)

# Flask-Limiter's own logger: it warns when it falls back to in-process counting or swallows a storage error.
RATE_LIMITER_LOGGER = "flask-limiter"

_counts: Counter[str] = Counter()
_lock = threading.Lock()
REDIS_FAULTS = prometheus_client.Counter(
    "karibu_redis_faults_total", "Redis faults ridden out: rate limits counted in-process, drains left to the sweep",
    ["component"])


def count_redis_fault(component: str) -> None:
    with _lock:
        _counts[component] += 1
    REDIS_FAULTS.labels(component).inc()


def redis_fault_counts() -> dict[str, int]:
    """Faults seen by this process since it started, per component (`rate_limit`, `queue`)."""
    with _lock:
        return dict(_counts)


def record_redis_fault(component: str, error: BaseException) -> None:
    """Count and log a Redis fault by class (a Redis error's text may hold a command's arguments)."""
    count_redis_fault(component)
    log.warning("Redis unavailable for %s (%s); carrying on without it", component, type(error).__name__)


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
