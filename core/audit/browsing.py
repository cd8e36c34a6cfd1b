"""Browsing an institution's own audit log: newest first, filtered, paged by id (keyset), and the objects its
rows name (`audit_targets`), so a page can link the ones that still exist."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from babel import Locale
from flask_babel import get_locale
from sqlalchemy import func

from core.db import db
from core.i18n import DEFAULT_LANGUAGE, LANGUAGES
from core.errors import InvalidInput
from core.models import (
    ApiKey, Applicant, Application, AuditLog, Decision, StaffInvitation, User, WebhookDelivery, WebhookEndpoint,
)
from core.paging import KeysetPage
from core.scoping import InstitutionScope
from core.timefmt import parse_utc
from core.vocabulary import VOCABULARY, words

SOURCES = ("api", "portal")
OUTCOMES = ("success", "client_error", "server_error")
# The actions one may filter by: every action the log records (in words in core.vocabulary), less "" (an API
# request that matched no route; an empty filter means any action).
ACTIONS = tuple(code for code in VOCABULARY["audit_action"] if code)
PAGE_SIZE = 50


@dataclass(frozen=True)
class AuditFilters:
    source: str = ""
    actor: str = ""  # the person: a staff email, an API key prefix, …, exactly as recorded
    action: str = ""  # one of ACTIONS; empty: any
    outcome: str = ""
    since: datetime | None = None
    until: datetime | None = None
    before: int | None = None  # only entries older than this id (the page's `next_before`)


def outcome_of(status: int) -> str:
    """The outcome of a recorded HTTP status, a key of OUTCOMES (a redirect after a change succeeded)."""
    return "success" if status < 400 else "client_error" if status < 500 else "server_error"


def parse_audit_filters(args) -> AuditFilters:
    """Validate the filter parameters (a date alone is that whole day); InvalidInput names the offending parameter."""
    source = (args.get("source") or "").strip()
    if source and source not in SOURCES:
        raise InvalidInput(f"source must be one of: {', '.join(SOURCES)}", parameter="source")
    outcome = (args.get("outcome") or "").strip()
    if outcome and outcome not in OUTCOMES:
        raise InvalidInput(f"outcome must be one of: {', '.join(OUTCOMES)}", parameter="outcome")
    action = (args.get("action") or "").strip()
    if action and action not in ACTIONS:
        raise InvalidInput("action must be one of the recorded actions", parameter="action")
    dates = {}
    for name in ("since", "until"):
        raw = (args.get(name) or "").strip()
        if raw:
            try:
                dates[name] = parse_utc(raw)
            except ValueError:
                raise InvalidInput(f"{name} must be an ISO-8601 date, e.g. 2026-01-31", parameter=name) from None
    if "until" in dates and len((args.get("until") or "").strip()) == 10:
        dates["until"] += timedelta(days=1)  # a date means "up to the end of that day"
    if "since" in dates and "until" in dates and dates["until"] <= dates["since"]:
        raise InvalidInput("until must be after since", parameter="until")
    before = (args.get("before") or "").strip()
    if before and not before.isdigit():
        raise InvalidInput("before must be a positive integer", parameter="before")
    return AuditFilters(source=source, actor=(args.get("actor") or "").strip()[:100], action=action,
                        outcome=outcome, since=dates.get("since"), until=dates.get("until"),
                        before=int(before) if before else None)


def audit_page(scope: InstitutionScope, filters: AuditFilters, page_size: int = PAGE_SIZE
               ) -> KeysetPage[AuditLog]:
    statement = scope.select(AuditLog)
    if filters.source:
        statement = statement.where(AuditLog.source == filters.source)
    if filters.actor:
        statement = statement.where(AuditLog.actor == filters.actor)
    if filters.action:
        statement = statement.where(AuditLog.action == filters.action)
    if filters.outcome == "success":
        statement = statement.where(AuditLog.status < 400)
    elif filters.outcome == "client_error":
        statement = statement.where(AuditLog.status >= 400, AuditLog.status < 500)
    elif filters.outcome == "server_error":
        statement = statement.where(AuditLog.status >= 500)
    if filters.since:
        statement = statement.where(AuditLog.created_at >= filters.since)
    if filters.until:
        statement = statement.where(AuditLog.created_at < filters.until)
    if filters.before is not None:
        statement = statement.where(AuditLog.id < filters.before)
    rows = list(db.session.scalars(statement.order_by(AuditLog.id.desc()).limit(page_size + 1)))
    return KeysetPage.of(rows, page_size)


@dataclass(frozen=True)
class AuditTarget:
    """An object an audit row names that still exists in the institution: its kind (`application`, `user`,
    `api_key`, `webhook_endpoint`, `webhook_delivery`), the id to open it by and what to call it."""
    kind: str
    id: str
    label: str


# Ids as new_id() makes them, by the prefix of each kind a row's target may name.
_TARGET_ID = re.compile(r"\b(app|apl|dec|usr|key|whe|whd)_[A-Za-z0-9]+\b")


def target_id(target: str) -> str | None:
    """The first object id in a recorded target (`usr_… -> admin`, `whd_…`), if any."""
    match = _TARGET_ID.search(target or "")
    return match.group(0) if match else None


def readable_target(target: str | None, action: str | None = None) -> str:
    """A target as recorded, with its codes in words: an invitation is recorded as `inv_… (staff)`, a change of
    language as its code (`fr`), named here in the reader's language ("French", "Kifaransa")."""
    if action == "user.language" and target in LANGUAGES:
        return Locale.parse(target).get_display_name(str(get_locale() or DEFAULT_LANGUAGE)).capitalize()
    match = re.fullmatch(r"(\S+) \((\w+)\)", target or "")
    if match and match.group(2) in VOCABULARY["role"]:
        return f"{match.group(1)} ({words('role', match.group(2))})"
    return target or ""


