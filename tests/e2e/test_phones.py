"""Every staff page on a 390 px phone, in English and in French: nothing scrolls sideways, the menu button opens
every navigation item, wide tables scroll in their own region. From 768 px (a tablet) the dashboard chart answers a
tap and the keyboard (on phones a bar per week replaces it: tests/e2e/test_phone_lists.py). At 1366 px every
navigation item shows whole in both languages.

The pages are those of the accessibility check (tests/e2e/test_accessibility.py), signed in as an admin of an
institution with applicants, sent messages, an API key, a webhook endpoint and its delivery, and audit rows.
"""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import sign_in
from tests.e2e.test_accessibility import ADMIN_PAGES, ERROR_PAGES, STAFF_PAGES, Seeded, choose_language, seeded  # noqa: F401 (fixture)

PHONE = {"width": 390, "height": 844}
TABLET = {"width": 800, "height": 1024}
LAPTOP = {"width": 1366, "height": 768}
PAGES = [path for path in dict.fromkeys(STAFF_PAGES + ADMIN_PAGES) if path not in ERROR_PAGES]
# The words of the menu and of the chart, as each language shows them.
WORDS = {
    "en": {"menu": "Menu", "audit": "Audit log", "reference": "API reference", "help": "Tap a day"},
    "fr": {"menu": "Menu", "audit": "Journal d'audit", "reference": "Référence de l'API", "help": "Touchez un jour"},
}

# Elements that stick out of the viewport while no scrolling box of theirs holds them: what makes a page scroll.
# (An absolutely positioned element escapes a scrolling box that is not positioned itself.)
OFFENDERS = """() => {
  const width = document.documentElement.clientWidth;
  const found = [];
  for (const element of document.body.querySelectorAll("*")) {
    if (element.getBoundingClientRect().right <= width + 0.5) continue;
    const absolute = getComputedStyle(element).position === "absolute";
    let box = element.parentElement, held = false;
    for (; box && box !== document.body; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (["auto", "scroll", "hidden"].includes(style.overflowX) && !(absolute && style.position === "static")) {
        held = true; break;
      }
    }
    if (!held) found.push(element.outerHTML.slice(0, 120));
  }
  return found.slice(0, 5);
}"""

# A link that is drawn whole: inside the viewport, its text not cut, not covered at its centre.
CLIPPED_LINKS = """(selector) => {
  const width = document.documentElement.clientWidth;
  return Array.from(document.querySelectorAll(selector)).filter((link) => {
    const box = link.getBoundingClientRect();
    const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    return box.width === 0 || box.left < 0 || box.right > width || link.scrollWidth > link.clientWidth
      || !(hit && (hit === link || link.contains(hit)));
  }).map((link) => link.textContent.trim());
}"""


@pytest.fixture
def admin_in(new_page, seeded: Seeded, factory):
    """A signed-in admin's page at the given size and language; the institution also holds an API key."""
    factory.api_key(SimpleNamespace(id=seeded.ids["institution"]), name="Admissions website, production server")

    def make(viewport: dict, language: str):
        page = new_page(viewport)
        sign_in(page, seeded.admin_email)
        choose_language(page, language)
        return page
    return make


def assert_fits(page, path: str, width: int) -> None:
    page.wait_for_load_state("load")  # the stylesheets in, as a person sees the page
    scroll_width = page.evaluate("() => document.documentElement.scrollWidth")
    assert scroll_width <= width, f"{path} is {scroll_width} px wide at {width} px: {page.evaluate(OFFENDERS)}"


def menu_links(page):
    return page.locator("#site-menu a, #site-menu button")


