"""Updates of the admission state of applications named by id (the API's PATCH, the portal's edits), including
sending a decision; each batch is all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError
from sqlalchemy.orm import selectinload

from core.events import emission
from core.errors import InvalidInput, problem
from core.db import db
from core.applications.history import Actor, record_change
from core.messages.composition import queue_decision_messages
from core.models.admissions import DECISION_NONE, DECISIONS, Application, Decision, Stage
from core.models.base import utcnow
from core.applications.records import application_record, application_select
from core.scoping import InstitutionScope

MAX_UPDATES = 500
CHANGEABLE_FIELDS = ("stage", "decision", "enrolled", "send_decision")
READ_ONLY_FIELDS = frozenset({
    "institution_id", "applicant_id", "program_id", "cycle_id", "campus_id", "paid", "amount",
    "currency", "submitted_at", "submitted_by_staff", "created_at", "updated_at", "application_id",
    "personal", "application", "payment", "program_name", "cycle_name", "first_name", "last_name",
    "email", "phone",
})


def _reject_null(value: Any) -> Any:
    if value is None:
        raise PydanticCustomError("null_not_allowed", "must not be null; leave the field out instead")
    return value


def _strip(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _lower_stripped(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


class ApplicationUpdate(BaseModel):
    """One item of ``updates``; a field left out is left unchanged."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str = Field(min_length=1, max_length=64)
    stage: str | None = Field(default=None, min_length=1, max_length=64)
    decision: Literal[DECISIONS] | None = None
    enrolled: bool | None = None
    send_decision: bool = False

    _no_nulls = field_validator("stage", "decision", "enrolled", "send_decision", mode="before")(
        _reject_null)
    _trimmed = field_validator("id", "stage", mode="before")(_strip)
    _decision_any_case = field_validator("decision", mode="before")(_lower_stripped)


class UpdateBatch(BaseModel):
    """The request body: ``{"updates": [...]}`` with 1 to 500 items."""

    model_config = ConfigDict(extra="forbid", strict=True)

    updates: list[Any] = Field(min_length=1, max_length=MAX_UPDATES)


@dataclass(frozen=True)
class ItemError:
    index: int
    id: str | None
    field: str | None
    message: str

    def as_problem(self) -> dict:
        """`{location, name: "updates[3].decision", message, index, id}` (the item's index and id kept)."""
        name = f"updates[{self.index}]" + (f".{self.field}" if self.field else "")
        return problem("body", name, self.message, index=self.index, id=self.id)


@dataclass(frozen=True)
class ParsedBatch:
    """The well-formed items (with their index in the request) and the problems of the others."""

    updates: list[tuple[int, ApplicationUpdate]]
    errors: list[ItemError]
    total: int


@dataclass(frozen=True)
class UpdateOutcome:
    application_ids: list[str]
    updated: int


def _message(error: dict) -> str:
    kind = error["type"]
    field = error["loc"][0] if error["loc"] else None
    if kind == "extra_forbidden":
        if field in READ_ONLY_FIELDS:
            return f"{field} is read-only and cannot be changed here"
        if field in ("id", *CHANGEABLE_FIELDS):
            return error["msg"]
        return "unknown field; allowed fields are id, " + ", ".join(CHANGEABLE_FIELDS)
    if kind == "missing":
        return "is required"
    if kind == "literal_error":
        return "must be one of " + ", ".join(DECISIONS)
    if kind == "string_type":
        return "must be a string"
    if kind == "bool_type":
        return "must be true or false"
    if kind in ("model_type", "dict_type"):
        return "each update must be a JSON object"
    return error["msg"][:1].lower() + error["msg"][1:]


def _item_errors(index: int, item: Any, error: ValidationError) -> list[ItemError]:
    raw_id = item.get("id") if isinstance(item, dict) else None
    item_id = raw_id if isinstance(raw_id, str) else None
    return [
        ItemError(index, item_id, str(e["loc"][0]) if e["loc"] else None, _message(e))
        for e in error.errors(include_url=False)
    ]


