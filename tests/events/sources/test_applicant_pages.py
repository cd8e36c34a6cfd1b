"""The applicant's pages (apply, submitted, the answer link's steps) are the institution's: its name, logo,
colour and contact, dates in the applicant's format, and no link to staff or partner pages."""
from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from core.accounts.preferences import time_zone_of
from core.db import db
from core.institutions.identity import set_logo, update_identity
from core.models import Cycle
from core.scoping import InstitutionScope
from core.timefmt import applicant_date
from tests.events.sources.conftest import csrf_token
from tests.events.sources.test_decision_response import answer, make_decision

HREF = re.compile(r'href="([^"]*)"')
# Staff and partner pages: none of them is linked from an applicant's page.
STAFF_OR_PARTNER = ("/login", "/try", "/api", "/dashboard", "/applicants", "/settings", "/account")


def brand(app, institution) -> str:
    """Give the institution a full identity and a logo; returns the logo's URL path."""
    pixels = io.BytesIO()
    Image.new("RGB", (40, 20), "#7a1f5c").save(pixels, format="PNG")
    scope = InstitutionScope(institution.id)
    with app.app_context():
        update_identity(scope, {"display_name": "Gulu University Admissions", "brand_colour": "#7A1F5C",
                                "contact_email": "admissions@gulu.ac.ug", "website": "https://gulu.ac.ug",
                                "footer": "Gulu University, P.O. Box 166, Gulu"})
        digest = set_logo(scope, pixels.getvalue())
    return f"/brand/{institution.id}/logo-{digest}.png"


def assert_no_staff_links(html: str) -> None:
    links = HREF.findall(html)
    assert links, "the page has links (stylesheets at least)"
    assert not [link for link in links if link.startswith(STAFF_OR_PARTNER)], links


def assert_identity(html: str, logo_path: str) -> None:
    assert "Gulu University Admissions" in html and "Karibu" not in html
    assert 'href="/applicant-colours/7a1f5c.css"' in html
    assert f'<img class="band-logo" src="{logo_path}" alt=""' in html
    assert 'href="mailto:admissions@gulu.ac.ug"' in html and 'href="https://gulu.ac.ug"' in html
    assert "Gulu University, P.O. Box 166, Gulu" in html
    assert_no_staff_links(html)


def applicant_pages(sources, client, factory, institution) -> dict[str, str]:
    """Every applicant page as the applicant meets it: apply, submitted, then each step of the answer."""
    program = factory.program(institution, name="BSc Agriculture")
    cycle = factory.cycle(institution, programs=[program], name="2026/27 Intake")
    factory.stages(institution)
    pages = {"apply": client.get(f"/apply/{institution.id}").get_data(as_text=True)}
    submitted = client.post(f"/apply/{institution.id}", data={
        "csrf_token": csrf_token(pages["apply"]), "cycle_id": cycle.id, "program_id": program.id,
        "first_name": "Grace", "last_name": "Achieng", "email": "grace@example.com", "phone": "+256700000000",
        "language": "en"})
    assert submitted.status_code == 302
    pages["submitted"] = client.get(submitted.headers["Location"]).get_data(as_text=True)
    _, token = make_decision(sources, factory, institution)
    pages["choose"] = client.get(f"/decisions/respond/{token}").get_data(as_text=True)
    pages["confirm"] = client.get(f"/decisions/respond/{token}/confirm?response=accepted").get_data(as_text=True)
    assert answer(client, token, "accepted").status_code == 302
    pages["answered"] = client.get(f"/decisions/respond/{token}").get_data(as_text=True)
    return pages


def test_every_applicant_page_carries_the_institutions_identity(sources, client, factory):
    institution = factory.institution("Gulu University")
    logo_path = brand(sources, institution)
    pages = applicant_pages(sources, client, factory, institution)
    for name, html in pages.items():
        assert "<html" in html, name
        assert_identity(html, logo_path)
    assert "Apply to Gulu University Admissions" in pages["apply"]
    # Whom to contact to change the answer, on the confirmation step and once it is recorded.
    for name in ("confirm", "answered"):
        assert 'contact <a href="mailto:admissions@gulu.ac.ug">admissions@gulu.ac.ug</a>' in pages[name]
    stylesheet = client.get("/applicant-colours/7a1f5c.css")
    assert stylesheet.status_code == 200 and stylesheet.mimetype == "text/css"
    assert stylesheet.get_data(as_text=True).strip() == ":root { --brand: #7a1f5c; }"


def test_without_an_identity_the_pages_show_the_institutions_name_and_the_default_colour(sources, client, factory):
    institution = factory.institution("Kyambogo University")
    pages = applicant_pages(sources, client, factory, institution)
    for html in pages.values():
        assert "Kyambogo University" in html and 'href="/applicant-colours/0b5d57.css"' in html
        assert "<img" not in html and "mailto:" not in html
        assert_no_staff_links(html)
    assert "To change your answer, contact Kyambogo University." in pages["answered"]


@pytest.mark.parametrize("name", ["7A1F5C", "7a1f5", "red", "7a1f5c;x"])
def test_the_colour_stylesheet_exists_only_for_a_colour(client, name):
    assert client.get(f"/applicant-colours/{name}.css").status_code == 404


def test_dates_are_the_applicants_format_in_their_language(sources, client, factory):
    institution = factory.institution("Université du Burundi")
    program = factory.program(institution, name="Droit")
    factory.cycle(institution, programs=[program], name="Rentrée 2026")
    with sources.app_context():
        [cycle] = db.session.query(Cycle).filter_by(institution_id=institution.id).all()
        zone = time_zone_of(InstitutionScope(institution.id))
        closes = {language: applicant_date(cycle.closes_at, zone, language) for language in ("en", "fr")}
    english = client.get(f"/apply/{institution.id}?lang=en").get_data(as_text=True)
    french = client.get(f"/apply/{institution.id}?lang=fr").get_data(as_text=True)
    assert f"Applications close on {closes['en']}." in english
    assert f"Les candidatures ferment le {closes['fr']}." in french
    assert re.search(r"\d{1,2} [A-Z][a-z]+ \d{4}", closes["en"])  # 26 November 2026, day first


def test_a_forged_link_gets_the_applicant_layout_and_a_clear_404(client):
    response = client.get("/decisions/respond/garbage")
    html = response.get_data(as_text=True)
    assert response.status_code == 404 and "This link is not valid" in html
    assert 'class="band"' in html and "Karibu" not in html
    assert_no_staff_links(html)
    assert response.headers["Cache-Control"] == "no-store" and response.headers["Referrer-Policy"] == "no-referrer"
    assert client.get("/decisions/respond/garbage/confirm?response=accepted").status_code == 404