def target_label(row: AuditLog, targets: dict[str, AuditTarget]) -> str:
    """What to call a row's target: the object it names while it exists (a colleague by email, an applicant by
    name), else the target as recorded, in words."""
    target = targets.get(target_id(row.target) or "")
    return target.label if target else readable_target(row.target, row.action)


def audit_targets(scope: InstitutionScope, rows: Iterable[AuditLog]) -> dict[str, AuditTarget]:
    """The objects the rows' targets name that still exist in this institution, by the id in the target."""
    ids: dict[str, set[str]] = {}
    for row in rows:
        found = target_id(row.target)
        if found:
            ids.setdefault(found.split("_", 1)[0], set()).add(found)
    targets: dict[str, AuditTarget] = {}
    name = func.trim(Applicant.first_name + " " + Applicant.last_name)
    applications = (scope.select(Application, Application.id, Application.applicant_id, name)
                    .join(Applicant, Applicant.id == Application.applicant_id).where(Applicant.erased_at.is_(None)))
    if "app" in ids:
        for application_id, _, label in db.session.execute(applications.where(Application.id.in_(ids["app"]))):
            targets[application_id] = AuditTarget("application", application_id, label)
    if "apl" in ids:
        # A person's most recent application stands for the person.
        for application_id, applicant_id, label in db.session.execute(
                applications.where(Application.applicant_id.in_(ids["apl"])).order_by(Application.submitted_at)):
            targets[applicant_id] = AuditTarget("application", application_id, label)
    if "dec" in ids:
        decided = scope.select(Decision, Decision.id, Decision.application_id).where(Decision.id.in_(ids["dec"]))
        application_of = dict(db.session.execute(decided).tuples())
        labels = {application_id: label for application_id, _, label in db.session.execute(
            applications.where(Application.id.in_(set(application_of.values()))))}
        for decision_id, application_id in application_of.items():
            if application_id in labels:
                targets[decision_id] = AuditTarget("application", application_id, labels[application_id])
    if "inv" in ids:
        for invitation_id, email, role in db.session.execute(scope.select(
                StaffInvitation, StaffInvitation.id, StaffInvitation.email, StaffInvitation.role).where(
                StaffInvitation.id.in_(ids["inv"]))):
            targets[invitation_id] = AuditTarget("invitation", invitation_id, f"{email} ({words('role', role)})")
    for prefix, kind, model, label in (("usr", "user", User, User.email), ("key", "api_key", ApiKey, ApiKey.name),
                                       ("whe", "webhook_endpoint", WebhookEndpoint, WebhookEndpoint.url),
                                       ("whd", "webhook_delivery", WebhookDelivery, WebhookDelivery.id)):
        if prefix in ids:
            for object_id, text in db.session.execute(scope.select(model, model.id, label).where(
                    model.id.in_(ids[prefix]))):
                targets[object_id] = AuditTarget(kind, object_id, text or object_id)
    return targets
