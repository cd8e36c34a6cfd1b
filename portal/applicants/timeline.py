"""The applicant file's timeline: one list, oldest first, of everything that happened to an application
(core.applications.applicant_file builds it from the rows; this module names each kind of entry and who did it)."""
from __future__ import annotations

from flask import g
from flask_babel import lazy_gettext

from core.applications.applicant_file import ApplicantFile, TimelineEntry, applicant_file
from core.institutions import named_pipeline as stage_pipeline
from portal.forms import ResendMessageForm
from portal.rendering import render_page

DECISION_LABELS = {
    "none": lazy_gettext("No decision"),
    "accepted": lazy_gettext("Accepted"),
    "waitlisted": lazy_gettext("Waitlisted"),
    "rejected": lazy_gettext("Rejected"),
    "deferred": lazy_gettext("Deferred"),
}
ANSWER_LABELS = {"accepted": lazy_gettext("accepted"), "declined": lazy_gettext("declined")}
ENTRY_LABELS = {
    "submitted": lazy_gettext("Application submitted"),
    "stage": lazy_gettext("Stage changed"),
    "decision": lazy_gettext("Decision set"),
    "enrolled": lazy_gettext("Enrolment changed"),
    "decision_sent": lazy_gettext("Decision sent to the applicant"),
    "decision_answered": lazy_gettext("Applicant answered the decision"),
    "payment": lazy_gettext("Payment"),
    "message": lazy_gettext("Message"),
    "check": lazy_gettext("Credential checked"),
    "document": lazy_gettext("Document uploaded"),
}
CHANNEL_LABELS = {"email": lazy_gettext("Email"), "sms": lazy_gettext("SMS")}


def actor_label(entry: TimelineEntry) -> str:
    """Who did it, in words: "by amina@uni.rw", "through the API (sk_live_ab12)", "by the applicant"; an answer
    given by phone and typed in by staff is "recorded by amina@uni.rw"."""
    actor = entry.actor
    if actor is None:
        return ""
    if actor.kind == "applicant":
        return str(lazy_gettext("by the applicant"))
    if actor.kind == "api":
        return str(lazy_gettext("through the API (%(credential)s)", credential=actor.name))
    if actor.name and entry.kind == "decision_answered":
        return str(lazy_gettext("recorded by %(name)s", name=actor.name))
    if actor.name:
        return str(lazy_gettext("by %(name)s", name=actor.name))
    return str(lazy_gettext("by staff"))


def timeline_context(file: ApplicantFile) -> dict:
    return dict(timeline=file.timeline, entry_labels=ENTRY_LABELS, decision_labels=DECISION_LABELS,
                answer_labels=ANSWER_LABELS, channel_labels=CHANNEL_LABELS, actor_label=actor_label,
                resend_form=ResendMessageForm())


def render_timeline(application_id: str, notice: str | None = None):
    file = applicant_file(g.scope, application_id)
    stage_names = {stage.key: stage.name for stage in stage_pipeline(g.scope)}
    return render_page("applicants/partial/timeline.html", record=file.record, notice=notice,
                       stage_names=stage_names, **timeline_context(file))