def parse_updates(body: Any) -> ParsedBatch:
    """Check a body's shape (else raise ``InvalidInput``) and collect the problems of each item."""
    if not isinstance(body, dict):
        raise InvalidInput("request body must be a JSON object with an updates list", field="updates")
    try:
        batch = UpdateBatch.model_validate(body)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        field = str(first["loc"][0]) if first["loc"] else "updates"
        if field != "updates":
            raise InvalidInput(f"unknown field {field}: the body holds only updates", field=field) from None
        if first["type"] == "missing":
            raise InvalidInput("updates is required", field="updates") from None
        raise InvalidInput(
            f"updates must be a list of 1 to {MAX_UPDATES} items", field="updates") from None

    parsed: list[tuple[int, ApplicationUpdate]] = []
    errors: list[ItemError] = []
    first_index_of: dict[str, int] = {}
    for index, item in enumerate(batch.updates):
        try:
            update = ApplicationUpdate.model_validate(item)
        except ValidationError as error:
            errors.extend(_item_errors(index, item, error))
            continue
        if update.id in first_index_of:
            errors.append(ItemError(
                index, update.id, "id",
                f"duplicate id: already updated by item {first_index_of[update.id]}"))
            continue
        first_index_of[update.id] = index
        if update.model_fields_set == {"id"}:
            errors.append(ItemError(
                index, update.id, None,
                "nothing to update: give stage, decision, enrolled or send_decision"))
            continue
        if update.send_decision and update.decision == DECISION_NONE:
            errors.append(ItemError(
                index, update.id, "send_decision", "cannot send the decision none"))
            continue
        parsed.append((index, update))
    return ParsedBatch(parsed, errors, len(batch.updates))


def _reject(errors: Sequence[ItemError], total: int):
    rejected = len({e.index for e in errors})
    raise InvalidInput(
        f"{rejected} of {total} updates are invalid; nothing was changed",
        errors=[e.as_problem() for e in sorted(errors, key=lambda e: e.index)],
    )


def _latest_decisions(scope: InstitutionScope, application_ids: list[str]) -> dict[str, Decision]:
    """The most recent decision row of each application (if any)."""
    latest: dict[str, Decision] = {}
    if not application_ids:
        return latest
    rows = db.session.scalars(
        scope.select(Decision)
        .where(Decision.application_id.in_(application_ids))
        .order_by(Decision.created_at, Decision.id)
    )
    for decision in rows:
        latest[decision.application_id] = decision
    return latest


def _new_decision(application: Application) -> Decision:
    decision = Decision(institution_id=application.institution_id, application=application,
                        status=application.decision)
    db.session.add(decision)
    return decision


@dataclass(frozen=True)
class _Change:
    """One change made to an application, for its history (see core.applications.history)."""
    application: Application
    kind: str
    old_value: str | None
    new_value: str | None
    decision: Decision | None = None


def _apply(update: ApplicationUpdate, application: Application, latest: Decision | None,
           now: datetime) -> tuple[list[_Change], Decision | None]:
    """Change one locked application; returns the changes made and the decision it sent (if any)."""
    changes: list[_Change] = []
    if update.stage is not None and update.stage != application.stage:
        changes.append(_Change(application, "stage", application.stage, update.stage))
        application.stage = update.stage
    if update.enrolled is not None and update.enrolled != application.enrolled:
        changes.append(_Change(application, "enrolled", _flag(application.enrolled), _flag(update.enrolled)))
        application.enrolled = update.enrolled
    if update.decision is not None and update.decision != application.decision:
        previous = application.decision
        application.decision = update.decision
        latest = _new_decision(application) if update.decision != DECISION_NONE else None
        changes.append(_Change(application, "decision", previous, update.decision, latest))
    if not update.send_decision:
        return changes, None
    if latest is None or latest.status != application.decision:
        latest = _new_decision(application)
    if latest.sent_at is not None:
        return changes, None
    latest.sent_at = now
    changes.append(_Change(application, "decision_sent", None, latest.status, latest))
    return changes, latest


def _flag(value: bool) -> str:
    return "true" if value else "false"


def check_updates(scope: InstitutionScope, batch: ParsedBatch) -> None:
    """Raise the ``InvalidInput`` that ``apply_updates`` would raise for ``batch``, writing nothing (to ask
    for a confirmation only of a change that can be made). The batch is checked again when applied."""
    ids = [update.id for _, update in batch.updates]
    applications = {a.id: a for a in db.session.scalars(scope.select(Application).where(Application.id.in_(ids)))}
    _check(scope, batch, applications)


