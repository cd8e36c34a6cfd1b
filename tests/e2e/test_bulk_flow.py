"""Bulk changes in Chromium, one pattern for selected rows and for all matching applicants: the bar's count agrees
with the banner, the same in-page confirmation names the change and the count (never the browser's confirm()),
the table shows the new stage once applied, and nothing is left that would apply the change a second time.
Also: the first applicant row is a few Tab presses away ("Skip to results")."""
from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.test_portal_flow import seed_institution


def _watch_dialogs(page) -> list[str]:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    return dialogs


def test_selected_rows_are_confirmed_in_the_page_changed_once_and_shown_changed(page, factory):
    _, admin, _ = seed_institution(factory, applications=60)
    sign_in(page, admin.email)
    dialogs = _watch_dialogs(page)
    page.goto("/applicants?stage=submitted")
    rows = page.locator("#applicant-rows tr:not(.load-more)")
    expect(rows).to_have_count(20)
    counter = page.locator('[data-selected-count="bulk"]')
    expect(counter).to_have_text("None selected")
    for index in range(3):
        rows.nth(index).get_by_role("checkbox").check()
    expect(counter).to_have_text("3 applicants selected")

    page.get_by_label("Move to stage").select_option(label="Interview")
    page.get_by_role("button", name="Apply to selected").click()
    question = page.get_by_role("alertdialog")
    expect(question).to_contain_text("Move 3 applicants to “Interview”?")
    confirm = question.get_by_role("button", name="Move 3 applicants to “Interview”")
    expect(confirm).to_be_focused()
    screenshot(page, "applicants-bulk-selected-confirm")
    confirm.click()

    result = page.locator("#bulk-result [role=status]")
    expect(result).to_have_text("3 of 3 selected applications changed.")
    updated = page.locator("tr.is-updated")
    expect(updated).to_have_count(3)
    for index in range(3):
        expect(updated.nth(index)).to_contain_text("Interview")
    # Nothing left to apply it again: no question, no selection, no change chosen.
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    expect(counter).to_have_text("None selected")
    expect(page.get_by_label("Move to stage")).to_have_value("")
    expect(page.get_by_role("button", name="Apply to selected")).to_be_disabled()
    assert dialogs == [], "the page asks, not the browser"


def test_all_matching_counts_agree_and_the_table_refreshes_after_the_change(page, factory):
    _, admin, _ = seed_institution(factory, applications=60)
    sign_in(page, admin.email)
    dialogs = _watch_dialogs(page)
    page.goto("/applicants")
    rows = page.locator("#applicant-rows tr:not(.load-more)")
    expect(rows).to_have_count(50)
    counter = page.locator('[data-selected-count="bulk"]')

    page.get_by_label("Select every applicant shown").check()
    expect(counter).to_have_text("50 applicants selected")
    page.get_by_role("button", name="Select all 60 matching applicants").click()
    expect(page.get_by_text("All 60 matching applicants are selected")).to_be_visible()
    expect(counter).to_have_text("60 applicants selected")  # the bar and the banner say the same number

    page.get_by_label("Move to stage").select_option(label="Committee review")
    apply_all = page.get_by_role("button", name="Apply to all 60 matching applicants")
    apply_all.click()
    question = page.get_by_role("alertdialog")
    expect(question).to_contain_text("Move 60 applicants to “Committee review”?")
    expect(question).to_contain_text("Every applicant matching the filters is changed, including those not shown.")
    confirm = question.get_by_role("button", name="Move 60 applicants to “Committee review”")
    expect(confirm).to_be_focused()
    assert_accessible(page, "the all-matching confirmation")
    screenshot(page, "applicants-bulk-matching-confirm")
    confirm.click()

    expect(page.locator("#bulk-result")).to_contain_text("60 of the 60 matching applications changed.")
    # The table is drawn again with the new stage, the selection is gone and "Apply to all 60" with it.
    expect(rows.filter(has_text="Committee review")).to_have_count(50)
    expect(apply_all).to_be_hidden()
    expect(page.get_by_text("All 60 matching applicants are selected")).to_be_hidden()
    expect(counter).to_have_text("None selected")
    expect(page.get_by_label("Select every applicant shown")).not_to_be_checked()
    expect(page.get_by_label("Move to stage")).to_have_value("")
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    assert_accessible(page, "the list after a change of all matching")

    # A new change of all matching asks a new question (a fresh token); cancelling it changes nothing.
    page.get_by_label("Select every applicant shown").check()
    page.get_by_role("button", name="Select all 60 matching applicants").click()
    page.get_by_label("Move to stage").select_option(label="Interview")
    apply_all.click()
    expect(page.get_by_role("alertdialog")).to_contain_text("Move 60 applicants to “Interview”?")
    page.get_by_role("alertdialog").get_by_role("button", name="Cancel").click()
    expect(page.locator("#bulk-result")).to_contain_text("Nothing was changed or sent.")
    page.get_by_label("Stage", exact=True).select_option(label="Committee review")
    expect(page.get_by_role("status").filter(has_text="match")).to_have_text("60 applicants match")
    assert dialogs == [], "the page asks, not the browser"


def test_a_changed_selection_drops_the_question(page, factory):
    _, admin, _ = seed_institution(factory, applications=6)
    sign_in(page, admin.email)
    page.goto("/applicants")
    boxes = page.locator('#applicant-rows input[name="ids"]')
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.get_by_label("Set decision").select_option("accepted")
    page.get_by_role("button", name="Apply to selected").click()
    expect(page.get_by_role("alertdialog")).to_contain_text("Set the decision “Accepted” for 2 applicants?")
    boxes.nth(2).check()
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    page.get_by_role("button", name="Apply to selected").click()
    expect(page.get_by_role("alertdialog")).to_contain_text("Set the decision “Accepted” for 3 applicants?")


def test_the_first_applicant_row_is_a_few_tab_presses_away(page, factory):
    _, admin, created = seed_institution(factory, applications=60)
    sign_in(page, admin.email)
    page.goto("/applicants")
    first_row_box = page.locator('#applicant-rows input[name="ids"]').first
    expect(first_row_box).to_be_attached()
    tabs = 0
    while tabs < 20:
        page.keyboard.press("Tab")
        tabs += 1
        focused = page.evaluate("() => document.activeElement.textContent.trim()")
        if focused == "Skip to results":
            page.keyboard.press("Enter")
            expect(page.locator("#results")).to_be_focused()
        if page.evaluate("el => el === document.activeElement", first_row_box.element_handle()):
            break
    else:
        raise AssertionError("the first applicant row is not reached in 20 Tab presses")
    assert tabs <= 7, f"{tabs} Tab presses to the first applicant row"
