"""The public try page and the staff live lookup, usage and CSV."""
import csv
import io
import json
import re

from sqlalchemy import select

from core.db import db
from core.models import ApplicantCheck, VerificationCharge
from core.verification.demo import demo_requests
from devtools.simulated_records import SIMULATED_RECORDS
from tests.openapi_check import assert_conforms
from tests.portal.conftest import csrf_token


def _text(response) -> str:
    return response.get_data(as_text=True)


def _try(client, data, htmx=True):
    token = csrf_token(client, "/try")
    headers = {"HX-Request": "true", "X-CSRFToken": token} if htmx else {}
    if not htmx:
        data = {**data, "csrf_token": token}
    return client.post("/try", data=data, headers=headers)


def test_try_page_needs_no_sign_in_and_swaps_registry_fields(client):
    page = client.get("/try")
    html = _text(page)
    assert page.status_code == 200
    assert 'name="national_id"' in html and 'name="exam_number"' in html  # NESA first
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]

    fields = client.get("/try?issuer=KNEC", headers={"HX-Request": "true"})
    assert fields.status_code == 200 and not _text(fields).startswith("<!doctype")
    assert 'name="examination"' in _text(fields) and 'name="national_id"' not in _text(fields)
    assert "HX-Request" in fields.headers["Vary"]

    demo = demo_requests("UNEB")[1]
    prefilled = client.get("/try?issuer=UNEB&demo=1", headers={"HX-Request": "true"})
    assert f'value="{demo["index_number"]}"' in _text(prefilled)


def test_trial_verification_shows_a_card_the_json_and_curl(app, client):
    demo = demo_requests("NESA")[0]
    response = _try(client, demo)
    html = _text(response)
    assert response.status_code == 200
    assert 'class="certificate"' in html and "authentic" in html
    body = json.loads(re.search(r'<pre id="result-json">(.*?)</pre>', html, re.DOTALL).group(1)
                      .replace("&#34;", '"').replace("&#39;", "'").replace("&amp;", "&"))
    assert body["result"] == "authentic" and body["billing"]["charged"] is False
    assert body["record"]["candidate"]["full_name"] in html
    assert "curl -sS -X POST http://localhost/api/v1/verifications" in html
    assert "Authorization: Bearer sk_trial_demo" in html

    # The curl command says what the API answers: the same request through the API gives the same body.
    api = client.post("/api/v1/verifications", json=demo, headers={"Authorization": "Bearer sk_trial_demo"})
    assert_conforms(api)
    assert api.get_json() == body
    with app.app_context():
        assert db.session.scalar(select(VerificationCharge.id)) is None


def test_trial_not_found_and_invalid_fields(client):
    missing = _try(client, {"issuer": "KNEC", "index_number": "99999999999", "year": "2020", "examination": "KCSE"})
    assert missing.status_code == 200
    assert "No match" in _text(missing) and "has no matching record" in _text(missing)

    invalid = _try(client, {"issuer": "NESA", "national_id": "12", "exam_number": "", "level": "A-Level"})
    assert invalid.status_code == 422
    html = _text(invalid)
    assert "national_id" in html and "must be exactly 16 digits" in html
    plain = _try(client, {"issuer": "NESA", "national_id": "12", "level": "A-Level"}, htmx=False)
    assert plain.status_code == 422 and plain.get_data(as_text=True).startswith("<!doctype")
    assert 'aria-invalid="true"' in _text(plain)


def test_try_needs_a_csrf_token(client):
    response = client.post("/try", data=demo_requests("NESA")[0])
    assert response.status_code == 400


def test_live_lookup_needs_the_billing_confirmation(staff, live_registries, app):
    record = SIMULATED_RECORDS[0]
    refused = staff.post("/verification", dict(record.request), htmx=True)
    assert refused.status_code == 422 and "Confirm the charge" in _text(refused)
    with app.app_context():
        assert db.session.scalar(select(VerificationCharge.id)) is None

    done = staff.post("/verification", {**record.request, "confirm_billing": "yes"}, htmx=True)
    assert done.status_code == 200 and 'class="certificate"' in _text(done)
    assert "Billed" in _text(done)
    with app.app_context():
        charge = db.session.scalars(select(VerificationCharge)).one()
    assert charge.institution_id == staff.institution.id and charge.actor == f"portal:{staff.user.email}"

    usage = staff.get("/verification/usage")
    assert record.registry in _text(usage) and "1 lookup" in _text(usage) and "1 lookups" not in _text(usage)
    export = staff.get("/verification/usage.csv")
    assert export.status_code == 200 and export.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(_text(export))))
    assert [row["issuer"] for row in rows] == [record.registry]
    assert staff.get("/verification/usage.csv?month=2026-13").status_code == 400


def test_live_lookup_for_an_applicant_is_filed_on_their_page(staff, live_registries, factory, app):
    application = factory.application(staff.institution)
    record = SIMULATED_RECORDS[0]
    form = staff.get(f"/verification?application={application.id}")
    assert f'name="application" value="{application.id}"' in _text(form)
    staff.post("/verification", {**record.request, "confirm_billing": "yes", "application": application.id},
               htmx=True)
    with app.app_context():
        check = db.session.scalars(select(ApplicantCheck)).one()
    assert check.application_id == application.id and check.result == record.result
    page = _text(staff.get(f"/applicants/{application.id}"))
    assert record.full_name in page and record.registry in page


def test_live_lookup_cannot_be_filed_under_a_foreign_application(staff, factory, live_registries):
    foreign = factory.application(factory.institution())
    record = SIMULATED_RECORDS[0]
    assert staff.get(f"/verification?application={foreign.id}").status_code == 404
    response = staff.post("/verification", {**record.request, "confirm_billing": "yes",
                                             "application": foreign.id}, htmx=True)
    assert response.status_code == 404


def test_usage_is_empty_for_a_new_institution(staff):
    assert "No billed lookups yet" in _text(staff.get("/verification/usage"))


def test_a_refused_live_lookup_reads_in_the_staff_members_language(staff, live_registries, app):
    """The API keeps its English; the page tells a French-speaking staff member what to fix in French."""
    from core.models import User

    with app.app_context():
        db.session.get(User, staff.user.id).language = "fr"
        db.session.commit()
    invalid = staff.post("/verification", {"issuer": "NESA", "national_id": "12", "exam_number": "0207010045",
                                           "level": "A-Level", "confirm_billing": "yes"}, htmx=True)
    html = _text(invalid)
    assert invalid.status_code == 422
    assert "Certains identifiants doivent être corrigés" in html and "doit compter exactement 16 chiffres" in html
    assert "must be exactly 16 digits" not in html and "Invalid verification request" not in html

    missing = staff.post("/verification", {"issuer": "KNEC", "index_number": "99999999999", "year": "2020",
                                           "examination": "KCSE", "confirm_billing": "yes"}, htmx=True)
    html = _text(missing)
    assert missing.status_code == 200 and "Aucun dossier trouvé" in html and "n’a aucun dossier correspondant" in html
    assert "Record not found" not in html and "has no matching record" not in html
