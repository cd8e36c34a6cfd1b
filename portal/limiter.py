"""The portal's rate limits (Flask-Limiter): sign-in, forgotten passwords, two-factor codes, `/try` and the
public forms, declared on their views with `limiter.limit(...)`.

The API counts its own requests (api/rate_limits.py), under the same storage and key prefix; `wsgi.py` keeps
Flask-Limiter off its paths.
"""
from __future__ import annotations

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

# Rate-limit headers are written by the API itself (api.auth.add_rate_limit_headers).
limiter = Limiter(key_func=get_remote_address, headers_enabled=False)
