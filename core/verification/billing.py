"""The billing ledger: one row per billed live lookup, price from the institution's agreement."""
from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import bindparam, func, insert, select

from core.errors import InvalidInput
from core.db import db
from core.models import Institution, new_id, utcnow
from core.models.verification import VerificationCharge
from core.scoping import InstitutionScope
from core.timefmt import isoformat_z

MONTH_PATTERN = re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$")
CSV_COLUMNS = ("id", "created_at", "issuer", "level", "outcome", "amount", "currency", "api_key_id", "actor")


@dataclass(frozen=True)
class Price:
    amount: Decimal
    currency: str


def agreement_price(scope: InstitutionScope, default_price: Decimal, default_currency: str) -> Price:
    institution = scope.institution()
    amount = institution.verification_price if institution and institution.verification_price is not None \
        else default_price
    currency = institution.verification_currency if institution and institution.verification_currency \
        else default_currency
    return Price(amount=Decimal(amount).quantize(Decimal("0.01")), currency=currency)


def identifiers_hash(key: bytes, issuer: str, identifiers: dict[str, str]) -> str:
    """Keyed hash of what was looked up: stable for matching, useless for recovering a national id."""
    canonical = json.dumps({"issuer": issuer, **identifiers}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def add_charge(*, scope: InstitutionScope, api_key_id: str | None, actor: str, issuer: str, level: str,
               outcome: str, default_price: Decimal, default_currency: str, identifiers_digest: str,
               commit_now: bool) -> Price:
    """Write the ledger row at the institution's agreement price (else the default) and return that price.

    With `commit_now`, on PostgreSQL, it is committed by itself; otherwise the caller commits it.
    """
    now = utcnow()
    values = {
        "charge_id": new_id("vch"), "charged_institution": scope.institution_id, "api_key_id": api_key_id,
        "actor": actor[:100], "issuer": issuer, "level": level, "outcome": outcome, "default_price": default_price,
        "default_currency": default_currency, "identifiers_hash": identifiers_digest, "period": now.strftime("%Y-%m"),
        "created_at": now,
    }
    if commit_now and db.engine.dialect.name == "postgresql":
        with db.engine.connect() as pooled:
            amount, currency = pooled.execution_options(isolation_level="AUTOCOMMIT").execute(
                _ADD_CHARGE, values).one()
    else:
        amount, currency = db.session.execute(_ADD_CHARGE, values).one()
    return Price(amount=Decimal(amount).quantize(Decimal("0.01")), currency=currency)


def _add_charge_statement():
    institutions, charges = Institution.__table__, VerificationCharge.__table__
    row = {
        "id": bindparam("charge_id", type_=charges.c.id.type), "institution_id": institutions.c.id,
        **{name: bindparam(name, type_=charges.c[name].type)
           for name in ("api_key_id", "actor", "issuer", "level", "outcome", "identifiers_hash", "period",
                        "created_at")},
        "amount": func.round(func.coalesce(institutions.c.verification_price,
                                           bindparam("default_price", type_=charges.c.amount.type)), 2),
        "currency": func.coalesce(func.nullif(institutions.c.verification_currency, ""),
                                  bindparam("default_currency", type_=charges.c.currency.type)),
    }
    return (insert(charges)
            .from_select(list(row), select(*row.values())
                         .where(institutions.c.id == bindparam("charged_institution", type_=institutions.c.id.type)))
            .returning(charges.c.amount, charges.c.currency))


_ADD_CHARGE = _add_charge_statement()


def usage_by_month(scope: InstitutionScope) -> list[dict]:
    """Billed lookups and spend per month, issuer and currency, newest month first (`month`, `issuer`, `lookups`, …)."""
    statement = (
        scope.select(VerificationCharge, VerificationCharge.period, VerificationCharge.issuer,
                     VerificationCharge.currency, func.count(VerificationCharge.id),
                     func.sum(VerificationCharge.amount))
        .group_by(VerificationCharge.period, VerificationCharge.issuer, VerificationCharge.currency)
        .order_by(VerificationCharge.period.desc(), VerificationCharge.issuer, VerificationCharge.currency)
    )
    return [
        {"month": period, "issuer": issuer, "lookups": count,
         "amount": Decimal(total or 0).quantize(Decimal("0.01")), "currency": currency}
        for period, issuer, currency, count, total in db.session.execute(statement)
    ]


def usage_csv(scope: InstitutionScope, month: str | None = None) -> Iterator[str]:
    """The ledger as CSV lines (header first, newest lookup first), streamed; `month` (`YYYY-MM`) limits it to one."""
    if month is not None and not (isinstance(month, str) and MONTH_PATTERN.match(month)):
        raise InvalidInput("month must be YYYY-MM, such as 2026-11", parameter="month")
    columns = (VerificationCharge.id, VerificationCharge.created_at, VerificationCharge.issuer,
               VerificationCharge.level, VerificationCharge.outcome, VerificationCharge.amount,
               VerificationCharge.currency, VerificationCharge.api_key_id, VerificationCharge.actor)
    statement = scope.select(VerificationCharge, *columns)
    if month is not None:
        statement = statement.where(VerificationCharge.period == month)
    statement = statement.order_by(VerificationCharge.created_at.desc(), VerificationCharge.id.desc())
    yield _csv_line(CSV_COLUMNS)
    # Rows are read on a connection of the generator's own: the request's session may be committed or closed
    # while the response streams (the portal serves this after its view returned).
    with db.engine.connect() as connection:
        for charge_id, created_at, issuer, level, outcome, amount, currency, api_key_id, actor in \
                connection.execution_options(yield_per=500).execute(statement):
            yield _csv_line((charge_id, isoformat_z(created_at.replace(microsecond=0)), issuer, level, outcome,
                             f"{amount:.2f}", currency, api_key_id or "", actor))


def _csv_line(values) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(values)
    return buffer.getvalue()
