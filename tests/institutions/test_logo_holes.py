"""Logo uploads found by the probe of issue #39: a multi-picture JPEG (MPO, as many phones save photos) is taken as
a JPEG of its first picture instead of a 500; a progressive JPEG of thousands of scans (a minute of CPU to decode)
is refused in a sentence before any decoding; and each institution uploads at most PORTAL_LOGO_UPLOAD_RATE_LIMIT
logos."""
from __future__ import annotations

import io
import time

from PIL import Image

from tests.institutions.test_institution_identity import _error_under, _stored, _text, _upload


def _mpo() -> bytes:
    output = io.BytesIO()
    first, second = Image.new("RGB", (120, 80), "#0b5d57"), Image.new("RGB", (120, 80), "#ff0000")
    first.save(output, "MPO", save_all=True, append_images=[second])
    return output.getvalue()


def _many_scans(side: int = 4000, size: int = 250 * 1024) -> bytes:
    """A progressive JPEG padded to `size` with copies of its smallest scan: thousands of scans of a big picture."""
    output = io.BytesIO()
    Image.new("RGB", (side, side), "#335577").save(output, "JPEG", progressive=True, quality=90)
    data = output.getvalue()
    starts = [index for index in range(len(data) - 1) if data[index:index + 2] == b"\xff\xda"]
    scans = [data[start:end] for start, end in zip(starts, starts[1:] + [len(data) - 2])]
    smallest = min(scans, key=len)
    return data[:-2] + smallest * ((size - len(data)) // len(smallest)) + b"\xff\xd9"


def test_a_multi_picture_jpeg_is_stored_as_the_jpeg_of_its_first_picture(app, admin, client):
    data = _mpo()
    assert Image.open(io.BytesIO(data)).format == "MPO"
    response = _upload(admin, data, "photo.jpg")
    assert response.status_code == 302, _text(response)
    stored = _stored(app, admin.institution.id, ("logo", "logo_type"))
    assert stored["logo_type"] == "image/jpeg"
    with Image.open(io.BytesIO(stored["logo"])) as logo:
        assert logo.format == "JPEG" and logo.size == (120, 80)
        red, green, blue = logo.getpixel((60, 40))
        assert red < 40 and green > 70  # the first picture's colour, not the second's red


def test_a_jpeg_of_thousands_of_scans_is_refused_before_it_is_decoded(app, admin):
    data = _many_scans()
    assert len(data) <= 256 * 1024 and data.count(b"\xff\xda") > 3000
    started = time.process_time()
    response = _upload(admin, data, "logo.jpg")
    spent = time.process_time() - started
    assert response.status_code == 400
    assert _error_under(_text(response), "logo").startswith("The logo is a JPEG of ")
    assert "save it again as a standard JPEG or as PNG." in _text(response)
    assert spent < 10  # decoding it takes over a minute of CPU; refusing it a small fraction of a second
    assert _stored(app, admin.institution.id, ("logo",)) == {"logo": None}


def test_an_ordinary_progressive_jpeg_is_accepted(app, admin):
    output = io.BytesIO()
    Image.effect_noise((300, 200), 40).convert("RGB").save(output, "JPEG", progressive=True)
    assert _upload(admin, output.getvalue(), "logo.jpg").status_code == 302


def test_logo_uploads_are_limited_per_institution(app, admin, portal_as, monkeypatch):
    monkeypatch.setitem(app.config, "PORTAL_LOGO_UPLOAD_RATE_LIMIT", "3/hour")
    colleague = portal_as("admin", institution=admin.institution)
    answers = [_upload(portal, _mpo(), "photo.jpg").status_code for portal in (admin, colleague, admin, colleague)]
    assert answers == [302, 302, 302, 429]
    assert _upload(portal_as("admin"), _mpo(), "photo.jpg").status_code == 302  # another institution's own count
