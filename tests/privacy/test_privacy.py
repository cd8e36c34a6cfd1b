"""Data-subject requests: export holds every kind of record of one applicant and nothing of another; erase
leaves no trace of the person in a full database dump while counts and billing stay."""
from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import zipfile
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select

from core.applications.credential_checks import record_check
from core.applications.decision_answers import record_decision_response
from core.applications.documents import document_storage
from core.events.emission import emit_application_submitted
from core.db import db
from core.models import Application, AuditLog, Decision, Document, Event, Payment
from core.models.verification import VerificationCharge
from core.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.scoping import InstitutionScope
from tests.conftest import TEST_DB, auth_header
from tests.portal.conftest import Portal, csrf_token, sign_in

CANARY_FIRST, CANARY_LAST = "Zephyrine", "Canarywood"
CANARY_EMAIL = "zephyrine.canarywood@example.org"
CANARY_PHONE = "+250700123987"
CANARY_DOCUMENT = b"%PDF-1.4 transcript of Zephyrine Canarywood (canary bytes)"


def _person(app, factory, institution, api_key, first, last, email, phone, document_bytes):
    """An applicant with an application, a payment, a sent decision, a document, a verification check, an
    application.submitted event delivered with names (and a receiver that echoed them), and audit rows."""
    application = factory.application(institution, first_name=first, last_name=last, email=email, paid=True)
    with app.app_context():
        scope = InstitutionScope(institution.id)
        row = db.session.get(Application, application.id)
        row.applicant.phone = phone
        emit_application_submitted(row)
        db.session.flush()
        delivery = db.session.scalars(select(WebhookDelivery).where(
            WebhookDelivery.event_id == select(Event.id).where(Event.subject_id == application.id)
            .scalar_subquery())).one()
        db.session.add(WebhookAttempt(delivery_id=delivery.id, number=1, url="https://hooks.example.test/k",
                                      attempted_at=row.submitted_at, duration_ms=3, response_code=500,
                                      error_class="http_status", response_excerpt=f"bad applicant {first} {last}",
                                      response_headers=[["X-Rejected-Applicant", f"{first} {last}"]]))
        digest = document_storage().put(document_bytes)
        db.session.add(Document(institution_id=institution.id, application_id=application.id, kind="transcript",
                                filename=f"{first.lower()}-{last.lower()}-transcript.pdf",
                                content_type="application/pdf", size=len(document_bytes), sha256=digest))
        db.session.commit()
        record_check(scope, application.id, issuer="nesa", level="a_level", actor="registrar@example.ac.rw",
                     answer={"result": "authentic", "record": {"id": f"REF-{last}",
                                                              "candidate": {"full_name": f"{first} {last}"}}})
    return application


@pytest.fixture
def people(app, factory, client):
    institution = factory.institution()
    _, raw_key = factory.api_key(institution)
    with app.app_context():
        db.session.add(WebhookEndpoint(institution_id=institution.id, url="https://hooks.example.test/k",
                                       event_types=["application.submitted"], include_applicant_name=True,
                                       secret_ciphertext="x"))
        db.session.add(VerificationCharge(institution_id=institution.id, actor="key", issuer="nesa", level="a",
                                          outcome="authentic", amount=Decimal("1.50"), currency="USD",
                                          identifiers_hash="h" * 64, period="2026-11"))
        db.session.commit()
    canary = _person(app, factory, institution, raw_key, CANARY_FIRST, CANARY_LAST, CANARY_EMAIL, CANARY_PHONE,
                     CANARY_DOCUMENT)
    other = _person(app, factory, institution, raw_key, "Otieno", "Kamau", "otieno.kamau@example.org",
                    "+254700555111", b"%PDF-1.4 other applicant's transcript")
    # A sent decision for the canary (awaiting the answer), and a search naming them (audited).
    response = client.patch("/api/v1/applications/update", headers=auth_header(raw_key), json={
        "updates": [{"id": canary.id, "decision": "accepted", "send_decision": True}]})
    assert response.status_code == 200, response.json
    assert client.get(f"/api/v1/applications/search?q={CANARY_LAST}", headers=auth_header(raw_key)).json[
        "data"][0]["id"] == canary.id
    return institution, raw_key, canary, other


def _export(app, institution, application_id, tmp_path) -> zipfile.ZipFile:
    out = tmp_path / "export.zip"
    result = app.test_cli_runner().invoke(args=[
        "applicants", "export", application_id, "--institution", institution.id, "--out", str(out),
        "--requested-by", "dpo@example.ac.rw", "--reason", "Applicant's request of 3 March, ticket 42"])
    assert result.exit_code == 0, result.output
    return zipfile.ZipFile(out)


