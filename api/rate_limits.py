"""The API's rate-limit counters: fixed windows in Redis checked and counted in one round trip (`check_and_hit`),
in process while Redis is unreachable.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import redis
from flask import current_app
from limits import RateLimitItem, parse_many

from core.config import settings
from core.redis_faults import record_redis_fault

# KEYS: the counters to test, then the counters to hit; ARGV[1]: how many to test, then each tested limit's
# amount, then each hit counter's window in seconds. Returns {0, index, count, ttl} when tested counter
# `index` is spent, else {1, count1, ttl1, count2, ttl2, …} of the hit counters.
_CHECK_AND_HIT = """
local tested = tonumber(ARGV[1])
for i = 1, tested do
  local count = tonumber(redis.call('GET', KEYS[i]) or '0')
  if count >= tonumber(ARGV[1 + i]) then
    return {0, i, count, redis.call('TTL', KEYS[i])}
  end
end
local result = {1}
for j = tested + 1, #KEYS do
  local window = tonumber(ARGV[1 + j])
  local count = redis.call('INCR', KEYS[j])
  local ttl = redis.call('TTL', KEYS[j])
  if count == 1 or ttl < 0 then
    redis.call('EXPIRE', KEYS[j], window)
    ttl = window
  end
  result[#result + 1] = count
  result[#result + 1] = ttl
end
return result
"""
FIRST_PAUSE_SECONDS = 1.0
LONGEST_PAUSE_SECONDS = 32.0


@dataclass(frozen=True)
class Counter:
    """One limit (`600/minute`) of one subject (`key:<id>`, `addr:<ip>`) in one scope (`api`)."""
    scope: str
    subject: str
    limit: RateLimitItem

    @property
    def name(self) -> str:
        item = self.limit
        return f"LIMITER/{_key_prefix()}/{self.scope}/{self.subject}/{item.amount}/{item.multiples}/" \
               f"{item.GRANULARITY.name}"


@dataclass(frozen=True)
class Usage:
    """A counter after this request: its limit, how many are left (negative: past the limit) and when its
    window ends (epoch seconds)."""
    limit: RateLimitItem
    remaining: int
    reset_at: int


@dataclass(frozen=True)
class Outcome:
    allowed: bool
    usage: Usage | None  # the refusing counter, else the hit counter with the fewest requests left


def counters(limit_text: str, scope: str, subject: str) -> list[Counter]:
    return [Counter(scope, subject, item) for item in parse_many(limit_text)]


def _key_prefix() -> str:
    return settings().RATELIMIT_KEY_PREFIX


def _usage(counter: Counter, count: int, ttl: int, now: float) -> Usage:
    return Usage(counter.limit, counter.limit.amount - count, int(now + max(ttl, 0)))


class _RedisCounters:
    """The shared counters of one app, with the in-process stand-in used while Redis is unreachable."""

    def __init__(self):
        uri = settings().rate_limit_storage_uri()
        self.client = (redis.Redis.from_url(uri, **settings().redis_options())
                       if uri.startswith(("redis://", "rediss://", "unix://")) else None)
        self.script = self.client.register_script(_CHECK_AND_HIT) if self.client is not None else None
        self.local: dict[str, tuple[int, float]] = {}  # counter name -> (count, window end on the monotonic clock)
        self.lock = threading.Lock()
        self.retry_at = 0.0
        self.pause = 0.0

    def run(self, tests: list[Counter], hits: list[Counter]) -> Outcome:
        now = time.time()
        if self.script is not None and time.monotonic() >= self.retry_at:
            try:
                reply = self.script(keys=[_prefixed(c.name) for c in (*tests, *hits)],
                                    args=[len(tests), *(c.limit.amount for c in tests),
                                          *(c.limit.get_expiry() for c in hits)],
                                    client=self.client)
            except redis.RedisError as error:
                self._redis_failed(error)
            else:
                self.pause = 0.0
                if reply[0] == 0:
                    return Outcome(False, _usage(tests[reply[1] - 1], reply[2], reply[3], now))
                pairs = zip(hits, reply[1::2], reply[2::2])
                return _allowed([_usage(counter, count, ttl, now) for counter, count, ttl in pairs])
        return self._run_locally(tests, hits, now)

    def _redis_failed(self, error: Exception) -> None:
        record_redis_fault("rate_limit", error)
        self.pause = min(LONGEST_PAUSE_SECONDS, self.pause * 2 if self.pause else FIRST_PAUSE_SECONDS)
        self.retry_at = time.monotonic() + self.pause

    def _run_locally(self, tests: list[Counter], hits: list[Counter], now: float) -> Outcome:
        clock = time.monotonic()
        with self.lock:
            for counter in tests:
                count, ends = self._current(counter.name, clock)
                if count >= counter.limit.amount:
                    return Outcome(False, _usage(counter, count, int(ends - clock), now))
            usages = []
            for counter in hits:
                count, ends = self._current(counter.name, clock)
                if count == 0:
                    ends = clock + counter.limit.get_expiry()
                self.local[counter.name] = (count + 1, ends)
                usages.append(_usage(counter, count + 1, int(ends - clock), now))
            return _allowed(usages)

    def _current(self, name: str, clock: float) -> tuple[int, float]:
        count, ends = self.local.get(name, (0, 0.0))
        return (count, ends) if ends > clock else (0, 0.0)


def _prefixed(name: str) -> str:
    return f"LIMITS:{name}"  # limits' RedisStorage prefix: Flask-Limiter's `reset()` clears these keys too


def _allowed(usages: list[Usage]) -> Outcome:
    """Refused when a hit counter went past its limit (that one is reported), else the tightest counter."""
    over = next((usage for usage in usages if usage.remaining < 0), None)
    if over is not None:
        return Outcome(False, over)
    return Outcome(True, min(usages, key=lambda usage: usage.remaining, default=None))


def check_and_hit(tests: list[Counter], hits: list[Counter]) -> Outcome:
    """Refuse when a `tests` counter is spent; else count the request in every `hits` counter."""
    counters_of_app = current_app.extensions.get("karibu_rate_limits")
    if counters_of_app is None:
        counters_of_app = current_app.extensions["karibu_rate_limits"] = _RedisCounters()
    return counters_of_app.run(tests, hits)
