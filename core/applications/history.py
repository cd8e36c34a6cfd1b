"""Recording the history of an application's admission state (core.models.history) and who acted."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.db import db
from core.models import Application, Decision
from core.models.history import ApplicationChange
from core.models.base import utcnow


@dataclass(frozen=True)
class Actor:
    """Who made a change: `kind` is staff, api or applicant; `name` the staff user's email or the API
    credential's display form (key prefix, `oidc:<subject>`); empty for the applicant."""
    kind: str
    name: str = ""

    @classmethod
    def staff(cls, email: str) -> Actor:
        return cls("staff", email)

    @classmethod
    def api(cls, credential: str) -> Actor:
        return cls("api", credential)

    @classmethod
    def applicant(cls) -> Actor:
        return cls("applicant")


def record_change(application: Application, actor: Actor, kind: str, old_value: str | None,
                  new_value: str | None, *, decision: Decision | None = None,
                  at: datetime | None = None) -> ApplicationChange:
    """Add one history row to the session (`decision` must have its id: flush a new one first)."""
    change = ApplicationChange(
        institution_id=application.institution_id, application_id=application.id, changed_at=at or utcnow(),
        kind=kind, old_value=old_value, new_value=new_value, decision_id=decision.id if decision else None,
        actor_kind=actor.kind, actor_name=actor.name[:100])
    db.session.add(change)
    return change
