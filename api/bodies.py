"""Checks on request bodies shared by every JSON endpoint (partner API and payment callbacks)."""
from __future__ import annotations

import re

from flask import request

from core.errors import InvalidInput

# A NUL can only enter valid JSON as the escape \u0000 (preceded by an even number of backslashes).
_JSON_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def reject_nul_characters() -> None:
    """No database text column can hold NUL: refuse it at the door with a 400, not deep inside with a 500."""
    if request.is_json and request.content_length:
        if _JSON_NUL_ESCAPE.search(request.get_data(cache=True)):
            raise InvalidInput("Strings in the request body must not contain the NUL character (\\u0000)")
