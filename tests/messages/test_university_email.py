"""Email from the university (issue #25): decision emails arrive at a real SMTP server (aiosmtpd) with the
institution's name as From, its contact as Reply-To, its logo, colour, website and footer, the link's end date in
its zone and the applicant's language, and a DKIM signature that dkimpy verifies against the published key."""
from __future__ import annotations

import base64
import io
import re
from datetime import datetime

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from PIL import Image
from sqlalchemy import func, select

from core.accounts.preferences import set_time_zone
from core.config import ConfigurationError
from core.db import db
from core.errors import InvalidInput, NotFound
from core.institutions.identity import set_logo, update_identity
from core.messages.log import resend_message, set_default_language
from core.messages import composition
from core.messages.composition import preview_decision_email
from core.messages.private_links import LINK_SLOT
from core.messages.render import render_email
from core.models.messages import Message
from core.scoping import InstitutionScope
from tests.conftest import app_config
from tests.messages.conftest import all_messages, drain_now, run_message_worker, send_decisions
from tests.portal.conftest import csrf_token
from wsgi import create_app

PLATFORM = "admissions@karibu.test"  # the mail_app fixture's MAIL_DEFAULT_SENDER address
BASE_URL = "https://apply.karibu.test"
# 22:30 UTC is already the next day in Kigali (UTC+2): the link's end date is the institution's date.
SENT_AT = datetime(2026, 3, 1, 22, 30)
VALID_UNTIL = {"en": "1 May 2026", "fr": "1 mai 2026", "sw": "1 Mei 2026"}


def _png(width: int, height: int) -> bytes:
    output = io.BytesIO()
    Image.new("RGB", (width, height), "#7a1f2b").save(output, format="PNG")
    return output.getvalue()


def _university(factory, app, name="University of Rwanda", contact="admissions@ur.ac.rw", logo=True, language=None):
    institution = factory.institution(name)
    with app.app_context():
        scope = InstitutionScope(institution.id)
        update_identity(scope, {"display_name": "UR College of Medicine", "brand_colour": "#7a1f2b",
                                "contact_email": contact, "website": "https://ur.ac.rw/admissions",
                                "footer": "KK 737 St, Kigali, Rwanda"})
        set_time_zone(scope, "Africa/Kigali")
        if language:
            set_default_language(scope, language)
        digest = set_logo(scope, _png(200, 100)) if logo else None
    _, key = factory.api_key(institution)
    program = factory.program(institution, name="MBChB")
    cycle = factory.cycle(institution, programs=[program], name="2026 Intake")
    return institution, key, program, cycle, digest


@pytest.fixture
def branded(mail_app, clock, monkeypatch):
    monkeypatch.setitem(mail_app.config, "PUBLIC_BASE_URL", BASE_URL)
    clock.current = SENT_AT  # back in time too: the message engine's clock alone
    return mail_app


def _send(app, factory, decision="accepted", **options):
    institution, key, program, cycle, digest = _university(factory, app, **options)
    application = factory.application(institution, program=program, cycle=cycle, first_name="Aline",
                                      email="aline@example.com")
    assert send_decisions(app.test_client(), key, [application.id], decision).status_code == 200
    run_message_worker(app)
    return institution, application, digest


def _parts(received):
    email = received.message
    return email, email.get_body(("plain",)).get_content(), email.get_body(("html",)).get_content()


def test_a_decision_arrives_from_the_university_with_its_reply_to_logo_colour_and_contacts(branded, smtp, factory):
    institution, _, digest = _send(branded, factory)
    [received] = smtp.received
    email, text, html = _parts(received)
    assert email["From"] == f"UR College of Medicine <{PLATFORM}>"
    assert email["Reply-To"] == "admissions@ur.ac.rw"
    assert received.mail_from == PLATFORM  # bounces go to the operator
    [row] = all_messages(branded)
    assert (row.sender, row.reply_to) == (f"UR College of Medicine <{PLATFORM}>", "admissions@ur.ac.rw")

    logo_url = f"{BASE_URL}/brand/{institution.id}/logo-{digest}.png"
    assert f'<img src="{logo_url}" alt="UR College of Medicine" width="96" height="48"' in html
    assert 'bgcolor="#7a1f2b" style="background:#7a1f2b;' in html  # the header band and the button
    [button] = re.findall(r'<td bgcolor="#7a1f2b"[^>]*><a href="([^"]+)"[^>]*>Accept or decline the offer</a>', html)
    assert button.startswith(f"{BASE_URL}/decisions/respond/")
    assert 'href="mailto:admissions@ur.ac.rw"' in html and 'href="https://ur.ac.rw/admissions"' in html
    assert "KK 737 St, Kigali, Rwanda" in html and f"stays valid until {VALID_UNTIL['en']}." in html
    assert "<style" not in html and "class=" not in html  # inline styles only

    # the plain text says everything the HTML does
    for words in ("UR College of Medicine has decided on your application to MBChB (2026 Intake).",
                  "Decision: Accepted", "You have been offered a place.",
                  "The place is yours once you accept the offer.",
                  "Please tell us whether you accept or decline the offer.", button,
                  f"The link is personal and stays valid until {VALID_UNTIL['en']}.",
                  "Questions? Write to admissions@ur.ac.rw.", "Website: https://ur.ac.rw/admissions",
                  "KK 737 St, Kigali, Rwanda"):
        assert words in text, words


