"""The applicant list in Chromium: the count in a status region, sorting by header and menu, columns, a saved
view, "select all N matching", the file's back link, and a keyboard-only "load more" (where focus lands)."""
from __future__ import annotations

import re
from urllib.parse import unquote

from playwright.sync_api import expect

from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.test_portal_flow import FIRST_NAMES, LAST_NAMES, seed_institution


def _focused(page) -> str:
    """`tag#id` of the focused element."""
    return page.evaluate("() => document.activeElement.tagName.toLowerCase() + '#' + document.activeElement.id")


def test_keyboard_only_load_more_moves_focus_to_the_first_new_row(page, factory):
    institution, admin, created = seed_institution(factory, applications=60)
    sign_in(page, admin.email)
    page.goto("/applicants")
    rows = page.locator("#applicant-rows tr:not(.load-more)")
    expect(rows).to_have_count(50)
    newest_first = sorted(created, key=lambda application: application.submitted_at, reverse=True)

    for _ in range(400):  # Tab through the page until "Load more" has the focus
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.hasAttribute('data-load-more')"):
            break
    else:
        raise AssertionError("'Load more' cannot be reached with the Tab key")
    page.keyboard.press("Enter")
    expect(rows).to_have_count(60)
    expect(page.locator(f"#row-{newest_first[50].id}")).to_be_focused()  # the first new row
    assert _focused(page) == f"tr#row-{newest_first[50].id}"
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.value") == newest_first[50].id, \
        "the next Tab reaches that row's checkbox"
    page.keyboard.press("Space")
    expect(page.locator('[data-selected-count="bulk"]')).to_have_text("1 applicant selected")


def test_count_sort_columns_saved_view_and_back_link(page, factory):
    institution, admin, created = seed_institution(factory, applications=60)
    sign_in(page, admin.email)
    page.goto("/applicants")
    status = page.get_by_role("status").filter(has_text="match")
    expect(status).to_have_text("60 applicants match")
    assert page.locator("#results").get_attribute("aria-live") is None

    page.get_by_label("Stage", exact=True).select_option(label="Interview")
    expect(status).to_have_text("20 applicants match")
    rows = page.locator("#applicant-rows tr:not(.load-more)")
    expect(rows).to_have_count(20)

    page.get_by_role("link", name="Applicant", exact=True).click()
    expect(page).to_have_url(re.compile(r"sort=name"))
    expect(page.locator("th[aria-sort='ascending']")).to_contain_text("Applicant")
    expect(page.get_by_label("Sort")).to_have_value("name")
    names = rows.locator("td:nth-child(2) a").all_inner_texts()
    assert names == sorted(names, key=str.casefold) and len(names) == 20
    page.get_by_label("Sort").select_option(label="Oldest submission first")
    expect(page).to_have_url(re.compile(r"stage=interview&sort=submitted$"))
    expect(page.locator("th[aria-sort='ascending']")).to_contain_text("Submitted")

    page.get_by_label("Program column").uncheck()
    expect(page.locator("#results th")).to_have_count(8)  # one change at a time: a newer one cancels the older
    page.get_by_label("Last update column").check()
    expect(page.locator("#results th")).to_have_text(
        ["", "Applicant", "Cycle", "Stage", "Decision", "Paid", "Enrolled", "Submitted ▲", "Last update"])
    page.wait_for_url(lambda url: "columns=cycle,stage,decision,paid,enrolled,submitted,updated" in unquote(url))
    list_url = page.url

    page.get_by_label("Save this view as").fill("Interviews, oldest first")
    page.get_by_role("button", name="Save view").click()
    expect(page.locator("#saved-views")).to_contain_text("was saved")
    screenshot(page, "applicants-list-views")

    rows.first.locator("td:nth-child(2) a").click()
    expect(page.get_by_role("heading", name="Personal data")).to_be_visible()
    page.get_by_role("link", name="← Back to the applicants").click()
    page.wait_for_url(lambda url: unquote(url) == unquote(list_url))
    expect(page.get_by_label("Stage", exact=True)).to_have_value("interview")
    expect(page.locator("#results th")).to_have_count(9)

    page.goto("/applicants")
    expect(status).to_have_text("60 applicants match")
    page.get_by_role("link", name="Interviews, oldest first").click()
    page.wait_for_url(lambda url: unquote(url) == unquote(list_url))
    expect(status).to_have_text("20 applicants match")


