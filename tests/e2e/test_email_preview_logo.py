"""The email preview's HTML part shows the institution's logo in Chromium (issue #39): the page's own policy lets
the logo's `/brand/…` URL through, as the email's applicant would see it."""
from __future__ import annotations

import io

import pytest
from PIL import Image
from sqlalchemy import select

from core.db import db

from core.institutions.identity import set_logo, update_identity
from core.models.messages import Message
from core.scoping import InstitutionScope
from tests.e2e.conftest import sign_in


@pytest.fixture
def public_base_url(app, live_server, monkeypatch):
    """The emails' links and logo point at the served app, as PUBLIC_BASE_URL does in the demo."""
    monkeypatch.setitem(app.config, "PUBLIC_BASE_URL", live_server)
    return live_server


def _branded(factory, app):
    institution = factory.institution("Kigali School of Nursing")
    with app.app_context():
        scope = InstitutionScope(institution.id)
        update_identity(scope, {"brand_colour": "#7a1f2b"})
        logo = io.BytesIO()
        Image.new("RGB", (96, 48), (250, 200, 40)).save(logo, format="PNG")
        digest = set_logo(scope, logo.getvalue())
    return institution, f"/brand/{institution.id}/logo-{digest}.png"


def _logo_shown(page, path: str) -> None:
    image = page.locator(f'img[src$="{path}"]')
    assert image.count() == 1
    assert image.evaluate("element => element.complete && element.naturalWidth") == 96


def test_the_html_part_of_the_preview_shows_the_logo(page, factory, app, public_base_url):
    institution, logo = _branded(factory, app)
    staff = factory.user(institution, role="staff")
    application = factory.application(institution, decision="accepted")
    sign_in(page, staff.email)
    page.goto(f"/applicants/{application.id}/preview/email.html", wait_until="load")
    _logo_shown(page, logo)


def test_the_html_part_of_a_sent_message_shows_the_logo(page, factory, app, public_base_url):
    institution, logo = _branded(factory, app)
    _, key = factory.api_key(institution)
    application = factory.application(institution)
    sent = app.test_client().patch("/api/v1/applications/update", headers={"Authorization": f"Bearer {key}"},
                                   json={"updates": [{"id": application.id, "decision": "accepted",
                                                      "send_decision": True}]})
    assert sent.status_code == 200
    with app.app_context():
        [message] = db.session.scalars(select(Message).where(Message.application_id == application.id))
    admin = factory.user(institution, role="admin")
    sign_in(page, admin.email)
    page.goto(f"/messages/{message.id}/html", wait_until="load")
    _logo_shown(page, logo)