def test_an_allowed_domain_alone_does_not_make_the_contact_the_from_address(branded, smtp, factory, monkeypatch):
    """MAIL_ALLOWED_SENDER_DOMAINS only restricts: without proof in DNS (tests/messages/test_sender_domains.py)
    every email goes from the platform's address under the institution's name, Reply-To the contact."""
    monkeypatch.setitem(branded.config, "MAIL_ALLOWED_SENDER_DOMAINS", "example.org, UR.ac.RW")
    for contact in ("Admissions@UR.ac.rw", "admissions@evil-ur.ac.rw", "admissions@mail.ur.ac.rw",
                    "admissions@ur.ac.rw.evil.org"):
        _send(branded, factory, contact=contact, logo=False)
    senders = [(r.message["From"].addresses[0].addr_spec, r.message["Reply-To"], r.mail_from) for r in smtp.received]
    assert senders == [
        (PLATFORM, "Admissions@UR.ac.rw", PLATFORM),
        (PLATFORM, "admissions@evil-ur.ac.rw", PLATFORM),
        (PLATFORM, "admissions@mail.ur.ac.rw", PLATFORM),
        (PLATFORM, "admissions@ur.ac.rw.evil.org", PLATFORM),
    ]
    assert all(r.message["From"].addresses[0].display_name == "UR College of Medicine" for r in smtp.received)


def test_without_a_contact_there_is_no_reply_to_and_the_text_names_no_contact(branded, smtp, factory):
    _send(branded, factory, contact="", logo=False)
    email, text, html = _parts(smtp.received[0])
    assert email["From"] == f"UR College of Medicine <{PLATFORM}>" and email["Reply-To"] is None
    assert "Questions?" not in text and "mailto:" not in html and "<img" not in html


@pytest.mark.parametrize(("decision", "asked", "button"), [
    ("waitlisted", "Please tell us whether you want to stay on the waiting list or withdraw.",
     "Stay on the waiting list or withdraw"),
    ("deferred", "Please tell us whether you accept the deferral or decline it.", "Accept or decline the deferral"),
])
def test_each_answerable_decision_asks_its_own_question(branded, smtp, factory, decision, asked, button):
    _send(branded, factory, decision=decision)
    _, text, html = _parts(smtp.received[0])
    assert asked in text and asked in html and f">{button}</a>" in html
    assert f"stays valid until {VALID_UNTIL['en']}." in text
    if decision == "waitlisted":
        assert "accept it" not in text.lower() and "If a place becomes free, we will offer it to you." in text


def test_a_rejection_asks_for_nothing_and_has_no_link(branded, smtp, factory):
    _send(branded, factory, decision="rejected")
    _, text, html = _parts(smtp.received[0])
    assert "There is nothing you need to answer." in text and "There is nothing you need to answer." in html
    assert "/decisions/respond/" not in text + html and "valid until" not in text
    assert "Questions? Write to admissions@ur.ac.rw." in text  # the contact all the same


@pytest.mark.parametrize(("language", "expected"), [
    ("fr", ("Merci de nous dire si vous acceptez ou refusez l'offre.",
            f"Ce lien est personnel et reste valable jusqu'au {VALID_UNTIL['fr']}.",
            "Des questions ? Écrivez à admissions@ur.ac.rw.", "Site web : https://ur.ac.rw/admissions")),
    ("sw", ("Tafadhali tuambie kama unakubali au unakataa ofa hii.",
            f"Kiungo hiki ni chako binafsi na kitatumika hadi {VALID_UNTIL['sw']}.",
            "Una maswali? Tuandikie kwa admissions@ur.ac.rw.", "Tovuti: https://ur.ac.rw/admissions")),
])
def test_the_branded_email_in_french_and_swahili(branded, smtp, factory, language, expected):
    _send(branded, factory, language=language)
    _, text, html = _parts(smtp.received[0])
    for words in expected:
        assert words in text, words
    assert f'<html lang="{language}">' in html and VALID_UNTIL[language] in html


