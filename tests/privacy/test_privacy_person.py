"""Data-subject requests for the whole person: the apply form links a second application to the applicant of
the same email, export and erase find every record of the person (same email or phone, transitively), and
after one erase no table of the database holds their name, email or phone, while another person is intact."""
from __future__ import annotations

import json
import re
import zipfile
from decimal import Decimal

import pytest
from sqlalchemy import select

from core.db import db
from core.models import Applicant, Application, AuditLog, Payment, SavedView, utcnow
from core.models.webhooks import WebhookEndpoint
from tests.conftest import auth_header
from tests.portal.bulk_confirmation import confirmed
from tests.portal.conftest import Portal, csrf_token, sign_in

FIRST, LAST = "Nyokabi", "Wanjirugathu"
EMAIL = "nyokabi.wanjirugathu@example.org"
PHONE = "+254711222333"
SECOND_EMAIL = "kabi.w@mail.example.net"
LEGACY_EMAIL = "n.wanjirugathu@school.example.ac.ke"
OTHER = {"first_name": "Otieno", "last_name": "Kamau", "email": "otieno.kamau@example.org",
         "phone": "+254700555111"}
_HIDDEN_CSRF = re.compile(r'name="csrf_token"[^>]*value="([^"]+)"|value="([^"]+)"[^>]*name="csrf_token"')


def _apply(client, institution, cycle, program, **person) -> int:
    page = client.get(f"/apply/{institution.id}")
    match = _HIDDEN_CSRF.search(page.get_data(as_text=True))
    assert match, "the apply form has no CSRF token"
    token = next(group for group in match.groups() if group)
    response = client.post(f"/apply/{institution.id}", data={
        "csrf_token": token, "cycle_id": cycle.id, "program_id": program.id, "language": "en", **person})
    return response.status_code


def _records(app, institution) -> dict[str, tuple[str, str, str | None]]:
    """Application id -> (applicant id, email, phone) for the institution."""
    with app.app_context():
        rows = db.session.execute(select(Application.id, Applicant.id, Applicant.email, Applicant.phone)
                                  .join(Applicant, Applicant.id == Application.applicant_id)
                                  .where(Application.institution_id == institution.id)).all()
        return {row[0]: tuple(row[1:]) for row in rows}


def _admin(app, factory, institution) -> Portal:
    user = factory.user(institution, role="admin")
    client = app.test_client()
    assert sign_in(client, user.email).status_code == 302
    return Portal(client=client, user=user, institution=institution, token=csrf_token(client, "/dashboard"))


def _whole_database(app) -> str:
    """Every row of every table, as text (lower-cased)."""
    with app.app_context():
        with db.engine.connect() as connection:
            return "\n".join(repr(tuple(row)) for table in db.metadata.sorted_tables
                             for row in connection.execute(table.select())).lower()


@pytest.fixture
def applied(app, factory):
    """The person applied three times through the public form: twice with one email (typed differently), then
    with another email and the same phone (typed differently); staff had entered them before with a third email
    and that phone written with separators; another person applied once."""
    institution = factory.institution()
    programs = [factory.program(institution, name=name) for name in ("BSc Nursing", "BA Law", "BSc Computing")]
    cycle = factory.cycle(institution, programs=programs, name="September intake")
    with app.app_context():
        db.session.add(WebhookEndpoint(institution_id=institution.id, url="https://hooks.example.test/k",
                                       event_types=["application.submitted"], include_applicant_name=True,
                                       secret_ciphertext="x"))
        db.session.commit()
    client = app.test_client()
    person = {"first_name": FIRST, "last_name": LAST, "email": EMAIL, "phone": "+254 711 222 333"}
    assert _apply(client, institution, cycle, programs[0], **person) == 302
    assert _apply(client, institution, cycle, programs[1], **{**person, "email": "  Nyokabi.Wanjirugathu@Example.ORG ",
                                                              "phone": "+254 799 000 111"}) == 302
    assert _apply(client, institution, cycle, programs[2], **{**person, "email": SECOND_EMAIL,
                                                              "phone": "+254-711-222-333"}) == 302
    assert _apply(client, institution, cycle, programs[0], **OTHER) == 302
    # An older record entered by staff, its phone stored with separators.
    factory.application(institution, program=programs[1], cycle=cycle, first_name=FIRST, last_name=LAST,
                        email=LEGACY_EMAIL, phone="+254 (711) 222-333", submitted_by_staff=True)
    return institution, cycle, programs


