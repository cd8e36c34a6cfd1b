"""What applicants see (issue #25): the identity fields and the logo on the admins' Settings page, and the
logo served at `/brand/<institution_id>/logo-<digest>.<png|jpg>`."""
from __future__ import annotations

import html
import io
import os
import re

import pytest
from PIL import Image, ImageCms
from PIL.PngImagePlugin import PngInfo
from sqlalchemy import select

from core.audit.recording import redact_text
from core.db import db
from core.models import AuditLog, Institution

IDENTITY_COLUMNS = ("display_name", "brand_colour", "contact_email", "website", "footer")
LOGO_COLUMNS = ("logo", "logo_type", "logo_digest")
METADATA_MARKER = "private-author-marker"
GOOD_IDENTITY = {"display_name": "Kigali Institute of Health", "brand_colour": "#1d3557",
                 "contact_email": "admissions@kih.ac.rw", "website": "https://kih.ac.rw/admissions",
                 "footer": "KG 7 Ave, Kigali · +250 788 000 000"}
_LOGO_SRC = re.compile(r'src="(/brand/[^"]+)"')


def _text(response) -> str:
    return response.get_data(as_text=True)


def _stored(app, institution_id: str, columns=IDENTITY_COLUMNS + LOGO_COLUMNS) -> dict:
    with app.app_context():
        institution = db.session.get(Institution, institution_id)
        return {name: getattr(institution, name) for name in columns}


def _audit_rows(app, action: str) -> list[AuditLog]:
    with app.app_context():
        return list(db.session.scalars(select(AuditLog).where(AuditLog.action == action)))


def _error_under(page: str, field: str) -> str | None:
    match = re.search(rf'<p class="error" id="{field}-error">(.*?)</p>', page, re.S)
    return html.unescape(match.group(1)) if match else None


def _value_of(page: str, field: str) -> str | None:
    match = re.search(rf'<input\b[^>]*\bid="{field}"[^>]*>', page)
    value = re.search(r'\bvalue="([^"]*)"', match.group(0)) if match else None
    return html.unescape(value.group(1)) if value else None


def _icc_profile() -> bytes:
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def _png(colour=(200, 30, 30), size=(40, 20), text: str | None = METADATA_MARKER, **options) -> bytes:
    info = PngInfo()
    if text:
        info.add_text("Author", text)
    output = io.BytesIO()
    Image.new("RGB", size, colour).save(output, format="PNG", pnginfo=info, **options)
    return output.getvalue()


def _jpeg_with_metadata() -> bytes:
    """A JPEG with EXIF fields, a comment (COM segment) and an ICC profile."""
    exif = Image.Exif()
    exif[0x010E] = METADATA_MARKER  # ImageDescription
    exif[0x013B] = METADATA_MARKER  # Artist
    output = io.BytesIO()
    Image.new("RGB", (30, 30), (20, 60, 120)).save(output, format="JPEG", exif=exif.tobytes(),
                                                   comment=METADATA_MARKER.encode(), icc_profile=_icc_profile())
    return output.getvalue()


def _gif() -> bytes:
    output = io.BytesIO()
    Image.new("P", (10, 10)).save(output, format="GIF")
    return output.getvalue()


def _upload(portal, data: bytes, file_name: str = "logo.png", **kwargs):
    return portal.post("/settings/logo", {"logo": (io.BytesIO(data), file_name)},
                       content_type="multipart/form-data", **kwargs)


def _logo_url(portal) -> str:
    [url] = _LOGO_SRC.findall(_text(portal.get("/settings")))
    return url


# The identity fields


def test_the_section_shows_the_defaults_before_anything_is_chosen(admin):
    page = _text(admin.get("/settings"))
    assert "What applicants see" in page
    name = html.escape(admin.institution.name)
    assert f'placeholder="{name}"' in page and f"the institution's name, {name}." in page
    assert 'fill="#0b5d57"' in page  # the sample header: Karibu's colour
    assert f">{name}</text>" in page
    assert "contrast with white at least 4.5:1" in page
    assert "Reply-To" in page
    assert "No logo: applicants see the name alone." in page and "Remove logo" not in page


