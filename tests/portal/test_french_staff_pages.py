"""The French staff portal: key staff-portal strings must not appear in English on a page drawn in French
(tests/architecture/test_catalogues.py checks that every marked string has a translation; this one checks that
the pages really are drawn from it)."""
from __future__ import annotations

import html
import re


from core.db import db
from core.models import User

# English strings of the staff pages (navigation, headings, buttons) that a French page must not show.
KEY_STRINGS = {
    "/dashboard": ["Dashboard", "Applicants", "Sign out", "Audit log", "Where this cycle's applicants stand today."],
    "/cycles": ["Cycles and programs", "Every admission cycle with the programs it offers and how many applied."],
    "/audit": ["Apply filters", "Any outcome", "Until (inclusive)"],
    "/verification": ["Live verification", "Look up a record", "See usage and spend"],
    "/verification/usage": ["Verification usage and spend", "No billed lookups yet."],
    "/account": ["Your language", "Save language", "Change your password", "Sign out everywhere"],
}


def _visible_text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", page, flags=re.S)))


def test_staff_pages_drawn_in_french_show_no_key_english_string(app, staff):
    with app.app_context():
        db.session.get(User, staff.user.id).language = "fr"
        db.session.commit()
    untranslated = {}
    for path, strings in KEY_STRINGS.items():
        response = staff.get(path)
        assert response.status_code == 200 and '<html lang="fr">' in response.get_data(as_text=True)
        text = _visible_text(response.get_data(as_text=True))
        missing = [string for string in strings if string in text]
        if missing:
            untranslated[path] = missing
    assert untranslated == {}, f"English left on French staff pages: {untranslated}"
