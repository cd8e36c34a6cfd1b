"""Validation of `POST /verifications` bodies against the registry definitions, every problem reported at once;
the fields come back in canonical form.
"""
from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, ValidationError, create_model

from core.errors import InvalidInput, problem
from core.verification.registries import CANDIDATE_NAME_FIELDS, REGISTRIES, FieldSpec, Registry

INVALID_REQUEST = "Invalid verification request"


def validate_request(body: object) -> tuple[Registry, dict[str, str]]:
    """Return the registry and its validated identifier fields, or raise InvalidInput listing every problem."""
    if not isinstance(body, dict):
        raise InvalidInput(INVALID_REQUEST, errors=[problem("body", "body", "must be a JSON object")])
    problems: list[dict[str, str]] = []
    registry = _registry_for(body.get("issuer", None), "issuer" in body, problems)
    identifiers = {key: value for key, value in body.items() if key != "issuer"}
    if registry is None:
        problems.extend(_name_problems(identifiers))
        raise InvalidInput(INVALID_REQUEST, errors=problems)
    identifiers = _canonical(registry, identifiers)
    try:
        validated = _request_model(registry.code).model_validate(identifiers)
    except ValidationError as error:
        problems.extend(_field_problems(registry, identifiers, error))
    if problems:
        raise InvalidInput(INVALID_REQUEST, errors=problems)
    return registry, validated.model_dump()


def _canonical(registry: Registry, identifiers: dict) -> dict:
    """Trim text, accept a year given as a number, and spell enumerated values as the registry does."""
    canonical = {}
    for name, value in identifiers.items():
        spec = next((spec for spec in registry.fields if spec.name == name), None)
        if isinstance(value, str):
            value = value.strip()
        elif spec is not None and spec.is_year and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if spec is not None and spec.enum and isinstance(value, str):
            value = next((allowed for allowed in spec.enum if allowed.lower() == value.lower()), value)
        canonical[name] = value
    return canonical


def _registry_for(issuer: object, present: bool, problems: list[dict[str, str]]) -> Registry | None:
    known = ", ".join(REGISTRIES)
    if not present:
        problems.append(problem("body", "issuer", f"is required: one of {known}"))
    elif not isinstance(issuer, str):
        problems.append(problem("body", "issuer", f"must be a string: one of {known}"))
    elif issuer.strip().upper() not in REGISTRIES:
        problems.append(problem("body", "issuer", f"unknown issuer '{issuer[:40]}': expected one of {known}"))
    else:
        return REGISTRIES[issuer.strip().upper()]
    return None


def _name_problems(identifiers: dict) -> list[dict[str, str]]:
    return [
        problem("body", key, "candidate names are never sent; the registry returns them")
        for key in identifiers if key.lower() in CANDIDATE_NAME_FIELDS
    ]


def _field_problems(registry: Registry, identifiers: dict, error: ValidationError) -> list[dict[str, str]]:
    by_field: dict[str, str] = {}
    for detail in error.errors():
        name = str(detail["loc"][0]) if detail["loc"] else "body"
        by_field.setdefault(name, _message(registry, name, detail))
    ordered = [name for name in registry.field_names if name in by_field]
    ordered += [name for name in identifiers if name in by_field and name not in registry.field_names]
    return [problem("body", name, by_field[name]) for name in ordered]


def _message(registry: Registry, name: str, detail: dict) -> str:
    kind = detail["type"]
    spec = next((spec for spec in registry.fields if spec.name == name), None)
    if kind == "extra_forbidden":
        if name.lower() in CANDIDATE_NAME_FIELDS:
            return "candidate names are never sent; the registry returns them"
        return _not_a_field(registry, name)
    if kind == "missing":
        return f"is required for {registry.code}" + (f": one of {', '.join(spec.enum)}" if spec and spec.enum else "")
    if kind == "string_type":
        return "must be a string"
    if kind == "literal_error" and spec is not None:
        return f"must be one of {', '.join(spec.enum)}"
    if kind == "string_pattern_mismatch" and spec is not None:
        return spec.pattern_message or f"must match {spec.pattern}"
    if kind == "value_error":
        return str(detail.get("ctx", {}).get("error", detail["msg"]))
    return detail["msg"]


def _not_a_field(registry: Registry, name: str) -> str:
    """Names the fields `registry` takes; a level sent under another registry's name for it (KNEC's
    `examination`, NESA's and UNEB's `level`) is said plainly."""
    takes = f"{registry.code} takes {', '.join(registry.field_names)}"
    others = [other.code for other in REGISTRIES.values() if other.level_field == name != registry.level_field]
    if others:
        return (f"is not a field of {registry.code}: {registry.code} calls the examination level "
                f"{registry.level_field} ({', '.join(registry.levels)}) where {' and '.join(others)} "
                f"{'call' if len(others) > 1 else 'calls'} it {name}; {takes}")
    return f"is not a field of {registry.code}: {takes}"


def _not_in_future(value: str) -> str:
    if int(value) > datetime.now(timezone.utc).year:
        raise ValueError("must not be in the future")
    return value


def _annotation(spec: FieldSpec):
    if spec.enum:
        return Literal[spec.enum]
    annotation = Annotated[StrictStr, Field(pattern=spec.pattern)] if spec.pattern else StrictStr
    if spec.is_year:
        annotation = Annotated[annotation, AfterValidator(_not_in_future)]
    return annotation


@lru_cache(maxsize=None)
def _request_model(code: str) -> type[BaseModel]:
    registry = REGISTRIES[code]
    definitions = {
        spec.name: (_annotation(spec), ... if spec.required else None) for spec in registry.fields
    }
    return create_model(
        f"{code}VerificationRequest",
        __config__=ConfigDict(extra="forbid", strict=True),
        **definitions,
    )