def test_an_admin_saves_the_identity_and_it_is_audited(app, admin):
    response = admin.post("/settings/identity", GOOD_IDENTITY)
    assert response.status_code == 302
    assert _stored(app, admin.institution.id, IDENTITY_COLUMNS) == GOOD_IDENTITY
    [row] = _audit_rows(app, "institution.identity")
    assert row.target == "display_name,brand_colour,contact_email,website,footer"
    assert row.actor == admin.user.email and row.institution_id == admin.institution.id

    page = _text(admin.get("/settings"))
    assert ("Saved: name shown to applicants, brand colour, contact email, website, footer line."
            in html.unescape(page))
    assert 'fill="#1d3557"' in page and ">Kigali Institute of Health</text>" in page
    assert _value_of(page, "footer") == GOOD_IDENTITY["footer"]

    again = admin.post("/settings/identity", {**GOOD_IDENTITY, "website": "https://kih.ac.rw"})
    assert again.status_code == 302
    assert [row.target for row in _audit_rows(app, "institution.identity")][-1] == "website"
    assert admin.post("/settings/identity", {**GOOD_IDENTITY, "website": "https://kih.ac.rw"}).status_code == 302
    assert "Nothing changed." in _text(admin.get("/settings"))
    assert len(_audit_rows(app, "institution.identity")) == 2


def test_an_empty_field_restores_its_default(app, admin):
    admin.post("/settings/identity", GOOD_IDENTITY)
    response = admin.post("/settings/identity", {**GOOD_IDENTITY, "display_name": "  ", "brand_colour": ""})
    assert response.status_code == 302
    stored = _stored(app, admin.institution.id, IDENTITY_COLUMNS)
    assert stored["display_name"] is None and stored["brand_colour"] is None
    page = _text(admin.get("/settings"))
    assert f">{html.escape(admin.institution.name)}</text>" in page and 'fill="#0b5d57"' in page


@pytest.mark.parametrize("typed, stored", [("#036", "#003366"), ("#1D3557", "#1d3557"), ("  #0B5D57 ", "#0b5d57")])
def test_a_brand_colour_is_stored_as_lowercase_six_digits(app, admin, typed, stored):
    assert admin.post("/settings/identity", {"brand_colour": typed}).status_code == 302
    assert _stored(app, admin.institution.id, ("brand_colour",)) == {"brand_colour": stored}


@pytest.mark.parametrize("field, value, message", [
    ("brand_colour", "#ffff00", "White text on #ffff00 has a contrast of 1.07:1; choose a darker colour"),
    ("brand_colour", "#777777", "White text on #777777 has a contrast of 4.48:1; choose a darker colour"),
    ("brand_colour", "navy", "Give a colour as # and six hexadecimal digits"),
    ("brand_colour", "#12345", "Give a colour as # and six hexadecimal digits"),
    ("contact_email", "admissions at kih", "Give one email address"),
    ("contact_email", "a@kih.ac.rw, b@kih.ac.rw", "Give one email address"),
    ("website", "kih.ac.rw", "Give the full address of the website, starting with https://."),
    ("website", "javascript:alert(1)", "Give the full address of the website, starting with https://."),
    ("website", "https://admin:secret@kih.ac.rw", "Give the full address of the website, starting with https://."),
    ("website", "https://kih.ac.rw/apply now", "Give the full address of the website, starting with https://."),
    ("website", "https://kih.ac.rw/\x07", "Give the full address of the website, starting with https://."),
    ("website", "https://[kih.ac.rw", "Give the full address of the website, starting with https://."),
    ("footer", "x" * 301, "At most 300 characters."),
    ("display_name", "n" * 201, "At most 200 characters."),
])
def test_a_bad_value_is_refused_under_its_field_and_nothing_is_stored(app, admin, field, value, message):
    admin.post("/settings/identity", GOOD_IDENTITY)
    before = _stored(app, admin.institution.id)

    response = admin.post("/settings/identity", {**GOOD_IDENTITY, "display_name": "A new name", field: value})
    page = _text(response)
    assert response.status_code == 400
    assert message in _error_under(page, field)
    assert 'aria-invalid="true"' in page
    assert _value_of(page, field) == value  # what the admin typed is kept
    assert ("Nothing was saved: correct the fields marked below and save again. Every value you typed is kept in "
            "the form.") in html.unescape(page)
    assert _value_of(page, "display_name") == ("A new name" if field != "display_name" else value)
    assert _stored(app, admin.institution.id) == before
    assert len(_audit_rows(app, "institution.identity")) == 1  # the first, good save only


