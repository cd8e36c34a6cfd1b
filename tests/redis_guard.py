"""The test suite flushes its Redis database only when that database is marked as the test database.

The suite marks the database (`MARKER_KEY`) when it first meets it empty, at the start of a session; a
database that holds data but no marker belongs to someone else, and the suite stops before writing to it.
Every flush is one Lua script that checks the marker, flushes and marks the database again, so no other
client can slip in between the check and the flush (and the marker survives the flush).
"""
from __future__ import annotations

import redis

MARKER_KEY = "karibu:test-database"
MARKER_VALUE = "This Redis database belongs to the Karibu test suite, which flushes it."

# KEYS[1] the marker; ARGV[1] its value. Returns 1 after flushing, 0 when the database is not marked.
_FLUSH_IF_MARKED = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('FLUSHDB')
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""

# Marks an empty database. Returns 1 when the database is (now) marked, 0 when it holds someone's data.
_MARK_IF_EMPTY = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
if redis.call('DBSIZE') ~= 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""


class UnmarkedRedisDatabase(Exception):
    """The database holds data the suite did not write: it must not be flushed."""


def refusal_message(url: str, client: redis.Redis) -> str:
    return (
        f"The Redis database at {url} holds {client.dbsize()} keys and is not marked as Karibu's test database "
        f"(no {MARKER_KEY!r} key), so the test suite will not use or flush it. Point KARIBU_TEST_REDIS_URL at "
        f"a free, empty database, e.g. KARIBU_TEST_REDIS_URL=redis://127.0.0.1:6379/15; the suite marks it "
        f"on first use. If this database only holds leftovers of an earlier test run, empty it yourself "
        f"(redis-cli -u {url} flushdb)."
    )


def mark_if_empty(client: redis.Redis) -> bool:
    """True when the database is the suite's (marked now if it was empty), False when it holds other data."""
    return bool(client.eval(_MARK_IF_EMPTY, 1, MARKER_KEY, MARKER_VALUE))


class GuardedRedis(redis.Redis):
    """A Redis client whose flushdb() empties only a marked test database; flushall() is always refused."""

    def flushdb(self, asynchronous: bool = False, **kwargs) -> bool:
        if not self.eval(_FLUSH_IF_MARKED, 1, MARKER_KEY, MARKER_VALUE):
            url = self.get_connection_kwargs()
            raise UnmarkedRedisDatabase(refusal_message(
                f"redis://{url.get('host')}:{url.get('port')}/{url.get('db', 0)}", self))
        return True

    def flushall(self, *args, **kwargs):
        raise UnmarkedRedisDatabase("the test suite never flushes every Redis database (FLUSHALL)")
