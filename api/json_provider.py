"""JSON response bodies written by orjson, for the whole app (the API's are nearly all of them).

orjson writes a list page of records an order of magnitude faster than Flask's encoder (`json.dumps`), which
was a visible share of a list request. Only `jsonify`'s compact bodies change writer; `dumps` (templates'
`tojson`, pretty output in debug) stays Flask's. Values orjson does not know (Decimal, dates, dataclasses,
UUIDs) go to Flask's `default` as before, so they are written the same; anything orjson refuses outright (a
lone UTF-16 surrogate, an integer beyond 64 bits) is written by Flask's encoder. Non-ASCII text is sent as UTF-8 rather
than `\\u` escapes: the same JSON to any parser.
"""
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
        """`response(obj)` for a body whose datetimes are naive UTC (records as selected): each is written as
        `isoformat_z` writes it, by orjson itself. Where orjson cannot write the body, or the app writes with
        Flask's encoder, they are formatted by `isoformat_z` and the body written as `response` would."""
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