def test_every_bad_field_gets_its_own_error_and_the_good_ones_are_not_stored(app, admin):
    response = admin.post("/settings/identity", {"display_name": "Kigali Institute of Health",
                                                 "brand_colour": "#ffff00", "contact_email": "nobody",
                                                 "website": "ftp://kih.ac.rw", "footer": "Kigali"})
    page = _text(response)
    assert response.status_code == 400
    assert "contrast" in _error_under(page, "brand_colour")
    assert "email address" in _error_under(page, "contact_email")
    assert "https://" in _error_under(page, "website")
    assert _error_under(page, "display_name") is None and _error_under(page, "footer") is None
    assert set(_stored(app, admin.institution.id, IDENTITY_COLUMNS).values()) == {None}
    assert _audit_rows(app, "institution.identity") == []


def test_markup_in_a_value_is_shown_as_text(app, admin):
    name = '<script>alert("x")</script> University'
    assert admin.post("/settings/identity", {"display_name": name}).status_code == 302
    page = _text(admin.get("/settings"))
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page


def test_staff_who_are_not_admins_cannot_see_or_change_the_identity(app, portal_as):
    staff = portal_as("staff")
    logo = _png()
    assert staff.get("/settings").status_code == 403
    assert staff.post("/settings/identity", GOOD_IDENTITY).status_code == 403
    assert _upload(staff, logo).status_code == 403
    assert staff.post("/settings/logo/remove").status_code == 403
    assert set(_stored(app, staff.institution.id).values()) == {None}


@pytest.mark.parametrize("path", ["/settings/identity", "/settings/logo", "/settings/logo/remove"])
def test_the_forms_need_their_csrf_token(app, admin, path):
    admin.post("/settings/identity", GOOD_IDENTITY)
    _upload(admin, _png())
    before = _stored(app, admin.institution.id)
    data = {**{name: "" for name in GOOD_IDENTITY}, "logo": (io.BytesIO(_png(colour=(0, 0, 0))), "logo.png")}
    response = admin.post(path, data, csrf=False, content_type="multipart/form-data")
    assert response.status_code == 400
    assert "Your form expired or came from another site" in _text(response)
    assert _stored(app, admin.institution.id) == before


# The logo


def test_a_png_logo_is_stored_without_its_metadata_and_served_as_a_png(app, admin, client):
    upload = _png(icc_profile=_icc_profile())
    assert METADATA_MARKER.encode() in upload and b"iCCP" in upload
    response = _upload(admin, upload)
    assert response.status_code == 302

    stored = _stored(app, admin.institution.id)
    url = _logo_url(admin)
    assert url == f"/brand/{admin.institution.id}/logo-{stored['logo_digest']}.png"
    [row] = _audit_rows(app, "institution.logo")
    # As in every audit row, a long run of digits (a national id?) in the digest is masked.
    assert row.target == redact_text(stored["logo_digest"]) and row.actor == admin.user.email

    served = client.get(url)  # signed out: applicants and mail clients load it
    assert served.status_code == 200
    assert served.headers["Content-Type"] == "image/png"
    assert served.headers["X-Content-Type-Options"] == "nosniff"
    assert served.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert served.headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert served.headers["Content-Disposition"] == "inline"
    assert METADATA_MARKER.encode() not in served.data
    assert b"tEXt" not in served.data and b"iCCP" not in served.data
    with Image.open(io.BytesIO(served.data)) as image:
        assert image.format == "PNG" and image.size == (40, 20) and "icc_profile" not in image.info
        assert image.convert("RGB").getpixel((5, 5)) == (200, 30, 30)


