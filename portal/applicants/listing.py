"""The applicant list's state (filters, sort, columns) kept in the URL, its total count, saved views and the
"select all N matching" bulk change."""
from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, fields
from urllib.parse import parse_qs, urlencode, urlsplit

from flask import flash, g, redirect, request, url_for
from flask_babel import format_number, gettext as _, lazy_gettext as _l, ngettext
from flask_login import current_user
from itsdangerous import BadData, URLSafeTimedSerializer
from redis import RedisError

from core.applications.listing.counts import count_applications
from core.applications.listing.query import parse_application_query
from core.secret_key import signing_keys
from core.applications.matching_updates import get_bulk_change, start_bulk_change
from core.db import redis_connection
from core.errors import InvalidInput, ServiceUnavailable
from core.institutions import pipeline, stage_label
from core.models.admissions import DECISIONS
from core.vocabulary import words
from core.messages.plan import plan_matching_sends
from core.applications.listing.query import Sort
from core.accounts.saved_views import delete_view, list_views, save_view
from portal import bp
from portal.applicants.timeline import DECISION_LABELS
from portal.applicants.forms import BulkMatchingForm, SavedViewForm
from portal.forms import ActionForm, submitted
from portal.rendering import is_partial_request, render_page
from portal.security import audit, safe_next, staff_required

DEFAULT_SORT = Sort("submitted", descending=True)
SORT_CHOICES = (
    ("-submitted", _l("Newest submission first")),
    ("submitted", _l("Oldest submission first")),
    ("-updated", _l("Most recently updated first")),
    ("updated", _l("Least recently updated first")),
    ("name", _l("Name, A to Z")),
    ("-name", _l("Name, Z to A")),
    ("stage", _l("Stage, in pipeline order")),
    ("-stage", _l("Stage, in reverse pipeline order")),
)
# Optional columns, in table order (the applicant's name is always shown).
COLUMNS = (
    ("program", _l("Program")),
    ("cycle", _l("Cycle")),
    ("stage", _l("Stage")),
    ("decision", _l("Decision")),
    ("paid", _l("Paid")),
    ("enrolled", _l("Enrolled")),
    ("submitted", _l("Submitted")),
    ("updated", _l("Last update")),
)
DEFAULT_COLUMNS = ("program", "cycle", "stage", "decision", "paid", "enrolled", "submitted")
# Which sort a column header sorts by, and its direction on the first click.
SORTABLE_COLUMNS = {"name": False, "stage": False, "submitted": True, "updated": True}


@dataclass(frozen=True)
class Filters:
    """The table's filters as they appear in the URL (empty values dropped, so links stay short)."""
    q: str = ""
    cycle: str = ""
    program: str = ""
    stage: str = ""
    decision: str = ""
    paid: str = ""
    enrolled: str = ""
    submitted_after: str = ""
    submitted_before: str = ""

    @classmethod
    def from_args(cls, args) -> Filters:
        return cls(**{field.name: (args.get(field.name) or "").strip() for field in fields(cls)})

    def as_args(self) -> dict[str, str]:
        return {name: value for name, value in vars(self).items() if value}

    @property
    def active(self) -> bool:
        return bool(self.as_args())

    @property
    def count(self) -> int:
        """How many filters are set (the search counts as one)."""
        return len(self.as_args())


def _parse_columns(args) -> tuple[str, ...]:
    """The chosen optional columns: `columns=program,stage` or repeated `columns` (checkboxes send one each,
    plus an empty one so that choosing none is not "the default"). Absent: the default columns."""
    if "columns" not in args:
        return DEFAULT_COLUMNS
    chosen = {part.strip() for value in args.getlist("columns") for part in value.split(",")}
    return tuple(key for key, _ in COLUMNS if key in chosen)


