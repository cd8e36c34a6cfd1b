"""JSON Schemas of verification request bodies, derived from the registry definitions.

The OpenAPI fragment (api/openapi/verifications.yaml) must hold exactly these: `test_openapi_sync` compares
them, so the document cannot drift from what validation enforces.
"""
from __future__ import annotations

from core.verification.registries import REGISTRIES, Registry


def request_schema(registry: Registry) -> dict:
    properties = {"issuer": {"type": "string", "const": registry.code, "description": "Registry codename"}}
    for spec in registry.fields:
        described = {"type": "string", "description": spec.description, "examples": [spec.example]}
        if spec.pattern:
            described["pattern"] = spec.pattern
        if spec.enum:
            described["enum"] = list(spec.enum)
        if spec.is_year:
            described["description"] += " (4 digits, not in the future)"
        properties[spec.name] = described
    return {
        "type": "object",
        "title": f"{registry.code} ({registry.country})",
        "description": f"{registry.name}. Exactly these fields; candidate names are never sent.",
        "additionalProperties": False,
        "required": ["issuer", *(spec.name for spec in registry.fields if spec.required)],
        "properties": properties,
    }


def request_schemas() -> dict[str, dict]:
    """Component schemas by name: one per registry plus the `VerificationRequest` union."""
    schemas = {f"VerificationRequest{code}": request_schema(registry) for code, registry in REGISTRIES.items()}
    schemas["VerificationRequest"] = {
        "description": "The issuer's own fields, as listed by GET /api/v1/verifications/issuers.",
        "oneOf": [{"$ref": f"#/components/schemas/VerificationRequest{code}"} for code in REGISTRIES],
        "discriminator": {"propertyName": "issuer", "mapping": {
            code: f"#/components/schemas/VerificationRequest{code}" for code in REGISTRIES}},
    }
    return schemas
