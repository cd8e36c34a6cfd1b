"""The development mail sink's inbox page (issue #41): the kept emails newest first, each with its text part's
links clickable and its HTML part in a sandboxed frame that runs no script; nothing outside the mail folder."""
from __future__ import annotations

import os
from email.message import EmailMessage

from werkzeug.test import Client

from devtools.mail_inbox import MailInbox


def _keep(folder, name: str, subject: str, text: str, html: str | None = None, mtime: int = 0):
    message = EmailMessage()
    message["Subject"], message["From"], message["To"] = subject, "Admissions <no-reply@ku.ac.ke>", "a@example.org"
    message.set_content(text)
    if html:
        message.add_alternative(html, subtype="html")
    path = folder / name
    path.write_bytes(message.as_bytes())
    os.utime(path, (mtime, mtime))


def test_the_inbox_lists_newest_first_and_shows_each_email_as_read(tmp_path):
    _keep(tmp_path, "20260101T000000-00001.eml", "Older", "Hello", mtime=1_000)
    _keep(tmp_path, "20260101T000001-00002.eml", "Your decision <b>", "Answer: https://karibu.example/decisions/respond/tok_1.",
          html='<p>Answer <a href="https://karibu.example/decisions/respond/tok_1">here</a></p><script>alert(1)</script>',
          mtime=2_000)
    client = Client(MailInbox(tmp_path))
    listing = client.get("/").get_data(as_text=True)
    assert listing.index("Your decision &lt;b&gt;") < listing.index("Older")

    shown = client.get("/messages/20260101T000001-00002.eml")
    page = shown.get_data(as_text=True)
    assert shown.status_code == 200 and "default-src 'none'" in shown.headers["Content-Security-Policy"]
    assert ('Answer: <a href="https://karibu.example/decisions/respond/tok_1">'
            "https://karibu.example/decisions/respond/tok_1</a>.") in page  # the full stop is not part of the link
    assert 'sandbox="allow-popups allow-popups-to-escape-sandbox"' in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # only inside srcdoc, inert


def test_nothing_outside_the_mail_folder_is_served(tmp_path):
    (tmp_path / "mail").mkdir()
    _keep(tmp_path, "secret.eml", "Secret", "not in the inbox folder")
    client = Client(MailInbox(tmp_path / "mail"))
    for path in ("/messages/..%2Fsecret.eml", "/messages/../secret.eml", "/messages/missing.eml",
                 "/messages/.hidden.eml", "/messages/notes.txt"):
        assert client.get(path).status_code == 404, path
    assert "No email yet" in client.get("/").get_data(as_text=True)
