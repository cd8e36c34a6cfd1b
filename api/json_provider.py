"""JSON response bodies written by orjson, for the whole app (the API's are nearly all of them).

orjson writes a list page of records an order of magnitude faster than Flask's encoder (`json.dumps`), which
was a visible share of a list request. Only `jsonify`'s compact bodies change writer; `dumps` (templates'
`tojson`, pretty output in debug) stays Flask's. Values orjson does not know (Decimal, dates, dataclasses,
UUIDs) go to Flask's `default` as before, so they are written the same; anything orjson refuses outright (a
lone UTF-16 surrogate, an integer beyond 64 bits) is written by Flask's encoder. Non-ASCII text is sent as UTF-8 rather
than `\\u` escapes: the same JSON to any parser.
"""
from __future__ import annotations

import orjson
from flask.json.provider import DefaultJSONProvider

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


class OrjsonProvider(DefaultJSONProvider):
    def response(self, *args, **kwargs):
        if self.sort_keys or (self.compact is None and self._app.debug) or self.compact is False:
            return super().response(*args, **kwargs)
        obj = self._prepare_response_obj(args, kwargs)
        try:
            body = orjson.dumps(obj, default=self.default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return super().response(obj)
        return self._app.response_class(body + b"\n", mimetype=self.mimetype)