@dataclass(frozen=True)
class ListState:
    """Everything that makes the list look as it does: filters, sort and columns (the URL holds it)."""
    filters: Filters
    sort: Sort = DEFAULT_SORT
    columns: tuple[str, ...] = DEFAULT_COLUMNS

    @classmethod
    def from_args(cls, args) -> ListState:
        try:
            sort = Sort.parse(args.get("sort"), DEFAULT_SORT)
        except InvalidInput:
            sort = DEFAULT_SORT  # an old or mistyped link still opens the list
        return cls(Filters.from_args(args), sort, _parse_columns(args))

    def as_args(self) -> dict[str, str]:
        """Only what differs from the defaults, so links stay short."""
        args = self.filters.as_args()
        if self.sort != DEFAULT_SORT:
            args["sort"] = self.sort.token
        if self.columns != DEFAULT_COLUMNS:
            args["columns"] = ",".join(self.columns)
        return args

    def url(self, **extra) -> str:
        return url_for("portal.applicants", **self.as_args(), **extra)

    def query_string(self) -> str:
        return urlencode(self.as_args())

    def shows(self, column: str) -> bool:
        return column in self.columns

    def sorted_by(self, sort_key: str) -> Sort:
        """The sort a click on this column's header asks for: the other direction when it is the sort."""
        if self.sort.key == sort_key:
            return Sort(sort_key, not self.sort.descending)
        return Sort(sort_key, SORTABLE_COLUMNS[sort_key])

    def header_url(self, sort_key: str) -> str:
        state = ListState(self.filters, self.sorted_by(sort_key), self.columns)
        return state.url()

    def aria_sort(self, sort_key: str) -> str | None:
        if self.sort.key != sort_key:
            return None
        return "descending" if self.sort.descending else "ascending"

    @property
    def column_count(self) -> int:
        return 2 + len(self.columns)  # the selection box and the applicant


# Searches and date filters are counted exactly up to this many matches (the counters answer the others).
COUNT_CAP = 10_000


def count_is_capped(total: int) -> bool:
    """An exact count stopped at the cap (the counters answer exactly at any size, and more than the cap is
    true of cap + 1 either way)."""
    return total == COUNT_CAP + 1


def match_count_text(total: int | None) -> str:
    if total is None:
        return _("The number of matching applicants is unavailable right now")
    if count_is_capped(total):
        return _("More than %(count)s applicants match", count=format_number(COUNT_CAP))
    return ngettext("%(count)s applicant matches", "%(count)s applicants match", total, count=format_number(total))


def load_more_text(shown: int, total: int | None) -> str:
    """The "load more" button with how many rows are shown of how many match ("Load more (50 of 200)")."""
    if total is None:  # the count is unavailable right now (no place to count, or cut by its timeout)
        return _("Load more")
    if count_is_capped(total):
        return _("Load more (%(shown)s of more than %(count)s)", shown=format_number(shown),
                 count=format_number(COUNT_CAP))
    return _("Load more (%(shown)s of %(count)s)", shown=format_number(shown), count=format_number(total))


def change_sentence(count: int, stage: str | None, decision: str | None) -> str:
    """The bulk change named with its count ("Move 72 applicants to “Interview”"): the confirmation's question
    and its button say the same thing. `stage` and `decision` are already in words; neither: decisions sent."""
    number = format_number(count)
    if stage and decision:
        return ngettext("Move %(count)s applicant to “%(stage)s” and set the decision “%(decision)s”",
                        "Move %(count)s applicants to “%(stage)s” and set the decision “%(decision)s”", count,
                        count=number, stage=stage, decision=decision)
    if stage:
        return ngettext("Move %(count)s applicant to “%(stage)s”", "Move %(count)s applicants to “%(stage)s”",
                        count, count=number, stage=stage)
    if decision:
        return ngettext("Set the decision “%(decision)s” for %(count)s applicant",
                        "Set the decision “%(decision)s” for %(count)s applicants", count, count=number,
                        decision=decision)
    return ngettext("Send %(count)s decision", "Send %(count)s decisions", count, count=number)