def _check(scope: InstitutionScope, batch: ParsedBatch,
           applications: dict[str, Application]) -> list[ApplicationUpdate]:
    """The batch's updates with stage ids in the pipeline's own case; InvalidInput listing every problem."""
    updates = [update for _, update in batch.updates]
    pipeline = list(db.session.scalars(scope.select(Stage, Stage.key).order_by(Stage.position)))
    stages = {key.lower(): key for key in pipeline}  # stage ids match whatever their case

    errors = list(batch.errors)
    for position, (index, update) in enumerate(batch.updates):
        application = applications.get(update.id)
        if application is None:
            errors.append(ItemError(index, update.id, "id", "no application with this id"))
            continue
        if update.stage is not None and update.stage.lower() in stages:
            update = updates[position] = update.model_copy(update={"stage": stages[update.stage.lower()]})
        elif update.stage is not None:
            errors.append(ItemError(
                index, update.id, "stage",
                f"unknown stage {update.stage!r}: use a stage id of your pipeline "
                f"({', '.join(pipeline[:20])})"))
        decision = update.decision if update.decision is not None else application.decision
        if update.send_decision and decision == DECISION_NONE:
            errors.append(ItemError(
                index, update.id, "send_decision", "cannot send: the application has no decision"))
    if errors:
        db.session.rollback()
        _reject(errors, batch.total)
    return updates


def apply_updates(
    scope: InstitutionScope,
    batch: ParsedBatch,
    *,
    actor: Actor,
    emit_application_updated: bool,
) -> UpdateOutcome:
    """Apply a parsed batch as ``actor`` in one transaction, or change nothing and raise ``InvalidInput``."""
    ids = [update.id for _, update in batch.updates]
    locking = (
        scope.select(Application)
        .where(Application.id.in_(ids))
        .order_by(Application.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if emit_application_updated:
        locking = locking.options(selectinload(Application.applicant))
    applications = {a.id: a for a in db.session.scalars(locking)}
    updates = _check(scope, batch, applications)

    resending = [u.id for u in updates
                 if u.send_decision and u.decision in (None, applications[u.id].decision)]
    latest = _latest_decisions(scope, resending)
    now = utcnow()
    sent: list[Decision] = []
    changed: list[Application] = []
    history: list[_Change] = []
    for update in updates:
        application = applications[update.id]
        changes, sent_decision = _apply(update, application, latest.get(application.id), now)
        if sent_decision is not None:
            sent.append(sent_decision)
        if changes:
            application.updated_at = now
            changed.append(application)
            history.extend(changes)

    db.session.flush()  # new decisions get their ids, which the history names
    for change in history:
        record_change(change.application, actor, change.kind, change.old_value, change.new_value,
                      decision=change.decision, at=now)
    for decision in sent:
        emission.emit_decision_sent(decision)
    queue_decision_messages(sent)
    if emit_application_updated:
        for application in changed:
            emission.emit_application_updated(application)
    db.session.commit()
    return UpdateOutcome(application_ids=ids, updated=len(changed))


def records(scope: InstitutionScope, application_ids: Sequence[str]) -> list[dict]:
    """The API records of ``application_ids``, in that order."""
    rows = db.session.execute(application_select(scope).where(Application.id.in_(application_ids)))
    by_id = {record["id"]: record for record in map(application_record, rows)}
    return [by_id[application_id] for application_id in application_ids]


@dataclass(frozen=True)
class SendOutcome:
    sent: bool  # sent by this call; False: it had been sent already, on `decision.sent_at`
    decision: Decision  # the application's current decision


def send_decision(scope: InstitutionScope, application_id: str, *, actor: Actor,
                  emit_application_updated: bool) -> SendOutcome:
    """Send the application's current decision to the applicant, once: a decision already sent is not sent
    again, and the outcome says when it was. InvalidInput for a missing or foreign id or no decision."""
    batch = parse_updates({"updates": [{"id": application_id, "send_decision": True}]})
    outcome = apply_updates(scope, batch, actor=actor, emit_application_updated=emit_application_updated)
    current = _latest_decisions(scope, [application_id])[application_id]
    return SendOutcome(sent=outcome.updated > 0, decision=current)