def test_the_apply_form_reuses_the_applicant_of_the_same_email(app, factory, applied):
    institution, cycle, programs = applied
    records = _records(app, institution)
    by_email: dict[str, set] = {}
    for applicant_id, email, phone in records.values():
        by_email.setdefault(email, set()).add((applicant_id, phone))
    # One record for both applications with the email; the phone it gave first is not changed by the second form.
    [(applicant_id, phone)] = by_email[EMAIL]
    assert phone == PHONE and [record[0] for record in records.values()].count(applicant_id) == 2
    [(second_id, _)] = by_email[SECOND_EMAIL]
    assert second_id != applicant_id and len(by_email) == 4
    # The same email again for a program it already applied to: refused, nothing written.
    client = app.test_client()
    assert _apply(client, institution, cycle, programs[0], first_name="Someone", last_name="Else",
                  email=EMAIL.upper(), phone="+254700000001") == 409
    assert len(_records(app, institution)) == 5
    # Another institution's form makes its own applicant.
    elsewhere = factory.institution()
    program = factory.program(elsewhere)
    other_cycle = factory.cycle(elsewhere, programs=[program])
    assert _apply(client, elsewhere, other_cycle, program, first_name=FIRST, last_name=LAST, email=EMAIL,
                  phone=PHONE) == 302
    [(applicant_id, _, _)] = _records(app, elsewhere).values()
    assert applicant_id not in {record[0] for record in records.values()}


def test_a_later_form_changes_nothing_the_applicant_gave_but_fills_a_missing_phone(app, factory):
    institution = factory.institution()
    program, other_program = factory.program(institution), factory.program(institution)
    cycle = factory.cycle(institution, programs=[program, other_program])
    earlier = factory.application(institution, program=program, cycle=cycle, first_name="Akinyi",
                                  last_name="Odhiambo", email="akinyi@example.org", phone=None, language="sw")
    assert _apply(app.test_client(), institution, cycle, other_program, first_name="Someone", last_name="Else",
                  email="AKINYI@example.org", phone="+254 733 444 555") == 302
    with app.app_context():
        applicant = db.session.get(Applicant, earlier.applicant_id)
        assert (applicant.first_name, applicant.last_name, applicant.phone, applicant.language) == (
            "Akinyi", "Odhiambo", "+254733444555", "sw")
        assert db.session.scalars(select(Application.applicant_id).where(
            Application.institution_id == institution.id)).all() == [applicant.id, applicant.id]


