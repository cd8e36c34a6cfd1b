"""The list pages on phones (390 and 360 px): one card per row with the row's actions on screen, the filters folded
behind a "Filters" button that counts the active ones, the dashboard's bars per week with labels apart. At 1366 px
in French the applicants table fits its card and no filter choice is cut.

Signed in as the admin of the accessibility check's institution (tests/e2e/test_accessibility.py `seeded`), which
also holds an API key (tests/e2e/test_phones.py `admin_in`).
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.axe import assert_accessible
from tests.e2e.test_accessibility import seeded  # noqa: F401 (fixture)
from tests.e2e.test_phones import LAPTOP, admin_in, assert_fits  # noqa: F401 (fixture)

PHONES = {"390": {"width": 390, "height": 844}, "360": {"width": 360, "height": 740}}
# Each list page and an action every one of its rows offers (French, the longer words).
LISTS = {
    "/applicants": None,
    "/messages": "Voir",
    "/users": None,
    "/api-keys": "Révoquer",
    "/audit": "Détails techniques",
    "/webhooks/deliveries": "Renvoyer",
}

# The controls of each card (links, buttons, fields, badges) that stick out of the viewport on either side.
OFF_SCREEN = """(width) => Array.from(document.querySelectorAll(".cards tbody tr"))
  .flatMap((row) => Array.from(row.querySelectorAll("a, button, select, input, summary, .badge")))
  .filter((control) => control.getClientRects().length > 0)
  .filter((control) => { const box = control.getBoundingClientRect(); return box.left < 0 || box.right > width; })
  .map((control) => control.outerHTML.slice(0, 100))"""


@pytest.mark.parametrize("phone", sorted(PHONES))
def test_every_list_shows_a_card_per_row_with_its_actions_on_screen(admin_in, phone):
    viewport = PHONES[phone]
    page = admin_in(viewport, "fr")
    for path, action in LISTS.items():
        page.goto(path, wait_until="load")
        assert_fits(page, path, viewport["width"])
        rows = page.locator(".cards tbody tr:not(.load-more)")
        assert rows.count() >= 1, path
        assert page.evaluate(OFF_SCREEN, viewport["width"]) == [], path
        # A card: its cells one under the other, each named by its column; no header row in view.
        first = rows.first
        cells = first.locator("td[data-label]")
        assert cells.count() >= 3, path
        assert cells.first.evaluate("(cell) => getComputedStyle(cell, '::before').content") == \
            '"' + cells.first.get_attribute("data-label") + '"', path
        assert page.locator(".cards thead th:not(.select)").first.bounding_box()["width"] <= 1, path
        if action:
            control = first.get_by_text(action).first
            expect(control).to_be_visible()
            box = control.bounding_box()
            assert 0 <= box["x"] and box["x"] + box["width"] <= viewport["width"], (path, action, box)

    # The users' own actions: the other member's role and Deactivate; the applicants' stage and decision.
    page.goto("/users")
    row = page.locator(".cards tbody tr").filter(has_text="officer@kih.ac.rw")
    expect(row.get_by_role("button", name="Désactiver")).to_be_visible()
    expect(row.locator("select")).to_be_visible()
    page.goto("/applicants")
    card = page.locator("#applicant-rows tr").first
    for column in ("Étape", "Décision", "Date d'envoi"):
        expect(card.locator(f'td[data-label="{column}"] >> nth=0')).to_be_visible()
    expect(card.locator("td.select input")).to_be_visible()
    assert_accessible(page, "/applicants as cards at a phone's width")


def test_the_filters_fold_behind_a_button_that_counts_them(admin_in, seeded):
    page = admin_in(PHONES["390"], "fr")
    page.goto("/applicants?cycle=&paid=false&q=a", wait_until="load")
    button = page.locator("summary", has_text="Filtres")
    expect(button).to_be_visible()
    expect(button).to_have_text("Filtres 2 actifs", use_inner_text=True)
    expect(page.locator("#filters")).to_be_hidden()
    # Folded, the filters and the saved views take one line: the first applicant shows on the first screen.
    assert page.locator(".filter-fold").bounding_box()["height"] < 60
    top = page.locator("#applicant-rows tr").first.bounding_box()["y"]
    assert top < PHONES["390"]["height"], f"the first applicant starts {top} px down"

    button.click()
    expect(page.locator("#filters")).to_be_visible()
    with page.expect_response(lambda response: "/applicants?" in response.url):
        page.locator("#enrolled").select_option("false")
    expect(button).to_have_text("Filtres 3 actifs", use_inner_text=True)
    assert_fits(page, "/applicants with its filters open", PHONES["390"]["width"])
    assert_accessible(page, "/applicants with its filters open at a phone's width")

    page.goto("/applicants", wait_until="load")
    expect(page.locator("#filter-count")).to_be_hidden()
    expect(button).to_have_text("Filtres", use_inner_text=True)

    # From 768 px the filters show open, without the button.
    page.set_viewport_size(LAPTOP)
    expect(page.locator("#filters")).to_be_visible()
    expect(button).to_be_hidden()


def test_at_1366_px_in_french_the_applicants_table_fits_its_card_and_no_filter_choice_is_cut(admin_in):
    page = admin_in(LAPTOP, "fr")
    page.goto("/applicants", wait_until="load")
    wrap = page.locator("#results .table-wrap")
    widths = wrap.evaluate("(box) => [box.querySelector('table').getBoundingClientRect().width, box.clientWidth]")
    assert widths[0] <= widths[1], f"the table is {widths[0]} px wide in a card of {widths[1]} px"
    header = page.locator("th", has_text="Date d'envoi").bounding_box()
    frame = wrap.bounding_box()
    assert header["x"] + header["width"] <= frame["x"] + frame["width"], "“Date d'envoi” cut at 1366 px"
    # Every choice of every filter list reads whole: its text fits the field (beside the arrow).
    cut = page.evaluate("""() => {
      const context = document.createElement("canvas").getContext("2d");
      return Array.from(document.querySelectorAll("#filters select")).flatMap((select) => {
        const style = getComputedStyle(select);
        context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
        return Array.from(select.options).filter((option) => context.measureText(option.text).width > room)
          .map((option) => `${select.id}: ${option.text}`);
      });
    }""")
    assert cut == [], f"filter choices cut at 1366 px: {cut}"


@pytest.mark.parametrize("language", ["en", "fr"])
def test_on_a_phone_the_dashboard_shows_a_bar_per_week_with_labels_apart(admin_in, language):
    page = admin_in(PHONES["360"], language)
    page.goto("/dashboard", wait_until="load")
    expect(page.locator("svg.chart")).to_be_hidden()
    weeks = page.locator(".week-bars li")
    assert weeks.count() >= 2
    expect(weeks.first).to_be_visible()
    labels = [box for box in weeks.locator(".label").evaluate_all(
        "(all) => all.map((l) => { const b = l.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })")]
    for index, (left, top, right, bottom) in enumerate(labels):
        assert right <= PHONES["360"]["width"]
        for other in labels[index + 1:]:
            apart = right <= other[0] or other[2] <= left or bottom <= other[1] or other[3] <= top
            assert apart, f"week labels overlap: {labels[index]} and {other}"
    caption = page.locator("figcaption")
    help_text = {"en": "Tap a day", "fr": "Touchez un jour"}[language]
    expect(caption.get_by_text(help_text)).to_be_hidden()
    expect(caption.get_by_text({"en": "One bar per week", "fr": "Une barre par semaine"}[language])).to_be_visible()
    assert_accessible(page, f"/dashboard at 360 px ({language})")