def test_export_holds_every_kind_of_record_of_one_applicant_and_nothing_of_another(app, factory, people, tmp_path):
    institution, _, canary, other = people
    admin = _admin(app, factory, institution)
    assert admin.get(f"/applicants/{canary.id}").status_code == 200
    assert admin.get(f"/applicants/{other.id}").status_code == 200
    archive = _export(app, institution, canary.id, tmp_path)
    document = json.loads(archive.read("applicant.json"))
    assert document["format"] == "karibu.applicant-export.v2"
    assert document["applicant"]["first_name"] == CANARY_FIRST and document["applicant"]["phone"] == CANARY_PHONE
    [application] = document["applications"]
    assert application["id"] == canary.id
    assert "search_text" not in application and "search_text" not in document["applicant"]  # the index's copy
    assert [d["status"] for d in application["decisions"]] == ["accepted"]
    assert application["decisions"][0]["sent_at"] and "response" in application["decisions"][0]
    assert [p["status"] for p in application["payments"]] == ["completed"]
    [stored] = application["documents"]
    assert archive.read(stored["file"]) == CANARY_DOCUMENT
    assert [c["candidate_name"] for c in application["verification_checks"]] == [f"{CANARY_FIRST} {CANARY_LAST}"]
    assert {e["type"] for e in application["events"]} >= {"application.submitted", "decision.sent"}
    [email] = application["messages"]  # the decision email, as it was written
    assert (email["channel"], email["recipient"], email["template"]) == ("email", CANARY_EMAIL, "decision")
    assert CANARY_FIRST in email["body_text"] and "lease_token" not in email
    actions = {row["action"] for row in document["audit_log"]}
    assert {"api.search_applications", "applicant.view"} <= actions
    assert all(canary.id in row["target"] + row["path"] or CANARY_LAST in row["query"]
               for row in document["audit_log"])

    everything = b"".join(archive.read(name) for name in archive.namelist()).decode("utf-8", "replace")
    for trace in (other.id, other.applicant_id, "Otieno", "Kamau", "otieno.kamau@example.org", "+254700555111",
                  "other applicant's transcript"):
        assert trace not in everything

    with app.app_context():  # the export itself is audited: who asked and why
        row = db.session.scalars(select(AuditLog).where(AuditLog.action == "applicant.export")).one()
        assert row.actor == "cli:dpo@example.ac.rw" and "ticket 42" in row.detail
        assert row.target == canary.applicant_id


def _database_dump(app, database_url: str) -> str:
    if TEST_DB == "postgres":
        parts = urlsplit(database_url.replace("postgresql+psycopg", "postgresql"))
        return subprocess.run(["pg_dump", "--no-owner", "-h", parts.hostname, "-p", str(parts.port or 5432),
                               "-U", parts.username, parts.path.lstrip("/")], capture_output=True, text=True,
                              check=True).stdout
    connection = sqlite3.connect(database_url.removeprefix("sqlite:///"))
    try:
        return "\n".join(connection.iterdump())
    finally:
        connection.close()


def _counts(app, institution) -> dict:
    with app.app_context():
        counts = {model.__tablename__: db.session.scalar(
            select(func.count()).select_from(model).where(model.institution_id == institution.id))
            for model in (Application, Payment, Decision, Event, WebhookDelivery, VerificationCharge)}
        db.session.rollback()
        return counts


def _admin(app, factory, institution) -> Portal:
    user = factory.user(institution, role="admin")
    client = app.test_client()
    assert sign_in(client, user.email).status_code == 302
    return Portal(client=client, user=user, institution=institution, token=csrf_token(client, "/dashboard"))


