"""The "Sending domain" part of /settings (issue #39): an admin adds the domain, sees the two records to publish with
copy buttons, publishes them on a real DNS server (dnslib), chooses Check now and sees the state and the last
check; in English and French; staff cannot reach it, another institution's domain is not found."""
from __future__ import annotations

import html
import re

import pytest

from core.db import db
from core.models import User
from tests.messages.dns_server import DnsServer
from tests.portal.conftest import _fresh_login_counters, admin, portal_as, staff  # noqa: F401 (fixtures)


@pytest.fixture
def dns_server(app, monkeypatch):
    server = DnsServer().start()
    monkeypatch.setitem(app.config, "DNS_RESOLVER", server.address)
    yield server
    server.stop()


def _text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def _records(page: str) -> list[tuple[str, str]]:
    names = re.findall(r'<code id="record-1-(\d)-name">([^<]+)</code>', page)
    values = dict(re.findall(r'<code class="record-value" id="record-1-(\d)-value">([^<]+)</code>', page))
    return [(name, values[number]) for number, name in names]


def test_an_admin_adds_publishes_and_checks_a_domain(admin, dns_server):
    page = _text(admin.get("/settings"))
    assert 'id="sending-domain-title">Sending domain</h2>' in page and "Add sending domain" in page

    added = admin.post("/settings/sending-domains", {"domain": " UR.ac.rw "})
    assert added.status_code == 302 and added.headers["Location"].endswith("/settings#sending-domain-title")
    page = _text(admin.get("/settings"))
    assert "Publish the two records below in the DNS of ur.ac.rw, then choose Check now." in page
    assert "Not proven yet" in page and "Not checked yet." in page
    records = _records(page)
    assert [name for name, _ in records][0] == "_karibu.ur.ac.rw"
    assert records[1][1].startswith("v=DKIM1; k=rsa; p=")
    for number in (1, 2):
        assert f'data-copy="record-1-{number}-name"' in page and f'data-copy="record-1-{number}-value"' in page

    checked = admin.post("/settings/sending-domains/ur.ac.rw/check")
    assert checked.status_code == 302
    page = _text(admin.get("/settings"))
    assert "ur.ac.rw is not proven yet: The ownership TXT record _karibu.ur.ac.rw was not found." in page
    assert "Last check:" in page and "<li>The DKIM TXT record" in page

    for name, value in records:
        dns_server.publish(name, value)
    admin.post("/settings/sending-domains/ur.ac.rw/check")
    page = _text(admin.get("/settings"))
    assert "ur.ac.rw is proven: emails to applicants go out from your contact address on it" in page
    assert 'badge-ok">Proven</span>' in page and "<li>" not in page.split('id="sending-domain-title"')[1]

    removed = admin.post("/settings/sending-domains/ur.ac.rw/remove")
    assert removed.status_code == 302
    page = _text(admin.get("/settings"))
    assert "ur.ac.rw is removed" in page and "_karibu.ur.ac.rw" not in page


def test_a_refused_domain_is_shown_on_the_form_and_nothing_is_stored(admin, app, monkeypatch):
    refused = admin.post("/settings/sending-domains", {"domain": "https://ur.ac.rw/"})
    assert refused.status_code == 400
    assert "Give a domain name such as ur.ac.rw (no address, no https://)." in _text(refused)
    monkeypatch.setitem(app.config, "MAIL_ALLOWED_SENDER_DOMAINS", "uonbi.ac.ke")
    refused = admin.post("/settings/sending-domains", {"domain": "ur.ac.rw"})
    assert refused.status_code == 400
    page = _text(refused)
    assert "The operator of this Karibu lets institutions send only from: uonbi.ac.ke." in page
    assert "The operator of this Karibu allows only these domains: uonbi.ac.ke." in page
    assert "_karibu." not in _text(admin.get("/settings"))
    assert admin.post("/settings/sending-domains", {"domain": "uonbi.ac.ke"}).status_code == 302
    again = admin.post("/settings/sending-domains", {"domain": "UONBI.ac.ke"})
    assert again.status_code == 409 and "uonbi.ac.ke is already a sending domain" in _text(again)
    assert admin.post("/settings/sending-domains", {"domain": "uonbi.ac.ke"}, csrf=False).status_code == 400


def test_staff_and_other_institutions_cannot_reach_it(admin, staff, portal_as):
    assert admin.post("/settings/sending-domains", {"domain": "ur.ac.rw"}).status_code == 302
    assert staff.post("/settings/sending-domains", {"domain": "ur.ac.rw"}).status_code == 403
    other = portal_as("admin")
    for action in ("check", "remove"):
        assert other.post(f"/settings/sending-domains/ur.ac.rw/{action}").status_code == 404
    assert "_karibu.ur.ac.rw" in _text(admin.get("/settings"))


def test_the_part_is_in_french(admin, app):
    with app.app_context():
        db.session.get(User, admin.user.id).language = "fr"
        db.session.commit()
    admin.post("/settings/sending-domains", {"domain": "ur.ac.rw"})
    page = _text(admin.get("/settings"))
    for words in ("Domaine d’envoi", "Pas encore prouvé", "Pas encore vérifié.", "Copier le nom", "Copier la valeur",
                  "Vérifier maintenant", "Retirer ur.ac.rw", "Ajouter le domaine d’envoi",
                  "Publiez ces deux enregistrements TXT dans le DNS de ur.ac.rw :"):
        assert words in page, words