def test_a_bulk_send_renders_once_per_language_and_fills_in_each_applicant(branded, smtp, factory, monkeypatch):
    renders = []

    def counted(template, language, context, **options):
        renders.append((template, language))
        return render_email(template, language, context, **options)
    monkeypatch.setattr(composition, "render_email", counted)
    institution, key, program, cycle, _ = _university(factory, branded)
    names = ["Aline", "Brian", "Chantal", "Daudi", "Esther"]
    applications = [factory.application(institution, program=program, cycle=cycle, first_name=name,
                                        email=f"{name.lower()}@example.com", language="fr" if name < "C" else "en")
                    for name in names]
    assert send_decisions(branded.test_client(), key, [a.id for a in applications]).status_code == 200
    assert sorted(renders) == [("decision", "en"), ("decision", "fr")]
    run_message_worker(branded)
    texts = {r.recipients[0]: r.message.get_body(("plain",)).get_content() for r in smtp.received}
    links = {re.search(r"\S+/decisions/respond/\S+", text).group(0) for text in texts.values()}
    assert len(links) == 5
    for name in names:
        text = texts[f"{name.lower()}@example.com"]
        assert text.startswith(f"{'Bonjour' if name < 'C' else 'Dear'} {name},")
        assert "admissions@ur.ac.rw" in text and "KK 737 St, Kigali, Rwanda" in text


def test_an_old_row_without_a_sender_is_resent_from_the_platform(branded, smtp, factory):
    smtp.recorder.data_answers.append("550 5.7.1 refused")
    institution, application, _ = _send(branded, factory)
    [failed] = all_messages(branded)
    assert failed.status == "failed"
    with branded.app_context():
        row = db.session.get(Message, failed.id)
        row.sender = row.reply_to = None  # as written before senders were stored
        db.session.commit()
        resend_message(InstitutionScope(institution.id), failed.id)
    drain_now(branded)
    [received] = smtp.received
    assert received.message["From"] == f"Admissions <{PLATFORM}>" and received.message["Reply-To"] is None


# DKIM ----------------------------------------------------------------------------------------------------------