def test_a_jpeg_logo_loses_its_exif_comment_and_profile_and_is_served_as_a_jpeg(app, admin, client):
    upload = _jpeg_with_metadata()
    assert upload.count(METADATA_MARKER.encode()) == 3 and b"ICC_PROFILE" in upload
    assert _upload(admin, upload, "photo.jpeg").status_code == 302
    url = _logo_url(admin)
    assert url.endswith(".jpg")

    served = client.get(url)
    assert served.status_code == 200 and served.headers["Content-Type"] == "image/jpeg"
    assert served.headers["X-Content-Type-Options"] == "nosniff"
    assert METADATA_MARKER.encode() not in served.data
    assert b"Exif" not in served.data and b"ICC_PROFILE" not in served.data
    with Image.open(io.BytesIO(served.data)) as image:
        assert image.format == "JPEG" and image.size == (30, 30)
        assert dict(image.getexif()) == {} and not {"comment", "icc_profile"} & set(image.info)


def test_a_large_logo_is_scaled_down_to_fit_512_pixels(admin, client):
    assert _upload(admin, _png(size=(4096, 1024), text=None)).status_code == 302
    with Image.open(io.BytesIO(client.get(_logo_url(admin)).data)) as image:
        assert image.size == (512, 128)


def test_the_settings_page_shows_the_logo_in_the_sample_header(admin):
    _upload(admin, _png())
    page = _text(admin.get("/settings"))
    url = _logo_url(admin)
    assert f'<image href="{url}"' in page
    assert "Remove logo" in page and "No logo:" not in page


def test_a_signed_in_browser_gets_the_logo_without_the_session_machinery(admin):
    """The logo's response is for shared caches: the portal does not load the signed-in user for it, so it
    neither marks it private nor drops a session that came from another browser (a Set-Cookie)."""
    _upload(admin, _png())
    url = _logo_url(admin)
    for user_agent in ("Werkzeug/test", "Another browser"):
        served = admin.get(url, headers={"User-Agent": user_agent})
        assert served.status_code == 200
        assert served.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert "Set-Cookie" not in served.headers


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="10" height="10"/></svg>'


@pytest.mark.parametrize("data, file_name, message", [
    pytest.param(SVG, "logo.svg", "The logo must be a PNG or JPEG image.", id="svg"),
    pytest.param(SVG, "logo.png", "The logo must be a PNG or JPEG image.", id="svg-named-png"),
    pytest.param(_gif(), "logo.gif", "The logo must be a PNG or JPEG image.", id="gif"),
    pytest.param(b"Just some notes, not an image.\n" * 10, "notes.png", "The logo must be a PNG or JPEG image.",
                 id="text-named-png"),
    pytest.param(os.urandom(4096), "logo.png", "The logo must be a PNG or JPEG image.", id="random-bytes"),
    pytest.param(_png(size=(200, 200))[:-200], "logo.png",
                 "The logo file is damaged or incomplete; export it again as PNG or JPEG.", id="truncated-png"),
    pytest.param(b"", "logo.png", "Choose a PNG or JPEG file.", id="empty"),
    pytest.param(_png(size=(9000, 9000), text=None, optimize=True), "huge.png",
                 "The logo is 9000 × 9000 pixels; make each side at most 4096 pixels.", id="9000-pixels-in-230-kb"),
    pytest.param(_png(size=(4097, 10), text=None), "wide.png",
                 "The logo is 4097 × 10 pixels; make each side at most 4096 pixels.", id="4097-pixels-wide"),
    pytest.param(b"\x89PNG" + os.urandom(300 * 1024), "logo.png", "The logo is 301 KB; the limit is 256 KB.",
                 id="300-kb"),
    pytest.param(b"\x89PNG" + os.urandom(900 * 1024), "logo.png", "The logo is 901 KB; the limit is 256 KB.",
                 id="900-kb"),
])
def test_a_refused_logo_gets_a_form_error_and_nothing_changes(app, admin, client, data, file_name, message):
    _upload(admin, _png())
    old_url = _logo_url(admin)
    before = _stored(app, admin.institution.id)

    response = _upload(admin, data, file_name)
    page = _text(response)
    assert response.status_code == 400
    assert _error_under(page, "logo") == message
    assert _stored(app, admin.institution.id) == before
    assert client.get(old_url).status_code == 200
    assert len(_audit_rows(app, "institution.logo")) == 1


