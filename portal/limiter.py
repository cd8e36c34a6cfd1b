"""The portal's rate limits (Flask-Limiter): sign-in, forgotten passwords, two-factor codes, `/try` and the
public forms, declared on their views with `limiter.limit(...)`."""
from __future__ import annotations

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

from core.redis_faults import request_met_redis_fault

# Rate-limit headers are written by the API itself (api.auth.add_rate_limit_headers).
limiter = Limiter(key_func=get_remote_address, headers_enabled=False)


def probe_storage_once_per_request() -> None:
    """Skip Flask-Limiter's recovery ping of its storage in a request that already met a Redis fault (the next
    request probes), so a request waits for one timeout at most."""
    storage = limiter.storage
    check = storage.check

    def check_unless_this_request_met_a_fault() -> bool:
        return False if request_met_redis_fault() else check()

    storage.check = check_unless_this_request_met_a_fault
