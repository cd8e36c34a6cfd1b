"""Every staff page drawn for an admin who chose Swahili shows no English interface words and no raw codes.

The same institution as the French check (tests/portal/test_french_everywhere.py: data on every page), drawn for
an admin who chose Swahili on /account. The catalogue guard (tests/architecture/test_catalogues.py) requires a
Swahili translation of every marked string; this one checks that the pages are really drawn from it.
"""
from __future__ import annotations

import pytest

from core.db import db
from core.models import User
from tests.portal.test_french_everywhere import STAFF_PAGES, english_found, french_admin  # noqa: F401
from tests.webhooks.conftest import delivering, receiver, resolver  # noqa: F401

# Pages beyond the French list that only an admin reaches: the university sign-in settings.
MORE_PAGES = ["/settings/sso"]


@pytest.fixture
def swahili_admin(french_admin, app):  # noqa: F811
    """The French check's admin and institution, the admin having chosen Swahili."""
    with app.app_context():
        db.session.get(User, french_admin.user.id).language = "sw"
        db.session.commit()
    return french_admin


def test_the_detector_finds_english_on_a_swahili_page():
    page = """<h2>Data binafsi</h2><button>Apply filters</button><td>national_id</td>
    <p>Waombaji 2 wanalingana</p><span>Bado hakuna malipo.</span>"""
    found = " ".join(english_found(page))
    assert "Apply filters" in found and "'national_id'" in found
    assert "Data binafsi" not in found and "Waombaji" not in found and "malipo" not in found


def test_staff_choose_swahili_on_their_account_page(app, admin):
    assert '<option value="sw">Kiswahili</option>' in admin.get("/account/language").get_data(as_text=True)
    chosen = admin.post("/account/language", {"language": "sw", "next": "/dashboard"})
    assert chosen.status_code == 302
    page = admin.get("/dashboard").get_data(as_text=True)
    assert '<html lang="sw">' in page and "Dashibodi" in page and "Waombaji" in page
    with app.app_context():
        assert db.session.get(User, admin.user.id).language == "sw"


def test_every_staff_page_in_swahili_shows_no_english(swahili_admin):
    """One signed-in admin, every page (the pages share the data, so they are drawn in one test)."""
    english = {}
    for path in STAFF_PAGES + MORE_PAGES:
        response = swahili_admin.get(path.format(**swahili_admin.ids))
        page = response.get_data(as_text=True)
        assert response.status_code == 200 and '<html lang="sw">' in page, (path, response.status_code)
        english[path] = english_found(page)
    bulk = swahili_admin.post("/applicants/bulk", {"ids": [swahili_admin.ids["application"]],
                                                   "send_decision": "true"})
    assert bulk.status_code == 200
    english["the bulk confirmation page"] = english_found(bulk.get_data(as_text=True))
    report = "\n".join(f"{path}:\n  " + "\n  ".join(found) for path, found in english.items() if found)
    assert not report, "English or raw codes on staff pages drawn in Swahili:\n" + report
