"""The applicant file's timeline: events and the messages sent to the applicant, oldest first."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import g

from core.applicant_file import ApplicantFile, applicant_file
from portal.forms import ResendMessageForm
from portal.rendering import render_page

EVENT_LABELS = {
    "application.submitted": "Application submitted",
    "application.updated": "Application updated",
    "decision.sent": "Decision sent",
    "decision.responded": "Applicant answered the decision",
    "payment.completed": "Payment completed",
}
CHANNEL_LABELS = {"email": "Email", "sms": "SMS"}


@dataclass(frozen=True)
class Entry:
    at: datetime
    kind: str  # "event" or "message"
    item: object


def timeline_entries(file: ApplicantFile) -> list[Entry]:
    entries = [Entry(event.occurred_at, "event", event) for event in file.events]
    entries += [Entry(message.created_at, "message", message) for message in file.messages]
    # A decision's message is written with its `decision.sent` event: the event first.
    return sorted(entries, key=lambda entry: (entry.at, entry.kind == "message"))


def timeline_context(file: ApplicantFile) -> dict:
    return dict(timeline=timeline_entries(file), event_labels=EVENT_LABELS, channel_labels=CHANNEL_LABELS,
                resend_form=ResendMessageForm())


def render_timeline(application_id: str, notice: str | None = None):
    file = applicant_file(g.scope, application_id)
    return render_page("applicants/partial/timeline.html", record=file.record, notice=notice,
                       **timeline_context(file))
