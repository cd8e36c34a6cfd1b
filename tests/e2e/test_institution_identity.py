"""What applicants see, in Chromium: the header sample follows the typed name and colour, the colour picker
fills in the field, a refused colour is shown under its field, and an uploaded logo is drawn on the page (the
`/brand` URL under the portal's Content-Security-Policy). Each state passes axe-core."""
from __future__ import annotations

import io

from PIL import Image
from playwright.sync_api import expect

from tests.e2e.axe import assert_accessible
from tests.e2e.conftest import screenshot, sign_in


def _png_file(tmp_path) -> str:
    path = tmp_path / "crest.png"
    output = io.BytesIO()
    Image.new("RGB", (96, 96), (250, 200, 40)).save(output, format="PNG")
    path.write_bytes(output.getvalue())
    return str(path)


def _drop_expected_refusal(page_errors: list[str]) -> None:
    """A refused form is a full page with status 400, which Chromium logs as a console error: expected once."""
    expected = [error for error in page_errors if "status of 400" in error]
    assert expected, page_errors
    page_errors.remove(expected[0])


def test_an_admin_sets_what_applicants_see(page, factory, tmp_path, page_errors):
    institution = factory.institution("Kigali Institute of Health")
    admin = factory.user(institution, role="admin")
    sign_in(page, admin.email)
    page.goto("/settings", wait_until="load")
    sample = page.locator("[data-brand-sample]")
    background = sample.locator("[data-sample-background]")
    expect(sample.locator("[data-sample-name]")).to_have_text("Kigali Institute of Health")
    expect(background).to_have_attribute("fill", "#0b5d57")

    page.get_by_label("Name shown to applicants").fill("KIH Admissions")
    expect(sample.locator("[data-sample-name]")).to_have_text("KIH Admissions")
    page.get_by_label("Brand colour", exact=True).fill("#036")
    expect(background).to_have_attribute("fill", "#003366")
    picker = page.get_by_label("Or pick the brand colour")
    expect(picker).to_have_value("#003366")
    picker.fill("#1d3557")
    expect(page.get_by_label("Brand colour", exact=True)).to_have_value("#1d3557")
    expect(background).to_have_attribute("fill", "#1d3557")
    assert_accessible(page, "/settings while typing")

    warning = page.locator("[data-contrast-warning]")
    expect(warning).to_be_hidden()
    page.get_by_label("Brand colour", exact=True).fill("#ffff00")
    expect(warning).to_have_text("White text on #ffff00 has a contrast of 1.07:1; choose a darker colour "
                                 "(at least 4.5:1, WCAG AA).")  # as the server will say, before saving
    page.get_by_role("button", name="Save what applicants see").click()
    page.wait_for_load_state("load")
    expect(page.locator("#brand_colour-error")).to_contain_text("White text on #ffff00 has a contrast of 1.07:1")
    expect(page.locator("#identity-refused")).to_have_text(
        "Nothing was saved: correct the fields marked below and save again. Every value you typed is kept in the form.")
    expect(page.get_by_label("Name shown to applicants")).to_have_value("KIH Admissions")
    # The sample and the picker show what was typed, refused colour included, with the warning.
    expect(sample.locator("[data-sample-name]")).to_have_text("KIH Admissions")
    expect(background).to_have_attribute("fill", "#ffff00")
    expect(page.get_by_label("Or pick the brand colour")).to_have_value("#ffff00")
    expect(warning).to_be_visible()
    _drop_expected_refusal(page_errors)
    assert_accessible(page, "/settings after a refused colour")

    page.get_by_label("Brand colour", exact=True).fill("#1d3557")
    page.get_by_role("button", name="Save what applicants see").click()
    page.wait_for_url("**/settings#identity-title", wait_until="load")
    expect(page.get_by_text("Saved: name shown to applicants, brand colour.")).to_be_visible()

    page.get_by_label("Logo file").set_input_files(_png_file(tmp_path))
    page.get_by_role("button", name="Upload logo").click()
    page.wait_for_url("**/settings#logo-title", wait_until="load")
    logo = page.get_by_role("img", name="Current logo of KIH Admissions")
    expect(logo).to_be_visible()
    assert logo.evaluate("image => image.complete && image.naturalWidth") == 96
    assert sample.locator("image").get_attribute("href").startswith(f"/brand/{institution.id}/logo-")
    assert_accessible(page, "/settings with a logo")
    screenshot(page, "settings-what-applicants-see")
