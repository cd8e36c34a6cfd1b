"""Document downloads never trust the stored file name or content type: safe name, allowed type, nosniff."""
from __future__ import annotations

import re
from urllib.parse import unquote

import pytest
from sqlalchemy import select

from core.applications.documents import document_storage
from core.db import db
from core.models import Document

CONTENT = b"<html><script>alert(document.cookie)</script></html>"


def stored_document(app, staff, factory, filename: str, content_type: str, content: bytes = CONTENT):
    application = factory.application(staff.institution)
    with app.app_context():
        digest = document_storage().put(content)
        document = Document(institution_id=staff.institution.id, application_id=application.id, kind="transcript",
                            filename=filename, content_type=content_type, size=len(content), sha256=digest)
        db.session.add(document)
        db.session.commit()
        return application.id, document.id


def download(staff, application_id: str, document_id: str):
    response = staff.get(f"/applicants/{application_id}/documents/{document_id}")
    assert response.status_code == 200
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    return response


def disposition(response) -> tuple[str, str, str]:
    """(type, the ASCII `filename`, the decoded `filename*`), read by hand: parsers merge the two."""
    raw = response.headers["Content-Disposition"]
    assert "\r" not in raw and "\n" not in raw
    match = re.fullmatch(r'(\w+); filename="([^"\\]*)"; filename\*=UTF-8\'\'([A-Za-z0-9%._~-]*)', raw)
    assert match, raw
    return match.group(1), match.group(2), unquote(match.group(3))


@pytest.mark.parametrize("filename, ascii_name, utf8_name", [
    ("../../etc/passwd", "passwd", "passwd"),
    ("..\\..\\windows\\win.ini", "win.ini", "win.ini"),
    ("report.pdf\r\nSet-Cookie: session=stolen", "report.pdf__Set-Cookie_ session=stolen",
     "report.pdf__Set-Cookie_ session=stolen"),
    ('say "hi".pdf', "say _hi_.pdf", "say _hi_.pdf"),
    ("Relevé de notes – Aimée.pdf", "Releve de notes _ Aimee.pdf", "Relevé de notes – Aimée.pdf"),
    ("..", None, None),
])
def test_hostile_file_names_become_a_safe_attachment_name(app, staff, factory, filename, ascii_name, utf8_name):
    application_id, document_id = stored_document(app, staff, factory, filename, "application/pdf")
    kind, plain, encoded = disposition(download(staff, application_id, document_id))
    assert kind == "attachment"
    assert plain == (ascii_name or document_id) and plain.isascii()
    assert encoded == (utf8_name or document_id)
    assert "/" not in encoded and "\\" not in encoded


@pytest.mark.parametrize("stored, served", [
    ("text/html", "application/octet-stream"),
    ("image/svg+xml", "application/octet-stream"),
    ("application/javascript", "application/octet-stream"),
    ("text/html\r\nX-Injected: 1", "application/octet-stream"),
    ("", "application/octet-stream"),
    ("application/pdf", "application/pdf"),
    ("Application/PDF; name=x.html", "application/pdf"),
    ("image/png", "image/png"),
    ("image/jpeg", "image/jpeg"),
])
def test_content_types_come_from_an_allow_list(app, staff, factory, stored, served):
    application_id, document_id = stored_document(app, staff, factory, "file.pdf", stored)
    response = download(staff, application_id, document_id)
    assert response.mimetype == served
    assert "X-Injected" not in response.headers
    assert response.data == CONTENT


def test_the_hostile_name_is_shown_escaped_on_the_applicants_file(app, staff, factory):
    application_id, _ = stored_document(app, staff, factory, '<img src=x onerror="alert(1)">.pdf', "text/html")
    html = staff.get(f"/applicants/{application_id}").get_data(as_text=True)
    assert "<img src=x" not in html and "&lt;img src=x" in html


def test_a_document_whose_file_is_missing_is_a_404_page(app, staff, factory):
    application_id, document_id = stored_document(app, staff, factory, "gone.pdf", "application/pdf",
                                                  content=b"soon gone")
    with app.app_context():
        digest = db.session.scalar(select(Document.sha256).where(Document.id == document_id))
        document_storage().path(digest).unlink()
    response = staff.get(f"/applicants/{application_id}/documents/{document_id}")
    assert response.status_code == 404
    assert "missing from storage" in response.get_data(as_text=True)
