"""The portal's navigation fits at 1366 px in English and in French: every item is whole and on screen (the
issue saw the last French item clipped to "Référ…")."""
from __future__ import annotations

import pytest

from core.db import db
from core.models import User
from tests.e2e.conftest import sign_in

# Each navigation link: its text, whether its text is cut (wider than its box), whether it lies outside the list's
# visible box (scrolled or clipped away) or the window.
MEASURE = """() => {
  const list = document.querySelector('nav.nav ul');
  const box = list.getBoundingClientRect();
  return [...list.querySelectorAll('a')].map((link) => {
    const rect = link.getBoundingClientRect();
    return {text: link.textContent.trim(), cut: link.scrollWidth > link.clientWidth,
            outside: rect.left < box.left - 0.5 || rect.right > box.right + 0.5 || rect.left < 0
                     || rect.right > window.innerWidth || rect.width === 0};
  });
}"""


@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_navigation_item_is_whole_and_visible_at_1366(new_page, factory, app, language):
    institution = factory.institution("Université de Kigali")
    admin = factory.user(institution, role="admin")  # an admin sees every item
    with app.app_context():
        db.session.get(User, admin.id).language = language
        db.session.commit()
    page = new_page({"width": 1366, "height": 800})
    sign_in(page, admin.email)
    for path in ("/dashboard", "/settings"):
        page.goto(path, wait_until="load")
        items = page.evaluate(MEASURE)
        assert len(items) == 11, items  # ten areas and the API reference
        hidden = [item for item in items if item["cut"] or item["outside"]]
        assert hidden == [], f"{language} {path}: navigation items not whole on screen: {hidden}"