def list_url_from(value: str | None) -> str | None:
    """A `back` link to the applicant list (same site, the list's own path), else None."""
    path = safe_next(value)
    if path is None or urlsplit(path).path != url_for("portal.applicants"):
        return None
    return path


def saved_views_context() -> dict:
    return {"saved_views": list_views(g.scope, current_user.id), "view_form": SavedViewForm(),
            "delete_view_form": ActionForm()}


def _canonical_query(raw: str) -> str:
    """The list state a query string describes, in canonical form (unknown parameters dropped)."""
    args = _MultiArgs(parse_qs(raw or "", keep_blank_values=True))
    return ListState.from_args(args).query_string()


class _MultiArgs(dict):
    """parse_qs's result with the `get`/`getlist` of request.args."""

    def get(self, name, default=None):
        values = super().get(name)
        return values[0] if values else default

    def getlist(self, name):
        return list(super().get(name, []))


@bp.post("/applicants/views")
@staff_required
def applicant_view_save():
    form = submitted(SavedViewForm())
    query = _canonical_query(form.query.data)
    view = save_view(g.scope, current_user.id, form.name.data, query)
    audit("saved_view.save", view.id)
    if is_partial_request():
        return render_page("applicants/partial/saved_views.html", saved_notice=view.name,
                           **saved_views_context())
    flash(_("The view “%(name)s” was saved.", name=view.name), "ok")
    return redirect(url_for("portal.applicants") + (f"?{query}" if query else ""))


@bp.post("/applicants/views/<view_id>/delete")
@staff_required
def applicant_view_delete(view_id: str):
    submitted(ActionForm())
    name = delete_view(g.scope, current_user.id, view_id)
    audit("saved_view.delete", view_id)
    if is_partial_request():
        return render_page("applicants/partial/saved_views.html", deleted_notice=name, **saved_views_context())
    flash(_("The view “%(name)s” was deleted.", name=name), "ok")
    return redirect(url_for("portal.applicants"))


@bp.post("/applicants/bulk-matching")
@staff_required
def applicants_bulk_matching():
    """Apply the bulk form's change to every application matching the list's filters, only with a confirmation
    token used once while the matching count is still the one confirmed."""
    form = submitted(BulkMatchingForm())
    state = ListState.from_args(_MultiArgs(parse_qs(form.matching.data or "", keep_blank_values=True)))
    change = {"stage": form.stage.data, "decision": form.decision.data, "send_decision": form.send_decision.data}
    if not (form.stage.data or form.decision.data or form.send_decision.data):
        raise InvalidInput(_("Choose a stage or a decision to apply."), field="stage")
    if form.cancel.data:
        message = _("Nothing was changed or sent.")
        if not is_partial_request():
            flash(message, "info")
            return redirect(state.url())
        return render_page("applicants/partial/bulk_result.html", ok=True, message=message, records=[],
                           problems=[], stage_names={})
    check_change(form.stage.data, form.decision.data)
    plan = None
    if form.send_decision.data:
        plan = plan_matching_sends(g.scope, state.filters.as_args(), form.decision.data or None)
        total = plan.covered or len(plan.sends)
    else:
        total = count_applications(g.scope, parse_application_query(state.filters.as_args()).filters)
    if total == 0:
        raise InvalidInput(_("No applicants match these filters."), field="matching")
    target = "matching?" + urlencode(sorted(state.filters.as_args().items()))
    if not use_confirmation(form.confirmation.data, target, change, total):
        return render_page("applicants/bulk_matching_confirm.html", "applicants/partial/bulk_confirm.html",
                           form=form, list_url=state.url(), matching=True,
                           **confirmation_context(target, change, total, plan, renewed=bool(form.confirmation.data)))
    bulk = start_bulk_change(g.scope, current_user.email, state.filters.as_args(), change)
    audit("applicants.bulk_update_matching", f"{bulk.id}: {bulk.total} matching {urlencode(state.filters.as_args()) or 'all'}")
    if not is_partial_request():
        return redirect(url_for("portal.applicants_bulk_change", change_id=bulk.id, back=state.url()))
    return render_page("applicants/partial/bulk_change.html", bulk=bulk, list_url=state.url())


