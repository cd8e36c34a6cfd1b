"""Retention: delete rows older than their kind's retention period (`RULES`), in short committed batches."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, exists, func, select

from core.config import Settings, settings
from core.db import db
from core.models import AuditLog, Event, IdempotencyKey
from core.models.messages import SENDABLE_MESSAGE_STATUSES, Message
from core.models.webhooks import SENDABLE_STATUSES, WebhookAttempt, WebhookDelivery
from core.webhooks.runtime import runtime


@dataclass(frozen=True)
class RetentionRule:
    name: str
    model: type
    timestamp: object  # the column compared with the cutoff
    keep_days: Callable[[Settings], int]
    # Extra conditions: rows that must stay even when old (e.g. deliveries still to send).
    conditions: Callable[[], tuple] = lambda: ()
    # Rows of other tables that reference a batch and go with it (deleted first).
    dependants: tuple[tuple[type, object], ...] = ()


RULES: list[RetentionRule] = [
    RetentionRule("audit_log", AuditLog, AuditLog.created_at, lambda s: s.RETENTION_AUDIT_DAYS),
    RetentionRule(
        "webhook_deliveries", WebhookDelivery, WebhookDelivery.created_at, lambda s: s.RETENTION_WEBHOOK_DAYS,
        conditions=lambda: (WebhookDelivery.status.not_in(SENDABLE_STATUSES),),
        dependants=((WebhookAttempt, WebhookAttempt.delivery_id),)),
    # An event still referenced by a delivery stays until that delivery goes.
    RetentionRule(
        "events", Event, Event.occurred_at,
        lambda s: s.EVENTS_RETENTION_DAYS + s.RETENTION_EVENTS_DAYS_PAST_FEED,
        conditions=lambda: (~exists().where(WebhookDelivery.event_id == Event.id),)),
    # Messages still to send stay whatever their age.
    RetentionRule("messages", Message, Message.created_at, lambda s: s.RETENTION_MESSAGES_DAYS,
                  conditions=lambda: (Message.status.not_in(SENDABLE_MESSAGE_STATUSES),)),
    # Stored answers of writes sent with an Idempotency-Key are replayed for 24 hours (core/idempotency/keys.py).
    RetentionRule("idempotency_keys", IdempotencyKey, IdempotencyKey.created_at, lambda s: 1),
]


@dataclass
class RuleReport:
    name: str
    cutoff: datetime
    deleted: int = 0
    dependants_deleted: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"kind": self.name, "cutoff": self.cutoff.isoformat() + "Z", "deleted": self.deleted,
                "dependants_deleted": self.dependants_deleted}


def run_retention(*, dry_run: bool = False, batch_size: int | None = None,
                  on_batch: Callable[[str, int], None] | None = None) -> list[RuleReport]:
    """Delete (or, with `dry_run`, count) every expired row; returns one report per kind of record."""
    config = settings()
    batch_size = batch_size or config.RETENTION_BATCH_SIZE
    now = runtime.clock.now()
    reports = []
    for rule in RULES:
        report = RuleReport(rule.name, now - timedelta(days=rule.keep_days(config)))
        expired = (rule.timestamp < report.cutoff, *rule.conditions())
        primary_key = rule.model.__mapper__.primary_key[0]
        if dry_run:
            report.deleted = db.session.scalar(select(func.count()).select_from(rule.model).where(*expired))
            db.session.rollback()
        else:
            last = None  # keyset: a batch never rescans the index entries of the rows already deleted
            while True:
                after = () if last is None else (primary_key > last,)
                ids = list(db.session.scalars(
                    select(primary_key).where(*expired, *after).order_by(primary_key).limit(batch_size)))
                if not ids:
                    db.session.rollback()
                    break
                for model, column in rule.dependants:
                    result = db.session.execute(delete(model).where(column.in_(ids)))
                    report.dependants_deleted[model.__tablename__] = (
                        report.dependants_deleted.get(model.__tablename__, 0) + result.rowcount)
                db.session.execute(delete(rule.model).where(primary_key.in_(ids)))
                db.session.commit()
                last = ids[-1]
                report.deleted += len(ids)
                if on_batch:
                    on_batch(rule.name, len(ids))
        reports.append(report)
    return reports
