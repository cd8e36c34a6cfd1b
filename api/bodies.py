"""The one way a JSON request body is read: `json_object()` returns a plain JSON object or raises a 4xx saying why.

The rules (size, UTF-8, syntax, depth, number range, strings): docs/api.md, "Request bodies".
"""
from __future__ import annotations

import json
import math
import re
from itertools import accumulate

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from core.errors import InvalidInput

MAX_DEPTH = 32
MAX_NUMBER = 2**53 - 1
_MAX_INTEGER_DIGITS = len(str(MAX_NUMBER))
_UNSTORABLE_CHARACTER = re.compile("[\x00\ud800-\udfff]")
# Valid JSON holds NUL or a surrogate only as an escape (raw control characters are not JSON and strict UTF-8
# has no surrogates): without such an escape in the text there is nothing to look for in the strings.
_ESCAPED_NUL_OR_SURROGATE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # linear on valid JSON, where every string ends
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}

NOT_JSON_CONTENT_TYPE = "Request body must be JSON: send 'Content-Type: application/json'"
EMPTY_BODY = "Request body is empty: send a JSON object"
NOT_UTF8 = "Request body is not valid UTF-8"
NOT_JSON = "Request body is not valid JSON"
NOT_AN_OBJECT = "Request body must be a JSON object"
TOO_DEEP = f"Request body is nested too deeply: at most {MAX_DEPTH} levels of objects and arrays"
NUMBER_OUT_OF_RANGE = f"Numbers in the request body must be between -{MAX_NUMBER} and {MAX_NUMBER}"
NUL_IN_STRING = "Strings in the request body must not contain the NUL character (\\u0000)"
SURROGATE_IN_STRING = "Strings in the request body must not contain unpaired surrogates (such as \\ud800)"


class _Refused(ValueError):
    """Raised from inside the JSON decoder; carries the message of the 400."""


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INTEGER_DIGITS:  # refused before int() spends time on a huge number
        raise _Refused(NUMBER_OUT_OF_RANGE)
    value = int(text)
    if abs(value) > MAX_NUMBER:
        raise _Refused(NUMBER_OUT_OF_RANGE)
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise _Refused(NUMBER_OUT_OF_RANGE)
    return value


def _parse_constant(name: str):
    raise _Refused(f"{NOT_JSON}: {name} is not a JSON value")


def _bad_body(message: str) -> InvalidInput:
    return InvalidInput(message, field="body")


def parse_json_object(raw: bytes) -> dict:
    """The body rules of docs/api.md on raw bytes (everything but size and content type)."""
    if not raw.strip():
        raise _bad_body(EMPTY_BODY)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad_body(NOT_UTF8) from None
    try:
        body = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except _Refused as refused:
        raise _bad_body(str(refused)) from None
    except RecursionError:  # far deeper than MAX_DEPTH: the decoder gave up before we could count
        raise _bad_body(TOO_DEEP) from None
    except ValueError as error:
        raise _bad_body(f"{NOT_JSON}: {error}") from None
    if not isinstance(body, dict):
        raise _bad_body(NOT_AN_OBJECT)
    if _too_deep(text):
        raise _bad_body(TOO_DEEP)
    if _ESCAPED_NUL_OR_SURROGATE.search(text):
        _check_strings(body)
    return body


def _too_deep(text: str) -> bool:
    """Whether valid JSON `text` nests objects and arrays more than MAX_DEPTH deep, counted on the text at C
    speed (strings removed, then a running sum over the brackets) rather than by walking the parsed value."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets))) > MAX_DEPTH


def _check_strings(body: dict) -> None:
    """Every key and string value, walked without recursion: no NUL, no unpaired surrogate."""
    stack: list = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and (found := _UNSTORABLE_CHARACTER.search(value)):
            raise _bad_body(NUL_IN_STRING if found.group() == "\x00" else SURROGATE_IN_STRING)


def raw_body() -> bytes:
    """The request body (read once, cached); 413 beyond MAX_CONTENT_LENGTH, with or without Content-Length."""
    limit = request.max_content_length  # Flask's MAX_CONTENT_LENGTH
    chunked = limit is not None and request.content_length is None
    if chunked:
        # A chunked body has no length to check up front, and werkzeug's reader stops silently at the cap:
        # read one byte past it to tell a body of exactly the cap from a longer one.
        request.max_content_length = limit + 1
    try:
        raw = request.get_data(cache=True)  # a Content-Length over the cap: RequestEntityTooLarge
    finally:
        if chunked:
            request.max_content_length = None  # back to the app's limit, which the 413 answer names
    if limit is not None and len(raw) > limit:
        raise RequestEntityTooLarge()
    return raw


def json_object(*, require_json_content_type: bool = True) -> dict:
    """The request's JSON body as a dict, or InvalidInput (400) naming the problem; 413 when too large.

    `require_json_content_type=False` is for payment processors, whose content type is not checked.
    """
    if require_json_content_type and not request.is_json:
        raise InvalidInput(NOT_JSON_CONTENT_TYPE, header="Content-Type")
    return parse_json_object(raw_body())
