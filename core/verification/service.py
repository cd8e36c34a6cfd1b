"""Verifying a record: `verify()` returns a `VerificationResult` or raises RecordNotFound, ServiceUnavailable or
InvalidInput; live principals are billed, the trial key never.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from decimal import Decimal

from core.config import settings
from core.errors import NotFound, ServiceUnavailable
from core.db import db
from core.idempotency import keys as idempotency_keys
from core.metrics import REGISTRY_LATENCY, VERIFICATION_LOOKUPS
from core.scoping import InstitutionScope
from core.verification.adapters import ADAPTERS, RegistryAdapter, RegistryAnswer, RegistryUnavailable
from core.verification.billing import add_charge, agreement_price, identifiers_hash
from core.verification.demo import demo_requests, find_demo_record
from core.verification.exam_records import OUTCOME_NOT_FOUND
from core.verification.registries import REGISTRIES, Registry
from core.verification.settings import VerificationSettings
from core.verification.validation import validate_request

RECORD_NOT_FOUND = "Record not found"
REGISTRY_UNAVAILABLE = "Registry unavailable"
TRIAL_SCOPE = "trial"


class RecordNotFound(NotFound):
    """404 with the verification not-found shape (docs/contract.md): `message`, `issuer` and `billing` next to `code` and `error`."""

    def __init__(self, body: dict):
        super().__init__(body["error"])
        # Set directly: `message` is a field of this body but also KaribuError's own argument name.
        self.extra = {name: value for name, value in body.items() if name not in ("code", "error")}


class RegistryUnavailableError(ServiceUnavailable):
    """503 `Registry unavailable` with `message`, `issuer` and `billing` (never charged)."""

    def __init__(self, registry: Registry, billing: dict):
        super().__init__(REGISTRY_UNAVAILABLE)
        self.extra = {"message": f"{registry.name} did not answer; nothing was charged. Retry later.",
                      "issuer": registry.issuer(), "billing": billing}


@dataclass(frozen=True)
class VerificationResult:
    body: dict


def list_issuers(include_demo: bool = False) -> list[dict]:
    """Every registry with its request fields; with `include_demo`, request bodies matching demo records."""
    issuers = []
    for registry in REGISTRIES.values():
        described = {**registry.issuer(), "fields": [spec.public() for spec in registry.fields]}
        if include_demo:
            described["demo_requests"] = demo_requests(registry.code)
        issuers.append(described)
    return issuers


def current_settings() -> VerificationSettings:
    return VerificationSettings.from_settings(settings(), REGISTRIES)


def verify(principal, body: object, settings: VerificationSettings | None = None) -> VerificationResult:
    """Look the record up (live principals are billed); with an `Idempotency-Key` claimed for this request, its
    answer is stored in the transaction of the charge, so the two are kept or lost together."""
    settings = settings or current_settings()
    registry, identifiers = validate_request(body)
    if principal.is_trial or not principal.livemode:  # test mode: the demo records, never billed
        status, response = _trial_answer(registry, identifiers, settings)
    else:
        status, response = _live_answer(principal, registry, identifiers, settings)
    idempotency_keys.store_answer(status, "application/json", json.dumps(response).encode())
    db.session.commit()
    if status == 404:
        raise RecordNotFound(response)
    return VerificationResult(response)


def replayed_answer(body: dict) -> dict:
    """A stored verification answer as replayed: nothing is billed for the repeated request."""
    return {**body, "billing": {**body["billing"], "charged": False, "amount": 0}}


def _trial_answer(registry: Registry, identifiers: dict[str, str],
                  settings: VerificationSettings) -> tuple[int, dict]:
    record = find_demo_record(registry.code, identifiers)
    billing = _billing(charged=False, amount=Decimal(0), currency=settings.default_currency)
    VERIFICATION_LOOKUPS.labels(registry.code, "trial", record.result if record else OUTCOME_NOT_FOUND).inc()
    if record is None:
        return 404, _not_found_body(registry, billing)
    return 200, _success_body(registry, RegistryAnswer(record.result, record), billing)


def _live_answer(principal, registry: Registry, identifiers: dict[str, str],
                 settings: VerificationSettings) -> tuple[int, dict]:
    started = time.perf_counter()
    try:
        answer = adapter_for(registry.code, settings).lookup(identifiers)
    except RegistryUnavailable:
        REGISTRY_LATENCY.labels(registry.code).observe(time.perf_counter() - started)
        VERIFICATION_LOOKUPS.labels(registry.code, "live", "unavailable").inc()
        raise RegistryUnavailableError(registry, _billing(
            charged=False, amount=Decimal(0), currency=_currency_of(principal, settings))) from None
    REGISTRY_LATENCY.labels(registry.code).observe(time.perf_counter() - started)
    VERIFICATION_LOOKUPS.labels(registry.code, "live", answer.outcome).inc()
    price = add_charge(scope=InstitutionScope(principal.institution_id), api_key_id=principal.key_id,
                       actor=principal.actor, issuer=registry.code, level=identifiers[registry.level_field],
                       outcome=answer.outcome, default_price=settings.default_price,
                       default_currency=settings.default_currency,
                       identifiers_digest=identifiers_hash(settings.hash_key, registry.code, identifiers),
                       commit_now=idempotency_keys.CURRENT_CLAIM.get() is None)
    billing = _billing(charged=True, amount=price.amount, currency=price.currency)
    if answer.outcome == OUTCOME_NOT_FOUND:
        return 404, _not_found_body(registry, billing)
    return 200, _success_body(registry, answer, billing)


def _currency_of(principal, settings: VerificationSettings) -> str:
    price = agreement_price(InstitutionScope(principal.institution_id), settings.default_price,
                            settings.default_currency)
    return price.currency


def _billing(*, charged: bool, amount: Decimal, currency: str) -> dict:
    return {"charged": charged, "amount": float(amount), "currency": currency}


def _success_body(registry: Registry, answer: RegistryAnswer, billing: dict) -> dict:
    return {"code": 200, "result": answer.outcome, "issuer": registry.issuer(),
            "record": answer.record.response_record(), "billing": billing}


def _not_found_body(registry: Registry, billing: dict) -> dict:
    return {"code": 404, "error": RECORD_NOT_FOUND, "message": f"{registry.name} has no matching record",
            "issuer": registry.issuer(), "billing": billing}


_adapters: dict[tuple, RegistryAdapter] = {}


def adapter_for(code: str, settings: VerificationSettings) -> RegistryAdapter:
    """One adapter (and so one keep-alive session per thread) per registry endpoint, reused across requests."""
    endpoint = settings.endpoints[code]
    cache_key = (code, endpoint)
    adapter = _adapters.get(cache_key)
    if adapter is None:
        adapter = _adapters[cache_key] = ADAPTERS[code](endpoint)
    return adapter
