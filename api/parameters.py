"""Strict query strings: a parameter the endpoint does not take (per the OpenAPI document) is a 400 naming it."""
from __future__ import annotations

import difflib
import re
from functools import lru_cache

from flask import request

from api.openapi import openapi_document
from core.errors import InvalidInput, problem

_FLASK_VARIABLE = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


@lru_cache(maxsize=1)
def _query_parameters() -> dict[tuple[str, str], frozenset[str]]:
    """(OpenAPI path, method) → names of its query parameters."""
    document = openapi_document()
    shared = document.get("components", {}).get("parameters", {})
    taken = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            names = set()
            for parameter in operations.get("parameters", []) + operation.get("parameters", []):
                if "$ref" in parameter:
                    parameter = shared[parameter["$ref"].rsplit("/", 1)[-1]]
                if parameter["in"] == "query":
                    names.add(parameter["name"])
            taken[(path, method)] = frozenset(names)
    return taken


def reject_unknown_query_parameters() -> None:
    """before_request of the API: refuse query parameters the operation does not document."""
    if request.url_rule is None:
        return
    path = _FLASK_VARIABLE.sub(r"{\1}", request.url_rule.rule)
    allowed = _query_parameters().get((path, request.method.lower()))
    if allowed is None:  # not an operation of the document (the document itself, the reference page)
        return
    unknown = [name for name in dict.fromkeys(request.args) if name not in allowed]
    if not unknown:
        return
    accepted = ", ".join(sorted(allowed)) or "no query parameters"
    errors = []
    for name in unknown:
        close = difflib.get_close_matches(name.lower(), allowed, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        errors.append(problem("query", name, f"unknown parameter{hint}; this endpoint takes {accepted}"))
    raise InvalidInput(f"unknown query parameter {unknown[0]!r}" + (
        f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""), errors=errors)
