"""What sending decisions will really do, said before it is done: per applicant, the decision and the channels
that will carry it, by the rules of `core.messages.composition.queue_decision_messages`."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


from core.applications.listing.counts import count_applications
from core.applications.listing.query import parse_application_query
from core.applications.listing.statements import filtered_applications
from core.db import db
from core.messages.addresses import valid_email, valid_international_phone
from core.messages.composition import sms_enabled
from core.models import Applicant, Application
from core.scoping import InstitutionScope

# A plan of "send to every matching applicant" reads at most this many applications (in id order, as the change
# walks them); a larger set is described by its first ones, and the plan says so.
MATCHING_PLAN_LIMIT = 20_000


@dataclass(frozen=True)
class PlannedSend:
    application_id: str
    name: str
    decision: str
    email: str | None  # the address the email goes to, None when there is no valid one
    phone: str | None  # the number the SMS goes to, None when no SMS will be sent

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(channel for channel, to in (("email", self.email), ("sms", self.phone)) if to)


@dataclass(frozen=True)
class SendPlan:
    sends: list[PlannedSend]
    sms_configured: bool
    # How many applications the change covers, when the plan reads only the first MATCHING_PLAN_LIMIT of them.
    covered: int | None = None

    @property
    def by_decision(self) -> list[tuple[str, int]]:
        """(decision, how many), most frequent first."""
        return Counter(send.decision for send in self.sends).most_common()

    @property
    def unreachable(self) -> list[PlannedSend]:
        """Applicants no message will reach (no valid email, and no SMS)."""
        return [send for send in self.sends if not send.channels]

    def count(self, channel: str) -> int:
        return sum(channel in send.channels for send in self.sends)


def plan_decision_sends(scope: InstitutionScope, application_ids: Sequence[str],
                        decision: str | None = None) -> SendPlan:
    """The plan of sending the decision of each application (or `decision`, when the same change sets it),
    in the order of `application_ids`; ids of other institutions are left out."""
    with_sms = sms_enabled()
    rows = db.session.execute(
        scope.select(Application, Application.id, Application.decision, Applicant.first_name, Applicant.last_name,
                     Applicant.email, Applicant.phone)
        .join(Applicant, Applicant.id == Application.applicant_id)
        .where(Application.id.in_(list(application_ids)))
    ).all()
    found = {row.id: row for row in rows}
    sends = []
    for application_id in application_ids:
        row = found.get(application_id)
        if row is None:
            continue
        sends.append(PlannedSend(
            application_id=row.id, name=f"{row.first_name} {row.last_name}".strip(),
            decision=decision or row.decision, email=row.email if valid_email(row.email) else None,
            phone=row.phone if with_sms and valid_international_phone(row.phone) else None))
    return SendPlan(sends=sends, sms_configured=with_sms)


def plan_matching_sends(scope: InstitutionScope, filters: Mapping[str, str], decision: str | None = None) -> SendPlan:
    """The plan of sending decisions to every application matching the list's `filters` (the first
    MATCHING_PLAN_LIMIT of them, in the order the change walks them; `covered` then says how many there are)."""
    query = parse_application_query({name: value for name, value in filters.items() if value})
    ids = list(db.session.scalars(
        filtered_applications(scope, query.filters, scope.select(Application, Application.id))
        .order_by(Application.id).limit(MATCHING_PLAN_LIMIT + 1)))
    covered = None
    if len(ids) > MATCHING_PLAN_LIMIT:
        covered = count_applications(scope, query.filters)
        ids = ids[:MATCHING_PLAN_LIMIT]
    sends = [send for start in range(0, len(ids), 500)
             for send in plan_decision_sends(scope, ids[start:start + 500], decision).sends]
    return SendPlan(sends=sends, sms_configured=sms_enabled(), covered=covered)
