"""The OpenAPI 3.1 document: `base.yaml` plus one fragment per API area, merged once per process."""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).parent
FRAGMENTS = ("applications", "cycles", "updates", "zip", "verifications", "events")
HTTP_METHODS = frozenset({"get", "put", "post", "patch", "delete"})
WRITE_METHODS = frozenset({"put", "post", "patch", "delete"})


def _merge(target: dict, source: dict, where: str) -> None:
    for name, value in source.items():
        if isinstance(value, dict) and isinstance(target.get(name), dict):
            _merge(target[name], value, f"{where}.{name}")
        elif name in target:
            raise ValueError(f"OpenAPI fragments both define {where}.{name}")
        else:
            target[name] = value


@lru_cache(maxsize=1)
def _document() -> dict:
    import yaml  # only here: a worker that has served no API request does not hold PyYAML

    document = yaml.safe_load((HERE / "base.yaml").read_text())
    for fragment in FRAGMENTS:
        loaded = yaml.safe_load((HERE / f"{fragment}.yaml").read_text()) or {}
        _merge(document, loaded, fragment)
    for operations in document["paths"].values():
        for method in HTTP_METHODS.intersection(operations):
            # Any operation may meet a database outage; one that documents its own 503 keeps it.
            responses = operations[method]["responses"]
            responses.setdefault("503", {"$ref": "#/components/responses/DatabaseUnavailable"})
        for method in WRITE_METHODS.intersection(operations):
            _describe_idempotency(operations[method])
    return document


def _describe_idempotency(operation: dict) -> None:
    """Every write takes `Idempotency-Key` (api/idempotency.py): its header, its 409 and 422, and the replay
    header on its successful answers, added here so a new write cannot miss them."""
    operation["parameters"] = [{"$ref": "#/components/parameters/IdempotencyKey"}, *operation.get("parameters", [])]
    responses = operation["responses"]
    responses.setdefault("409", {"$ref": "#/components/responses/IdempotencyKeyInUse"})
    responses.setdefault("422", {"$ref": "#/components/responses/IdempotencyKeyReused"})
    for status, response in responses.items():
        if status.startswith("2") and "$ref" not in response:
            response.setdefault("headers", {})["Idempotent-Replayed"] = {
                "$ref": "#/components/headers/Idempotent-Replayed"}


def openapi_document(server_url: str | None = None) -> dict:
    """The document; with `server_url` (PUBLIC_BASE_URL when served) as its one `servers` entry."""
    document = copy.deepcopy(_document())
    if server_url:
        document["servers"] = [{"url": server_url.rstrip("/"), "description": "This Karibu service"}]
    return document


@lru_cache(maxsize=4)
def openapi_json_bytes(server_url: str) -> bytes:
    """The served document, serialised once per server URL (it is large and requested often)."""
    return json.dumps(openapi_document(server_url), ensure_ascii=False, separators=(",", ":")).encode()