def _key_pair() -> tuple[bytes, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, base64.b64encode(public).decode()


@pytest.fixture
def dkim_record(branded, tmp_path, monkeypatch):
    """DKIM on with a fresh key; returns the DNS lookup a receiver would make (the published TXT record)."""
    private, public = _key_pair()
    key_file = tmp_path / "dkim.pem"
    key_file.write_bytes(private)
    monkeypatch.setitem(branded.config, "MAIL_DKIM_DOMAIN", "karibu.test")
    monkeypatch.setitem(branded.config, "MAIL_DKIM_SELECTOR", "k2026")
    monkeypatch.setitem(branded.config, "MAIL_DKIM_PRIVATE_KEY_FILE", str(key_file))
    published = {"k2026._domainkey.karibu.test": f"v=DKIM1; k=rsa; p={public}".encode()}

    def lookup(name: bytes, timeout: int = 5) -> bytes | None:
        return published.get(name.decode().rstrip("."))
    return lookup


def _signed_headers(data: bytes) -> set[str]:
    signature = data.split(b"\r\n\r\n", 1)[0].decode()
    [tags] = re.findall(r"^DKIM-Signature:(.*?)(?=^\S)", signature + "\r\nX:", re.M | re.S)
    [names] = re.findall(r"\bh=([^;]+)", re.sub(r"\s+", "", tags))
    return set(names.split(":"))


def test_a_signed_decision_verifies_against_the_published_key_and_a_tampered_copy_does_not(
        branded, smtp, factory, dkim_record):
    _send(branded, factory)
    [received] = smtp.received
    assert received.data.startswith(b"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=karibu.test;")
    assert dkim.verify(received.data, dnsfunc=dkim_record)
    assert {"from", "reply-to", "to", "subject", "date", "message-id", "mime-version",
            "content-type"} <= _signed_headers(received.data)
    for original, forged in ((b"Subject: UR College", b"Subject: UK College"),
                             (b"Reply-To: admissions@ur.ac.rw", b"Reply-To: admissions@evil.example"),
                             (b"You have been offered a place.", b"You have been offered a plate.")):
        assert original in received.data
        assert not dkim.verify(received.data.replace(original, forged, 1), dnsfunc=dkim_record)


def test_staff_emails_are_signed_too(branded, smtp, factory, dkim_record):
    institution = factory.institution("Kigali Institute of Health")
    user = factory.user(institution, email="wanjiku@example.ac.rw")
    client = branded.test_client()
    client.post("/login/forgot", data={"email": user.email, "csrf_token": csrf_token(client, "/login/forgot")})
    run_message_worker(branded)
    [received] = smtp.received
    assert received.message["From"] == f"Admissions <{PLATFORM}>" and received.message["Reply-To"] is None
    assert dkim.verify(received.data, dnsfunc=dkim_record)


def test_a_key_file_gone_after_start_up_holds_emails_back_with_the_setting_named(branded, smtp, factory, dkim_record,
                                                                                 tmp_path):
    (tmp_path / "dkim.pem").unlink()
    _send(branded, factory)
    assert smtp.received == []  # nothing goes out unsigned
    [message] = all_messages(branded)
    assert message.status == "retry_scheduled"
    assert message.last_error.startswith(f"MAIL_DKIM_PRIVATE_KEY_FILE {tmp_path / 'dkim.pem'} cannot be read")


@pytest.mark.parametrize(("settings", "message"), [
    ({"MAIL_DKIM_DOMAIN": "karibu.test", "MAIL_DKIM_SELECTOR": "k2026"},
     "DKIM is half configured: MAIL_DKIM_PRIVATE_KEY_FILE is empty"),
    ({"MAIL_DKIM_PRIVATE_KEY_FILE": "{missing}"}, "DKIM is half configured: MAIL_DKIM_DOMAIN and MAIL_DKIM_SELECTOR"),
    ({"MAIL_DKIM_DOMAIN": "karibu.test", "MAIL_DKIM_SELECTOR": "k2026", "MAIL_DKIM_PRIVATE_KEY_FILE": "{missing}"},
     "MAIL_DKIM_PRIVATE_KEY_FILE {missing} cannot be read"),
    ({"MAIL_DKIM_DOMAIN": "karibu.test", "MAIL_DKIM_SELECTOR": "k2026", "MAIL_DKIM_PRIVATE_KEY_FILE": "{public}"},
     "MAIL_DKIM_PRIVATE_KEY_FILE {public} is not a PEM RSA private key"),
])
def test_a_wrong_dkim_configuration_stops_the_start_naming_the_setting(database_url, tmp_path, settings, message):
    public = tmp_path / "public.pem"
    public.write_bytes(rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    paths = {"missing": tmp_path / "missing.pem", "public": public}
    overrides = {name: value.format(**paths) for name, value in settings.items()}
    with pytest.raises(ConfigurationError) as refused:
        create_app({**app_config(database_url, tmp_path / "documents"), **overrides})
    assert str(refused.value).startswith(message.format(**paths))


# Preview --------------------------------------------------------------------------------------------------------

def test_the_preview_is_the_email_that_would_be_sent_and_nothing_is_written_or_sent(branded, smtp, factory):
    institution, key, program, cycle, _ = _university(factory, branded, language="fr")
    application = factory.application(institution, program=program, cycle=cycle, first_name="Aline",
                                      email="aline@example.com")
    with branded.app_context():
        preview = preview_decision_email(InstitutionScope(institution.id), application.id, "waitlisted")
        assert db.session.scalar(select(func.count()).select_from(Message)) == 0
    run_message_worker(branded)
    assert smtp.received == []
    assert (preview.sender, preview.reply_to, preview.recipient) == (
        f"UR College of Medicine <{PLATFORM}>", "admissions@ur.ac.rw", "aline@example.com")
    assert preview.subject == "UR College of Medicine : votre décision d'admission en MBChB"
    placeholder = f"{BASE_URL}/decisions/respond/preview-only-not-a-real-link"
    assert placeholder in preview.text and f'href="{placeholder}"' in preview.html
    page = branded.test_client().get("/decisions/respond/preview-only-not-a-real-link")
    assert page.status_code == 404  # the placeholder answers nothing

    # The real send of the same decision renders the same email, its own link aside.
    assert send_decisions(branded.test_client(), key, [application.id], "waitlisted").status_code == 200
    [row] = all_messages(branded)
    assert (row.sender, row.reply_to, row.subject) == (preview.sender, preview.reply_to, preview.subject)
    # The row holds the link's slot; the link itself only encrypted (core.messages.private_links).
    assert row.body_text == preview.text.replace(placeholder, LINK_SLOT)
    assert row.body_html == preview.html.replace(placeholder, LINK_SLOT)
    run_message_worker(branded)
    [received] = smtp.received
    text = received.message.get_body(("plain",)).get_content()
    link = re.search(rf"{BASE_URL}/decisions/respond/\S+", text).group(0)
    assert text.replace("\r\n", "\n").strip() == preview.text.replace(placeholder, link).strip()


def test_the_preview_refuses_an_unknown_decision_and_another_institutions_application(branded, factory):
    institution, _, program, cycle, _ = _university(factory, branded, logo=False)
    other = factory.institution("Another University")
    application = factory.application(institution, program=program, cycle=cycle)
    with branded.app_context():
        with pytest.raises(InvalidInput, match="decision must be one of"):
            preview_decision_email(InstitutionScope(institution.id), application.id, "maybe")
        with pytest.raises(NotFound):
            preview_decision_email(InstitutionScope(other.id), application.id, "accepted")
        rejected = preview_decision_email(InstitutionScope(institution.id), application.id, "rejected")
    assert "/decisions/respond/" not in rejected.text and "There is nothing you need to answer." in rejected.text
