"""Answering the portal's bulk confirmation as a browser does: with the one-time token of its confirm button."""
from __future__ import annotations

import html
import re

_TOKEN = re.compile(r'name="confirmation" value="([^"]+)"')


def confirmation_token(response) -> str:
    match = _TOKEN.search(response.get_data(as_text=True))
    assert match, "no bulk confirmation in the answer"
    return html.unescape(match.group(1))


def confirmed(portal, path: str, data: dict, **kwargs):
    """Post a bulk change, then confirm it (the first answer must be the confirmation)."""
    asked = portal.post(path, data, **kwargs)
    assert asked.status_code == 200, asked.get_data(as_text=True)
    return portal.post(path, {**data, "confirmation": confirmation_token(asked)}, **kwargs)
