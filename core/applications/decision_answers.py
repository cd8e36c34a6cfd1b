"""The applicant's answer to a sent decision: a signed accept/decline link, or staff recording it."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from flask_babel import lazy_gettext as _l
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import select

from core.events import emission
from core.errors import Conflict, InvalidInput, KaribuError, NotFound
from core.db import db
from core.applications.history import Actor, record_change
from core.models import Decision, utcnow
from core.scoping import InstitutionScope
from core.secret_key import signing_keys

RESPONSES = ("accepted", "declined")
# Decisions an applicant can take or leave; a rejection has nothing to answer.
ANSWERABLE_DECISIONS = ("accepted", "waitlisted", "deferred")
RESPONSE_LINK_MAX_AGE = timedelta(days=60)
_TOKEN_SALT = "karibu.decision-response.v1"


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(signing_keys(), salt=_TOKEN_SALT)


def decision_response_token(decision: Decision) -> str:
    """The token of the applicant's accept/decline link for this decision (valid 60 days)."""
    return _serializer().dumps({"decision_id": decision.id})


def decision_response_tokens(decisions: Iterable[Decision]) -> dict[str, str]:
    """The link tokens of many decisions, by decision id (one signer for all: a bulk send has hundreds)."""
    serializer = _serializer()
    return {decision.id: serializer.dumps({"decision_id": decision.id}) for decision in decisions}


def decision_for_token(token: str) -> Decision:
    """The decision a response link names; NotFound for a forged, garbled or expired link, or one whose applicant
    was erased (its message drawn in the language of the page that shows it)."""
    try:
        claims = _serializer().loads(token, max_age=int(RESPONSE_LINK_MAX_AGE.total_seconds()))
    except SignatureExpired:
        raise NotFound(_l("This link has expired. Please contact the admissions office.")) from None
    except BadSignature:
        raise NotFound(_l("This link is not valid. Please use the link exactly as you received it.")) from None
    decision = db.session.get(Decision, claims.get("decision_id")) if isinstance(claims, dict) else None
    if decision is None or decision.application.applicant.erased_at is not None:  # an erased person answers nothing
        raise NotFound(_l("This link is not valid. Please use the link exactly as you received it."))
    return decision


def record_decision_response(decision_id: str, response: str,
                             actor: Actor | None = None) -> tuple[Decision, bool]:
    """Record the answer to the current sent decision by `actor`; returns (decision, whether it was recorded now).

    The same answer again is a no-op; a different answer raises Conflict (409).
    """
    if response not in RESPONSES:
        raise InvalidInput(f"response must be one of {', '.join(RESPONSES)}", field="response")
    try:
        return _record(decision_id, response, actor or Actor.applicant())
    except KaribuError:
        db.session.rollback()
        raise


def _record(decision_id: str, response: str, actor: Actor) -> tuple[Decision, bool]:
    decision = db.session.scalars(select(Decision).where(Decision.id == decision_id).with_for_update()
                                  .execution_options(populate_existing=True)).one_or_none()
    if decision is None:
        raise NotFound("Decision not found")
    if decision.sent_at is None:
        raise Conflict("this decision has not been sent to the applicant yet", field="decision_id")
    if decision.status not in ANSWERABLE_DECISIONS:
        raise Conflict(f"a decision of {decision.status} cannot be accepted or declined", field="decision_id")
    if decision.response is not None:
        if decision.response == response:
            db.session.rollback()
            return decision, False
        raise Conflict(f"this decision was already {decision.response}; the answer cannot be changed",
                       field="response", response=decision.response)
    newer = db.session.scalar(select(Decision.id).where(
        Decision.application_id == decision.application_id, Decision.id != decision.id,
        Decision.created_at > decision.created_at).limit(1))
    if newer is not None or decision.application.decision != decision.status:
        raise Conflict("this decision has been replaced by a newer one", field="decision_id")
    decision.response = response
    decision.responded_at = utcnow()
    db.session.flush()
    record_change(decision.application, actor, "decision_answered", None, response, decision=decision,
                  at=decision.responded_at)
    emission.emit_decision_responded(decision)
    db.session.commit()
    return decision, True


def record_decision_response_by_staff(scope: InstitutionScope, decision_id: str, response: str,
                                      actor: Actor) -> tuple[Decision, bool]:
    """Staff record the applicant's answer (given by phone, in person…) for a decision of their institution."""
    scope.require(Decision, decision_id, "Decision")
    return record_decision_response(decision_id, response, actor)
