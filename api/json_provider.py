"""JSON response bodies written by orjson for the whole app, falling back to Flask's encoder for what it refuses."""
from __future__ import annotations

from datetime import datetime

import orjson
from flask.json.provider import DefaultJSONProvider

from core.timefmt import isoformat_z

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS
# Naive datetimes are UTC, written `2026-03-01T08:15:00Z` (microseconds only when set): isoformat_z's text.
_UTC_OPTIONS = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


class OrjsonProvider(DefaultJSONProvider):
    def response(self, *args, **kwargs):
        if self._flask_writes():
            return super().response(*args, **kwargs)
        obj = self._prepare_response_obj(args, kwargs)
        try:
            body = orjson.dumps(obj, default=self.default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return super().response(obj)
        return self._app.response_class(body + b"\n", mimetype=self.mimetype)

    def utc_response(self, obj):
        """`response(obj)` for a body whose naive datetimes are UTC, each written as `isoformat_z` writes it."""
        if not self._flask_writes():
            try:
                body = orjson.dumps(obj, default=self.default, option=_UTC_OPTIONS)
            except orjson.JSONEncodeError:
                pass
            else:
                return self._app.response_class(body + b"\n", mimetype=self.mimetype)

        def default(value):
            return isoformat_z(value) if isinstance(value, datetime) else self.default(value)

        layout = {"indent": 2} if self._pretty() else {"separators": (",", ":")}
        return self._app.response_class(f"{self.dumps(obj, default=default, **layout)}\n", mimetype=self.mimetype)

    def _pretty(self) -> bool:
        """Flask's rule: indented in debug unless `compact` says otherwise."""
        return (self.compact is None and self._app.debug) or self.compact is False

    def _flask_writes(self) -> bool:
        return self.sort_keys or self._pretty()