def test_a_request_over_the_apps_limit_gets_the_too_large_page_and_nothing_changes(app, admin):
    _upload(admin, _png())
    before = _stored(app, admin.institution.id)
    response = _upload(admin, b"\x89PNG" + os.urandom(app.config["MAX_CONTENT_LENGTH"]))
    assert response.status_code == 413 and "Too large" in _text(response)
    assert _stored(app, admin.institution.id) == before


@pytest.mark.parametrize("fields, content_type", [
    ({}, "multipart/form-data"),
    ({"logo": "iVBORw0KGgo="}, "multipart/form-data"),  # text, not a file part
    ({"logo": "logo.png"}, "application/x-www-form-urlencoded"),
])
def test_a_form_without_a_file_asks_for_one(app, admin, fields, content_type):
    response = admin.post("/settings/logo", fields, content_type=content_type)
    assert response.status_code == 400
    assert _error_under(_text(response), "logo") == "Choose a PNG or JPEG file."
    assert _stored(app, admin.institution.id, LOGO_COLUMNS) == {name: None for name in LOGO_COLUMNS}


def test_a_new_logo_has_a_new_url_and_the_old_one_is_gone(app, admin, client):
    _upload(admin, _png(colour=(200, 30, 30)))
    old_url = _logo_url(admin)
    _upload(admin, _png(colour=(30, 30, 200)))
    new_url = _logo_url(admin)
    assert new_url != old_url
    assert client.get(old_url).status_code == 404
    assert client.get(new_url).status_code == 200


def test_only_the_exact_current_file_name_of_this_institution_answers(app, admin, factory, client):
    _upload(admin, _png())
    url = _logo_url(admin)
    file_name = url.rsplit("/", 1)[1]
    other = factory.institution()
    digest = _stored(app, admin.institution.id)["logo_digest"]
    for path in (f"/brand/{other.id}/{file_name}", f"/brand/ins_missing/{file_name}",
                 url.replace(".png", ".jpg"), url.replace(digest, digest[::-1]), url.upper(),
                 f"/brand/{admin.institution.id}/{digest}", f"/brand/{admin.institution.id}/logo.png"):
        assert client.get(path).status_code == 404, path
    assert client.get(f"/brand/{other.id}/logo-.png").status_code == 404  # an institution without a logo


def test_an_admin_removes_the_logo(app, admin, client):
    _upload(admin, _png())
    url = _logo_url(admin)
    digest = _stored(app, admin.institution.id)["logo_digest"]

    assert admin.post("/settings/logo/remove").status_code == 302
    assert _stored(app, admin.institution.id, LOGO_COLUMNS) == {name: None for name in LOGO_COLUMNS}
    assert client.get(url).status_code == 404
    [row] = _audit_rows(app, "institution.logo_remove")
    assert row.target == redact_text(digest)
    page = _text(admin.get("/settings"))
    assert "The logo is removed" in page and "No logo: applicants see the name alone." in page

    assert admin.post("/settings/logo/remove").status_code == 302
    assert "There was no logo to remove." in _text(admin.get("/settings"))
    assert len(_audit_rows(app, "institution.logo_remove")) == 1


# Language


def test_the_section_is_drawn_in_the_staff_members_language(admin):
    assert admin.post("/account/language", {"language": "fr"}).status_code == 302
    page = html.unescape(_text(admin.get("/settings")))
    for french in ("Ce que voient les candidats", "Nom affiché aux candidats", "Couleur de la marque",
                   "Adresse e-mail de contact", "Site web", "Ligne de pied de page", "Fichier du logo",
                   "Téléverser le logo", "Enregistrer ce que voient les candidats"):
        assert french in page, french
    refused = html.unescape(_text(admin.post("/settings/identity", {"brand_colour": "#ffff00"})))
    assert "Le texte blanc sur #ffff00 a un contraste de 1.07:1" in refused