def test_select_all_matching_changes_the_whole_filtered_set(page, factory):
    institution, admin, created = seed_institution(factory, applications=60)
    sign_in(page, admin.email)
    page.goto("/applicants?stage=submitted")
    rows = page.locator("#applicant-rows tr:not(.load-more)")
    expect(rows).to_have_count(20)
    page.goto("/applicants")
    expect(rows).to_have_count(50)
    offer = page.get_by_role("button", name="Select all 60 matching applicants")
    expect(offer).to_be_hidden()

    page.get_by_label("Select every applicant shown").check()
    expect(offer).to_be_visible()
    offer.click()
    expect(page.get_by_text("All 60 matching applicants are selected")).to_be_visible()
    expect(page.get_by_role("button", name="Apply to selected")).to_be_hidden()
    expect(page.get_by_role("button", name="Clear selection")).to_be_focused()

    page.get_by_label("Move to stage").select_option(label="Committee review")
    page.get_by_role("button", name="Apply to all 60 matching applicants").click()
    page.get_by_role("button", name="Move 60 applicants to “Committee review”").click()
    expect(page.locator("#bulk-result")).to_contain_text("60 of the 60 matching applications changed.")
    screenshot(page, "applicants-all-matching")

    page.get_by_role("link", name="Show the updated list").click()
    page.get_by_label("Stage", exact=True).select_option(label="Committee review")
    expect(page.get_by_role("status").filter(has_text="match")).to_have_text("60 applicants match")


def test_sending_to_every_matching_applicant_shows_what_will_be_sent_before_it_is(page, factory):
    institution, admin, created = seed_institution(factory, applications=60)
    sign_in(page, admin.email)
    page.goto("/applicants")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.get_by_label("Select every applicant shown").check()
    page.get_by_role("button", name="Select all 60 matching applicants").click()
    page.get_by_label("Set decision").select_option("accepted")
    page.get_by_role("checkbox", name="Send the decision to the applicants").check()
    page.get_by_role("button", name="Apply to all 60 matching applicants").click()

    question = page.get_by_role("alertdialog")
    expect(question).to_contain_text("Set the decision “Accepted” for 60 applicants?")
    expect(question).to_contain_text("Decisions to send: Accepted × 60.")
    expect(question).to_contain_text("Text messages: none, they are not configured.")
    send = page.get_by_role("button", name="Set the decision “Accepted” for 60 applicants")
    expect(send).to_be_focused()
    screenshot(page, "applicants-all-matching-send-confirm")
    send.click()
    expect(page.locator("#bulk-result")).to_contain_text("60 of the 60 matching applications changed.")
    assert dialogs == [], "the server's question replaces the browser's"


def test_a_search_refused_while_the_searches_are_busy_says_so_in_words(page, page_errors, app, factory):
    """Every search place of the server taken: typing a search shows the portal's own "try again in a few
    seconds" (not a bare status code), and the same search works once a place is free."""
    from core.applications import bulkheads

    institution, admin, _ = seed_institution(factory, applications=3)
    sign_in(page, admin.email)
    page.goto("/applicants")
    with app.app_context():
        permits = [bulkheads.acquire("search") for _ in range(app.config["BULKHEAD_SEARCHES"])]
    try:
        page.locator("#q").fill(LAST_NAMES[0])
        expect(page.locator("#toasts .toast")).to_contain_text("Too many searches or exports are running right now")
    finally:
        for permit in permits:
            permit.release()
    page_errors[:] = [error for error in page_errors if "503" not in error]  # the browser logs the refused request
    page.locator("#q").fill(FIRST_NAMES[0])
    expect(page.locator("#applicant-rows tr")).not_to_have_count(0)