def test_export_and_erase_cover_every_record_of_the_person(app, factory, applied, tmp_path):
    institution, _, _ = applied
    records = _records(app, institution)
    mine = {application_id for application_id, (_, email, _) in records.items() if email != OTHER["email"]}
    [other_application] = set(records) - mine
    [third] = [application_id for application_id in mine if records[application_id][1] == SECOND_EMAIL]
    _, raw_key = factory.api_key(institution)
    api = app.test_client()
    # Partial and whole searches for the person, and one for the other person (all audited).
    for query in ("Wanjiru", "nyokabi wanj", EMAIL, "Kamau", "Kabiru"):
        assert api.get("/api/v1/applications/search", query_string={"q": query},
                       headers=auth_header(raw_key)).status_code == 200
    admin = _admin(app, factory, institution)
    # A decision email naming the person (sent: it awaits the answer).
    first = min(application_id for application_id in mine if records[application_id][1] == EMAIL)
    sent = api.patch("/api/v1/applications/update", headers=auth_header(raw_key), json={
        "updates": [{"id": first, "decision": "accepted", "send_decision": True}]})
    assert sent.status_code == 200, sent.json
    # A payment whose processor reference was built from the phone number (a Flutterwave tx_ref, say).
    with app.app_context():
        db.session.add(Payment(institution_id=institution.id, application_id=first, processor="flutterwave",
                               processor_reference=f"KRB-{PHONE.lstrip('+')}-1", amount=Decimal("45000"),
                               currency="RWF", status="completed", completed_at=utcnow()))
        db.session.commit()
    # Saved views of a staff member that filter for the person, and one for the other person.
    for name, query in ((f"{LAST} follow-up", "q=wanjirug"), ("Interviews", "q=nyok"), ("Kamau", "q=kamau")):
        assert admin.post("/applicants/views", data={"name": name, "query": query}).status_code == 302

    # Bulk changes of every application matching a search for the person, and for the other person.
    for search in ("wanjiru", "kamau"):
        assert confirmed(admin, "/applicants/bulk-matching", {"matching": f"q={search}", "stage": "interview"},
                         htmx=True).status_code == 200

    # The privacy page, opened from the third application (other email, same phone), lists what is erased.
    page = admin.get(f"/applicants/{third}/privacy").get_data(as_text=True)
    assert all(application_id in page for application_id in mine) and other_application not in page
    assert EMAIL in page and SECOND_EMAIL in page and LEGACY_EMAIL in page and "Otieno" not in page
    counts = dict(re.findall(r'data-kind="(\w+)"><td>[^<]+</td><td class="num">(\d+)</td>', page))
    assert counts["applicant_records"] == "3" and counts["applications"] == "4" and counts["messages"] == "1"
    assert counts["payments"] == "1" and counts["saved_views"] == "2" and counts["bulk_changes"] == "1"
    assert int(counts["events"]) >= 4 and int(counts["audit_rows"]) >= 3
    assert "Erase the personal data of 3 records" in page

    # The export (CLI, by the third application's id) holds every record of the person and none of the other.
    out = tmp_path / "person.zip"
    result = app.test_cli_runner().invoke(args=[
        "applicants", "export", third, "--institution", institution.id, "--out", str(out),
        "--requested-by", "dpo@example.ac.ke", "--reason", "Request of 3 March, ticket 77"])
    assert result.exit_code == 0, result.output
    document = json.loads(zipfile.ZipFile(out).read("applicant.json"))
    assert document["applicant"]["email"] == SECOND_EMAIL
    assert {row["email"] for row in document["applicants"]} == {EMAIL, SECOND_EMAIL, LEGACY_EMAIL}
    assert {row["id"] for row in document["applications"]} == mine
    searches = {row["query"] for row in document["audit_log"] if row["action"] == "api.search_applications"}
    assert searches == {"q=Wanjiru", "q=nyokabi+wanj", f"q={EMAIL.replace('@', '%40')}"}
    assert "Otieno" not in json.dumps(document) and "kamau" not in json.dumps(document).lower()

    erased = admin.post(f"/applicants/{third}/privacy/erase", data={
        "reason": f"{FIRST} {LAST} asked by email", "confirm": "ERASE", "force": "y"})
    assert erased.status_code == 302, erased.get_data(as_text=True)

    dump = _whole_database(app)
    for trace in (FIRST, LAST, EMAIL, SECOND_EMAIL, LEGACY_EMAIL, "(711) 222-333", PHONE, PHONE.lstrip("+"), "711 222 333", "711-222-333",
                  "wanjiru", "wanjirug", "nyokabi%40", "q=nyok"):
        assert trace.lower() not in dump, trace
    for trace in ("Otieno", "Kamau", OTHER["email"], OTHER["phone"], "q=kamau", "q=kabiru", "matching q=kamau",
                  "{'q': 'kamau'}"):
        assert trace.lower() in dump, trace
    with app.app_context():
        other = db.session.get(Application, other_application).applicant
        assert (other.first_name, other.last_name, other.email, other.phone, other.erased_at) == (
            "Otieno", "Kamau", OTHER["email"], OTHER["phone"], None)
        views = dict(db.session.execute(select(SavedView.name, SavedView.query)
                                        .where(SavedView.institution_id == institution.id)).all())
        assert views.pop("Interviews") == "q=[erased]" and views.pop("Kamau") == "q=kamau"
        [(name, query)] = views.items()
        assert name.startswith("[erased] view") and query == "q=[erased]"
        [payment] = db.session.scalars(select(Payment).where(Payment.application_id == first)).all()
        assert payment.processor_reference == f"[erased]-{payment.id}" and payment.amount == Decimal("45000")
        row = db.session.scalars(select(AuditLog).where(AuditLog.action == "applicant.erase")).one()
        assert row.target == records[third][0] and row.actor == admin.user.email
        assert all(records[application_id][0] in row.detail for application_id in mine)
        assert "asked by email" in row.detail
    # Both records are tombstones: a second erase from either is refused.
    assert admin.post(f"/applicants/{first}/privacy/erase", data={
        "reason": "again", "confirm": "ERASE", "force": "y"}).status_code == 409