def check_change(stage: str | None, decision: str | None) -> None:
    """A stage of the pipeline and a known decision, else a 400 before anything is asked or changed."""
    if stage and stage not in {item.key for item in pipeline(g.scope)}:
        raise InvalidInput(_("Stage: this stage is not in your pipeline."), field="stage")
    if decision and decision not in DECISIONS:
        raise InvalidInput(_("Decision: choose one of the listed decisions."), field="decision")


# How long a bulk confirmation can be answered.
CONFIRMATION_MAX_AGE = 30 * 60


def _confirmations() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(signing_keys(), salt="karibu.bulk-confirmation")


def _confirmed_subject(target: str, change: dict, count: int) -> str:
    """What a confirmation agrees to: this user, this institution, these applicants (`target`: the selected
    ids or the filters matched), this change and this count."""
    subject = [g.scope.institution_id, current_user.id, target, change.get("stage") or "",
               change.get("decision") or "", bool(change.get("send_decision")), count]
    return hashlib.sha256(json.dumps(subject).encode()).hexdigest()


def confirmation_token(target: str, change: dict, count: int) -> str:
    """A signed one-time token for the confirm button of a bulk change."""
    return _confirmations().dumps({"subject": _confirmed_subject(target, change, count),
                                   "once": secrets.token_urlsafe(16)})


def use_confirmation(token: str | None, target: str, change: dict, count: int) -> bool:
    """True, once, for a token younger than CONFIRMATION_MAX_AGE confirming exactly this change, target and
    count; ServiceUnavailable when Redis cannot record its use."""
    if not token:
        return False
    try:
        data = _confirmations().loads(token, max_age=CONFIRMATION_MAX_AGE)
    except BadData:
        return False
    if not isinstance(data, dict) or data.get("subject") != _confirmed_subject(target, change, count):
        return False
    try:
        return bool(redis_connection().set(f"karibu:bulk-confirmation:{data.get('once')}", b"1", nx=True,
                                           ex=CONFIRMATION_MAX_AGE))
    except RedisError:
        raise ServiceUnavailable(_("The change could not be confirmed; nothing was changed. Try again in a "
                                   "moment.")) from None


def confirmation_context(target: str, change: dict, count: int, send_plan, renewed: bool = False) -> dict:
    """Context of partial/bulk_confirm.html: the change and its count, the send plan, a fresh one-time token;
    `renewed` when a stale token made the question be asked again."""
    stage, decision = change.get("stage"), change.get("decision")
    stage_name = next((stage_label(item) for item in pipeline(g.scope) if item.key == stage), stage) if stage else None
    return {"count": count, "send_plan": send_plan, "decision_labels": DECISION_LABELS, "renewed": renewed,
            "sent_after_change": bool(send_plan and (stage or decision)),
            "token": confirmation_token(target, change, count),
            "change": change_sentence(count, stage_name, words("decision", decision) if decision else None)}


@bp.get("/applicants/bulk-changes/<change_id>")
@staff_required
def applicants_bulk_change(change_id: str):
    """Progress of a change of all matching applications (the page polls this while it runs)."""
    bulk = get_bulk_change(g.scope, change_id)
    list_url = list_url_from(request.args.get("back")) or url_for("portal.applicants")
    return render_page("applicants/bulk_change.html", "applicants/partial/bulk_change.html", bulk=bulk,
                       list_url=list_url)


def current_list_state() -> ListState:
    """The list state of this request: its query string, or for a form post the `matching` field that the
    bulk form carries (so rows re-drawn by a bulk answer keep the user's columns)."""
    if request.method == "POST" and "matching" in request.form:
        return ListState.from_args(_MultiArgs(parse_qs(request.form["matching"], keep_blank_values=True)))
    return ListState.from_args(request.args)


@bp.app_context_processor
def _list_state_helper() -> dict:
    return {"current_list_state": current_list_state}
