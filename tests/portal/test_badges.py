"""Status badges: each status shows in its tone (the one table in templates/_components.html), whatever page
draws it; templates write badges and "load more" rows only through the macros of that file."""
from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

from core.db import db
from core.models import AuditLog
from core.models.messages import Message

START = datetime(2025, 3, 1, 8, 0)


def _text(response) -> str:
    return response.get_data(as_text=True)


def test_message_statuses_show_in_their_tone_on_the_list_the_detail_and_the_file(admin, app, factory):
    application = factory.application(admin.institution)
    with app.app_context():
        ids = {}
        for minute, status in enumerate(("queued", "sent", "retry_scheduled", "failed")):
            message = Message(institution_id=admin.institution.id, application_id=application.id, channel="email",
                              recipient="aimee@example.org", template="decision", language="en", subject=status,
                              body_text="…", status=status, created_at=START + timedelta(minutes=minute))
            db.session.add(message)
            db.session.flush()
            ids[status] = message.id
        db.session.commit()
    expected = {"queued": ("info", "queued"), "sent": ("ok", "sent"), "retry_scheduled": ("warn", "retry scheduled"),
                "failed": ("bad", "failed")}
    listing = _text(admin.get("/messages"))
    timeline = _text(admin.get(f"/applicants/{application.id}"))
    for status, (tone, label) in expected.items():
        badge = f'<span class="badge badge-{tone}">{label}</span>'
        assert badge in listing and badge in timeline, status
        assert badge in _text(admin.get(f"/messages/{ids[status]}")), status


def test_an_http_status_shows_in_the_tone_of_its_class_in_the_audit_log(admin, app):
    with app.app_context():
        for minute, status in enumerate((200, 302, 404, 503)):
            db.session.add(AuditLog(institution_id=admin.institution.id, actor="clerk", source="api",
                                    action="probe", status=status, method="GET", path="/api/v1/x",
                                    created_at=START + timedelta(minutes=minute)))
        db.session.commit()
    html = _text(admin.get("/audit?source=api"))
    assert re.findall(r'<span class="badge badge-(\w+)">(\d+)</span>', html) == [
        ("bad", "503"), ("warn", "404"), ("ok", "302"), ("ok", "200")]
    assert html.count('<span class="badge">api</span>') == 4, "the source: a plain badge"


def test_decisions_show_in_their_tone_and_none_is_plain(staff, factory):
    for decision in ("accepted", "waitlisted", "rejected", "deferred", "none"):
        factory.application(staff.institution, decision=decision)
    html = _text(staff.get("/applicants"))
    for tone, words in (("ok", "Accepted"), ("warn", "Waitlisted"), ("bad", "Rejected"), ("info", "Deferred")):
        assert f'<span class="badge badge-{tone}">{words}</span>' in html
    assert '<span class="badge">No decision yet</span>' in html, "in words, never the stored `none`"


def test_templates_draw_badges_and_load_more_rows_only_through_the_macros():
    root = Path(__file__).resolve().parents[2] / "templates"
    by_hand = [str(path.relative_to(root)) for path in sorted(root.rglob("*.html"))
               if path.name != "_components.html"
               and re.search(r'class="(badge|load-more)\b', path.read_text(encoding="utf-8"))]
    assert by_hand == []
