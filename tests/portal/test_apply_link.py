"""The application form's address where staff look for it (issue #41): on Settings and Cycles, with a copy button
and its QR code as an SVG file that encodes exactly that address."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ElementTree

import segno

SVG = "{http://www.w3.org/2000/svg}"


def _expected_link(app, institution) -> str:
    return app.config["PUBLIC_BASE_URL"].rstrip("/") + f"/apply/{institution.id}"


def _qr_svg(link: str) -> bytes:
    out = io.BytesIO()
    segno.make(link, error="m", micro=False).save(out, kind="svg", scale=8, border=4, xmldecl=True, title=link)
    return out.getvalue()


def test_settings_and_cycles_show_the_apply_link_with_copy_button_and_qr_code(app, admin, staff):
    for portal, path in ((admin, "/settings"), (staff, "/cycles")):
        link = _expected_link(app, portal.institution)
        page = portal.get(path).get_data(as_text=True)
        assert f'<a class="mono" id="apply-link-url" href="{link}"' in page, path
        assert 'data-copy="apply-link-url">Copy link</button>' in page, path
        assert 'src="/apply-link/qr.svg"' in page and '/apply-link/qr.svg" download>' in page, path
    assert app.test_client().get(link).status_code == 200, "the address shown is the form itself"


def test_the_qr_code_is_an_svg_of_the_apply_link(app, staff):
    response = staff.get("/apply-link/qr.svg")
    assert response.status_code == 200 and response.mimetype == "image/svg+xml"
    root = ElementTree.fromstring(response.data)
    assert root.tag == f"{SVG}svg" and root.find(f"{SVG}path") is not None
    link = _expected_link(app, staff.institution)
    assert root.find(f"{SVG}title").text == link
    assert response.data == _qr_svg(link), "segno drew the same code for exactly this address"
    assert response.data != _qr_svg(link + "x")


def test_the_qr_code_is_for_signed_in_staff_only(app, staff):
    assert app.test_client().get("/apply-link/qr.svg").status_code in (302, 401)
