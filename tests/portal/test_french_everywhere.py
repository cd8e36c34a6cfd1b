"""Every staff page drawn for an admin who chose French shows no English interface words and no raw codes.

The admin's institution has data on every page (applicants with decisions, payments from two processors,
messages, a document, a credential check, a webhook endpoint with a delivery, API keys, colleagues, audit rows).
Each page's visible text (text nodes and the attributes a person reads; scripts, styles, code and preformatted
payloads are data) is searched for common English interface words as whole words, and for stored codes shown
as they are (`none`, `male`, `national_id`, `flutterwave`). The data is written in French or is names and
numbers, so any English word found is the interface's.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from sqlalchemy import select

from core.applications.credential_checks import record_check
from core.applications.decision_answers import record_decision_response
from core.applications.documents import document_storage
from core.db import db
from core.models import Applicant, Decision, Document, Message, Payment, User, WebhookDelivery
from core.scoping import InstitutionScope
from core.verification.registries import REGISTRIES
from tests.webhooks.conftest import RECEIVER_HOST, delivering, receiver, resolver, run_worker  # noqa: F401

# Common English words of an interface, matched as whole words whatever their case: none is a French word.
ENGLISH_WORDS = """
the and of to by with for from yet not all any is are was were this that these your you has have will can
in at it if be been which when where who what how than then also only each every more less
search name names apply filter filters move stage stages keep selected select deactivate reactivate personal
decisions payments payment waitlisted declined accepted rejected deferred submitted paid unpaid enrolled save
cancel delete edit send show hide new add remove load sign back next previous settings users user role roles
never yes today view views download upload key keys create created update updated change changed
changes applicant applicants program programs dashboard log verification account password language
zone help none male female passport registry record records result level amount processor reference
pending completed failed sent queued delivered retry endpoint deliveries delivery event events
invite email emails phone first last birth gender copy open closed upcoming opens closes
""".split()
# Stored codes that must be shown in words: matched exactly as stored (lower case, underscores).
RAW_CODES = ["none", "male", "female", "national_id", "flutterwave", "mpesa", "waitlisted", "declined",
             "documents_review", "committee_review", "retry_scheduled", "endpoint_disabled", "client_error",
             "staff", "admin", "portal", "authentic", "withheld", "cancelled", "not_found"]
ENGLISH = re.compile(r"(?<![\w.@/-])(" + "|".join(ENGLISH_WORDS) + r")(?![\w@/-]|\.\w)", re.I)
RAW = re.compile(r"(?<![\w.@/-])(" + "|".join(RAW_CODES) + r")(?![\w@/-]|\.\w)")
READ_ATTRIBUTES = {"title", "aria-label", "placeholder", "alt", "hx-confirm", "aria-description", "data-label"}
TIME_ZONE = re.compile(r"[A-Z][A-Za-z]+/[\w/+-]+")
SKIPPED_ELEMENTS = {"script", "style", "code", "pre", "kbd", "samp"}


class _VisibleText(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name, value in attrs:
            if value and (name in READ_ATTRIBUTES or (
                    name == "value" and tag == "input" and attributes.get("type") in ("submit", "button", "reset"))):
                self.parts.append(value)
        if tag in SKIPPED_ELEMENTS:
            self.skipping.append(tag)
        elif tag == "option" and TIME_ZONE.fullmatch(attributes.get("value") or ""):
            self.skipping.append(tag)  # a place name ("New York (UTC−05:00)"): the tz database's, not ours

    def handle_endtag(self, tag):
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def visible_text(page: str) -> str:
    parser = _VisibleText()
    parser.feed(page)
    return " \n".join(part.strip() for part in parser.parts if part.strip())


# Proper names written in English whatever the page's language: the examination registries' official names.
PROPER_NAMES = [registry.name for registry in REGISTRIES.values()]


def english_found(page: str) -> list[str]:
    """Each line of visible text holding an English interface word or a raw code, with the words found."""
    found = []
    text = visible_text(page)
    for name in PROPER_NAMES:
        text = text.replace(name, "")
    for line in text.splitlines():
        words = [match.group(1) for pattern in (ENGLISH, RAW) for match in pattern.finditer(line)]
        entry = f"{line.strip()[:120]!r} ({', '.join(words)})"
        if words and entry not in found:
            found.append(entry)
    return found


def test_the_detector_catches_the_english_left_on_french_pages():
    page = """<h2>Personal data</h2><input placeholder="Search by name, email or application id">
    <option>All cycles</option><option>Paid or not</option><button>Apply filters</button>
    <label>Move to stage</label><option>Keep stage</option><button>Apply to selected</button>
    <button>Deactivate</button><h2>Decisions</h2><h2>Payments</h2><p>No payments yet.</p>
    <span class="badge">waitlisted</span><td>declined</td><dd>none</dd><dd>male</dd><td>national_id</td>
    <td>flutterwave</td><script>var hidden = "Apply filters";</script><code>decision.sent</code>"""
    found = " ".join(english_found(page))
    for phrase in ("Personal data", "Search by name", "All cycles", "Paid or not", "Apply filters", "Move to stage",
                   "Keep stage", "Apply to selected", "Deactivate", "Decisions", "Payments", "No payments yet.",
                   "'waitlisted'", "'declined'", "'none'", "'male'", "'national_id'", "'flutterwave'"):
        assert phrase in found, phrase
    assert "hidden" not in found and "decision.sent" not in found
    french = """<h2>Données personnelles</h2><input placeholder="Rechercher par nom"><option>Tous les cycles</option>
    <button>Appliquer les filtres</button><p>Aucun paiement pour l’instant.</p><span>Sur liste d’attente</span>
    <a href="mailto:aimee@example.rw">aimee@example.rw</a><td>Africa/Kigali</td><code>webhook.test</code>"""
    assert english_found(french) == []


@pytest.fixture
def french_admin(admin, factory, app, delivering):  # noqa: F811
    """An admin who chose French, in an institution with data on every staff page."""
    inst = admin.institution
    with app.app_context():
        db.session.get(User, admin.user.id).language = "fr"
        db.session.commit()
    program = factory.program(inst, name="Licence en sciences infirmières")
    cycle = factory.cycle(inst, programs=[program], name="Rentrée 2026")
    accepted = factory.application(inst, program=program, cycle=cycle, first_name="Aimée", last_name="Uwase",
                                   paid=True, stage="interview", decision="accepted", language="fr")
    factory.application(inst, program=program, cycle=cycle, first_name="Jean", last_name="Habimana",
                        stage="committee_review", decision="waitlisted", language="fr")
    factory.application(inst, program=program, cycle=cycle, first_name="Divine", last_name="Mukamana")
    factory.user(inst, role="staff", email="claudine@universite.rw")
    factory.api_key(inst, name="Système d’inscription")
    assert admin.post(f"/applicants/{accepted.id}/send-decision", {"confirm": "y"}, htmx=True).status_code == 200
    assert admin.post("/users", {"email": "invitee@universite.rw", "role": "staff"},
                      htmx=True).status_code == 201
    assert admin.post("/webhooks", {"url": delivering.url(RECEIVER_HOST), "events": ["decision.sent"]},
                      htmx=True).status_code == 200
    assert admin.post("/webhooks/ping", htmx=True).status_code == 200
    run_worker(app)
    assert admin.post("/webhooks/ping", htmx=True).status_code == 200  # one delivered, one waiting
    with app.app_context():
        scope = InstitutionScope(inst.id)
        applicant = db.session.scalar(select(Applicant).where(Applicant.first_name == "Aimée"))
        applicant.gender = "female"
        db.session.add(Payment(institution_id=inst.id, application_id=accepted.id, processor="flutterwave",
                               processor_reference="FLW-0042", amount=program.fee, currency=program.currency,
                               status="pending"))
        db.session.add(Document(institution_id=inst.id, application_id=accepted.id, kind="releve",
                                filename="releve.pdf", content_type="application/pdf", size=4,
                                sha256=document_storage().put(b"%PDF")))
        db.session.commit()
        decision_id = db.session.scalar(select(Decision.id).where(Decision.application_id == accepted.id))
        record_decision_response(decision_id, "declined")
        record_check(scope, accepted.id, issuer="NESA", level="A-Level",
                     answer={"result": "withheld", "record": {"id": "NESA-1", "candidate": {"full_name": "Aimée U"}}},
                     actor=admin.user.email)
        message_id = db.session.scalar(select(Message.id).where(Message.institution_id == inst.id))
        delivery_id = db.session.scalar(select(WebhookDelivery.id).where(WebhookDelivery.institution_id == inst.id))
    admin.ids = {"application": accepted.id, "message": message_id, "delivery": delivery_id}
    return admin


STAFF_PAGES = [
    "/dashboard", "/applicants", "/applicants?stage=interview&decision=accepted", "/applicants/{application}",
    "/applicants/{application}/privacy", "/applicants/{application}/preview/email", "/cycles", "/verification", "/verification/usage", "/messages",
    "/messages/{message}", "/webhooks", "/webhooks/deliveries/{delivery}", "/api-keys", "/users", "/audit",
    "/settings", "/account", "/account/language", "/account/two-factor", "/account/two-factor/enrol", "/try",
]


def test_every_staff_page_in_french_shows_no_english(french_admin):
    """One signed-in admin, every page (the pages share the data, so they are drawn in one test)."""
    english = {}
    for path in STAFF_PAGES:
        response = french_admin.get(path.format(**french_admin.ids))
        page = response.get_data(as_text=True)
        assert response.status_code == 200 and '<html lang="fr">' in page, (path, response.status_code)
        english[path] = english_found(page)
        if path == "/applicants/{application}":
            assert "(Français)" in page, "a message's language by its name, not its code"
    bulk = french_admin.post("/applicants/bulk", {"ids": [french_admin.ids["application"]], "send_decision": "true"})
    assert bulk.status_code == 200
    english["the bulk confirmation page"] = english_found(bulk.get_data(as_text=True))
    report = "\n".join(f"{path}:\n  " + "\n  ".join(found) for path, found in english.items() if found)
    assert not report, "English or raw codes on staff pages drawn in French:\n" + report