@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_staff_page_fits_a_phone_and_its_menu_reaches_every_item(admin_in, seeded, language):
    page = admin_in(PHONE, language)
    words = WORDS[language]
    button = page.get_by_role("button", name=words["menu"], exact=True)
    for template in PAGES:
        path = template.format(**seeded.ids)
        response = page.goto(path, wait_until="load")
        assert response.ok, f"{path} answered {response.status}"
        assert_fits(page, path, PHONE["width"])

        # Folded: one button, the menu hidden. Opened: every item visible, whole and on screen.
        expect(button).to_have_attribute("aria-expanded", "false")
        expect(page.locator("#site-menu")).to_be_hidden()
        button.click()
        expect(button).to_have_attribute("aria-expanded", "true")
        items = menu_links(page)
        assert items.count() >= 13, f"{path}: the menu holds {items.count()} items"
        for index in range(items.count()):
            expect(items.nth(index)).to_be_visible()
        assert page.evaluate(CLIPPED_LINKS, "#site-menu a") == [], path
        assert_fits(page, f"{path} with its menu open", PHONE["width"])

        # A table wider than the phone scrolls inside a named region that the keyboard can reach.
        for wrap in page.locator(".table-wrap").all():
            if wrap.evaluate("(box) => box.scrollWidth > box.clientWidth + 1"):
                expect(wrap).to_have_attribute("role", "region")
                expect(wrap).to_have_attribute("tabindex", "0")
                assert wrap.evaluate("(box) => document.getElementById(box.getAttribute('aria-labelledby'))"
                                     ".textContent.trim()"), f"{path}: a scrolling table without a name"

    # Each item opens its page from the menu.
    page.goto("/dashboard")
    hrefs = menu_links(page).evaluate_all("(links) => links.filter((l) => l.matches('nav a'))"
                                           ".map((l) => l.getAttribute('href'))")
    assert len(hrefs) == 11
    for href in hrefs:
        button.click()
        page.locator(f'#site-menu a[href="{href}"]').click()
        page.wait_for_url(f"**{href}", wait_until="load")
        assert_fits(page, href, PHONE["width"])
    expect(page.get_by_role("heading", level=1).first).to_be_visible()


def test_the_menu_button_works_by_keyboard(admin_in):
    page = admin_in(PHONE, "en")
    button = page.get_by_role("button", name="Menu", exact=True)
    expect(button).to_have_attribute("aria-controls", "site-menu")
    button.focus()
    page.keyboard.press("Enter")
    expect(button).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Dashboard")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Escape")
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(button).to_be_focused()
    expect(page.get_by_role("link", name="Applicants")).to_be_hidden()
    page.keyboard.press("Space")
    expect(page.get_by_role("link", name="Applicants")).to_be_visible()
    page.keyboard.press("Space")
    expect(page.get_by_role("link", name="Applicants")).to_be_hidden()

    # From 768 px the whole navigation shows and the button is gone.
    page.set_viewport_size({"width": 768, "height": 900})
    expect(button).to_be_hidden()
    expect(page.get_by_role("link", name="Applicants")).to_be_visible()


@pytest.mark.parametrize("language", ["en", "fr"])
def test_at_1366_px_every_navigation_item_shows_whole(admin_in, seeded, language):
    page = admin_in(LAPTOP, language)
    for template in PAGES:
        path = template.format(**seeded.ids)
        page.goto(path, wait_until="load")
        expect(page.locator(".menu-button")).to_be_hidden()
        assert page.evaluate(CLIPPED_LINKS, ".topbar a") == [], f"{path}: navigation items cut or hidden"
        rows = page.locator(".nav a").evaluate_all("(links) => new Set(links.map((l) => l.offsetTop)).size")
        assert rows == 1, f"{path}: the navigation takes {rows} lines at 1366 px"
        assert_fits(page, path, LAPTOP["width"])
    expect(page.get_by_role("link", name=WORDS[language]["audit"], exact=True)).to_be_visible()
    expect(page.get_by_role("link", name=WORDS[language]["reference"], exact=True)).to_be_visible()


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_dashboard_chart_answers_a_tap_and_the_arrow_keys(admin_in, language):
    page = admin_in(TABLET, language)
    page.goto("/dashboard")
    chart = page.locator("svg.chart")
    caption = page.locator("figcaption")
    expect(caption).to_contain_text(WORDS[language]["help"])
    expect(caption).not_to_contain_text(re.compile("hover|survol", re.IGNORECASE))
    assert chart.evaluate("(svg) => svg.getBoundingClientRect().right") <= TABLET["width"]

    days = chart.locator(".day")
    assert days.count() >= 20
    # One Tab stop for the whole chart; the arrow keys walk the days, each naming its date and count.
    assert days.evaluate_all("(all) => all.filter((d) => d.getAttribute('tabindex') === '0').length") == 1
    days.first.focus()
    page.keyboard.press("ArrowRight")
    expect(days.nth(1)).to_be_focused()
    tip = days.nth(1).locator(".tip")
    expect(tip).to_be_visible()
    label = days.nth(1).get_attribute("aria-label")
    assert re.search(r"\d+ \w+\.? \d{4}: \d+ ", label), label
    assert tip.text_content() == label
    page.keyboard.press("End")
    expect(days.last).to_be_focused()
    page.keyboard.press("Home")
    expect(days.first).to_be_focused()

    # A tap on a day (anywhere in its column) shows that day's figure.
    target = days.nth(5)
    box = target.locator(".hit").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + 4)
    expect(target).to_be_focused()
    expect(target.locator(".tip")).to_be_visible()
    expect(days.nth(1).locator(".tip")).to_be_hidden()