def test_erase_leaves_no_trace_of_the_person_while_counts_and_billing_stay(app, factory, people, client,
                                                                          database_url):
    institution, raw_key, canary, other = people
    admin = _admin(app, factory, institution)
    before = _counts(app, institution)
    assert CANARY_LAST in _database_dump(app, database_url)  # the canary is there to be found
    page = admin.get(f"/applicants/{canary.id}/privacy")
    assert page.status_code == 200 and "awaits" in page.get_data(as_text=True)

    form = {"reason": f"{CANARY_FIRST} {CANARY_LAST} asked by email on 3 March", "confirm": "ERASE"}
    refused = admin.post(f"/applicants/{canary.id}/privacy/erase", data=form)
    assert refused.status_code == 409 and "awaits" in refused.get_data(as_text=True)
    assert admin.post(f"/applicants/{canary.id}/privacy/erase",
                      data={**form, "confirm": "erase"}).status_code == 400  # the confirmation is exact

    with app.app_context():
        decision = db.session.scalars(select(Decision).where(Decision.application_id == canary.id)).one()
        record_decision_response(decision.id, "accepted")  # answered: no force needed any more
    after_answer = _counts(app, institution)
    erased = admin.post(f"/applicants/{canary.id}/privacy/erase", data=form)
    assert erased.status_code == 302

    dump = _database_dump(app, database_url).lower()
    for trace in (CANARY_FIRST, CANARY_LAST, CANARY_EMAIL, CANARY_PHONE, "zephyrine.canarywood%40example.org"):
        assert trace.lower() not in dump, trace
    assert "otieno" in dump and "kamau" in dump  # the other applicant is untouched
    stored = [path.read_bytes() for path in Path(app.config["DOCUMENT_STORAGE_DIR"]).rglob("*") if path.is_file()]
    assert CANARY_DOCUMENT not in stored and b"%PDF-1.4 other applicant's transcript" in stored

    # Ids, applications, decisions, payments, events and the billing ledger stay; no new event or webhook.
    assert _counts(app, institution) == after_answer
    assert after_answer["applications"] == before["applications"]
    assert after_answer["verification_charges"] == before["verification_charges"] == 1
    with app.app_context():
        row = db.session.scalars(select(AuditLog).where(AuditLog.action == "applicant.erase")).one()
        assert row.actor == admin.user.email and row.source == "portal" and row.target == canary.applicant_id
        assert "asked by email on 3 March" in row.detail

    # Out of search (by name and by id) and of exports; the record itself is a tombstone.
    search = client.get(f"/api/v1/applications/search?q={CANARY_LAST}", headers=auth_header(raw_key))
    assert search.status_code == 200 and search.json["data"] == []
    by_id = client.get(f"/api/v1/applications/search?q={canary.id}", headers=auth_header(raw_key))
    assert by_id.json["data"] == []
    # The partner's list keeps the tombstone (so a partner syncing by updated_since learns of the erasure).
    listed = client.get("/api/v1/applications?limit=1000", headers=auth_header(raw_key)).json["data"]
    [tombstone] = [record for record in listed if record["id"] == canary.id]
    assert tombstone["personal"]["first_name"] == "[erased]" and tombstone["personal"]["phone"] is None
    portal_csv = admin.get("/applicants/export.csv").get_data(as_text=True)
    assert canary.id not in portal_csv and other.id in portal_csv
    assert admin.post(f"/applicants/{canary.id}/privacy/erase", data=form).status_code == 409  # already erased


def test_cli_erase_refuses_while_a_decision_awaits_unless_forced(app, people):
    institution, _, canary, _ = people
    runner = app.test_cli_runner()
    args = ["applicants", "erase", canary.applicant_id, "--institution", institution.id,
            "--requested-by", "dpo@example.ac.rw", "--reason", "Request 7", "--json"]
    refused = runner.invoke(args=args)
    assert refused.exit_code == 1 and "awaits" in refused.output
    forced = runner.invoke(args=[*args, "--force"])
    assert forced.exit_code == 0, forced.output
    report = json.loads(forced.output)
    assert report["forced"] is True and report["documents_deleted"] == 1 and report["events_scrubbed"] == 1
    with app.app_context():
        row = db.session.scalars(select(AuditLog).where(AuditLog.action == "applicant.erase")).one()
        assert "forced" in row.detail and row.actor == "cli:dpo@example.ac.rw"


def test_portal_requests_are_for_admins_and_need_a_reason(app, factory, people, portal_as):
    institution, _, canary, _ = people
    staff = portal_as("staff", institution=institution)
    assert staff.get(f"/applicants/{canary.id}/privacy").status_code == 403
    assert staff.post(f"/applicants/{canary.id}/privacy/export", data={"reason": "x"}).status_code == 403
    admin = _admin(app, factory, institution)
    assert admin.post(f"/applicants/{canary.id}/privacy/export", data={"reason": ""}).status_code == 400
    response = admin.post(f"/applicants/{canary.id}/privacy/export", data={"reason": "Request 9"})
    assert response.status_code == 200 and response.mimetype == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.get_data()))
    assert json.loads(archive.read("applicant.json"))["applications"][0]["id"] == canary.id
    other_institution = factory.institution()
    foreign = _admin(app, factory, other_institution)
    assert foreign.get(f"/applicants/{canary.id}/privacy").status_code == 404
