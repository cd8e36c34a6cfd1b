"""Usage for the portal: billed lookups per month and issuer, and the CSV export."""
from __future__ import annotations

import csv
import io
from datetime import datetime
from decimal import Decimal

import pytest
from sqlalchemy import update

from core.errors import InvalidInput
from core.db import db
from core.models import VerificationCharge
from core.scoping import InstitutionScope
from core.verification import usage_by_month, usage_csv
from devtools.simulated_records import SIMULATED_RECORDS
from tests.conftest import auth_header
from tests.verification.conftest import post_json

BY_REGISTRY = {code: [r for r in SIMULATED_RECORDS if r.registry == code] for code in ("NESA", "UNEB", "KNEC")}


def lookup(client, raw_key, record):
    return post_json(client, "/api/v1/verifications", record.request, auth_header(raw_key))


def test_usage_by_month_and_issuer(app, client, factory, live_registries, billed_institution):
    institution, raw_key = billed_institution
    for record in BY_REGISTRY["NESA"][:3] + BY_REGISTRY["KNEC"][:2]:
        assert lookup(client, raw_key, record).status_code == 200
    with app.app_context():  # move one NESA lookup to an earlier month
        oldest = db.session.scalars(db.select(VerificationCharge).where(VerificationCharge.issuer == "NESA")).first()
        db.session.execute(update(VerificationCharge).where(VerificationCharge.id == oldest.id)
                           .values(period="2026-01", created_at=datetime(2026, 1, 15, 9, 30)))
        db.session.commit()
    other = factory.institution()
    _, other_key = factory.api_key(other)
    lookup(client, other_key, BY_REGISTRY["UNEB"][0])
    lookup(client, "sk_trial_demo", BY_REGISTRY["UNEB"][0])
    with app.app_context():
        usage = usage_by_month(InstitutionScope(institution.id))
        current = usage[0]["month"]
        assert usage == [
            {"month": current, "issuer": "KNEC", "lookups": 2, "amount": Decimal("5.50"), "currency": "EUR"},
            {"month": current, "issuer": "NESA", "lookups": 2, "amount": Decimal("5.50"), "currency": "EUR"},
            {"month": "2026-01", "issuer": "NESA", "lookups": 1, "amount": Decimal("2.75"), "currency": "EUR"},
        ]
        assert [row["issuer"] for row in usage_by_month(InstitutionScope(other.id))] == ["UNEB"]


def test_usage_csv_lists_every_billed_lookup_newest_first(app, client, live_registries, billed_institution):
    institution, raw_key = billed_institution
    lookup(client, raw_key, BY_REGISTRY["UNEB"][0])
    post_json(client, "/api/v1/verifications",
              {"issuer": "KNEC", "index_number": "00000000001", "year": "2022", "examination": "KCSE"},
              auth_header(raw_key))
    scope = InstitutionScope(institution.id)
    with app.app_context():
        rows = list(csv.DictReader(io.StringIO("".join(usage_csv(scope)))))
        month = usage_by_month(scope)[0]["month"]
        assert len(list(csv.reader(io.StringIO("".join(usage_csv(scope, month=month)))))) == 3
        assert list(usage_csv(scope, month="2020-01")) == [
            "id,created_at,issuer,level,outcome,amount,currency,api_key_id,actor\r\n"]
        with pytest.raises(InvalidInput, match="month must be YYYY-MM"):
            list(usage_csv(scope, month="2026-13"))
    assert [(row["issuer"], row["outcome"], row["amount"], row["currency"]) for row in rows] == [
        ("KNEC", "not_found", "2.75", "EUR"), ("UNEB", "authentic", "2.75", "EUR")]
    assert all(row["created_at"].endswith("Z") and row["actor"].startswith("sk_live_") for row in rows)
    assert all(row["id"].startswith("vch_") for row in rows)
