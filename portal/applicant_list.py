"""The applicant list's state (filters, sort, columns) kept in the URL, its total count, saved views and the
"select all N matching" bulk change."""
from __future__ import annotations

from dataclasses import dataclass, fields
from urllib.parse import parse_qs, urlencode, urlsplit

from flask import flash, g, redirect, request, url_for
from flask_babel import format_number, gettext as _, lazy_gettext as _l, ngettext
from flask_login import current_user

from core.applications.matching_updates import get_bulk_change, start_bulk_change
from core.errors import InvalidInput
from core.institutions import pipeline
from core.messages.plan import plan_matching_sends
from core.applications.listing.query import Sort
from core.accounts.saved_views import delete_view, list_views, save_view
from portal import bp
from portal.applicant_timeline import DECISION_LABELS
from portal.forms import ActionForm, BulkMatchingForm, SavedViewForm, submitted
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
    """The bulk form's change applied to every application matching the list's filters."""
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
    if form.send_decision.data:
        # Sending is confirmed first, naming the decisions and how they will reach each applicant; the change
        # goes ahead only if the number confirmed is still the number matching.
        plan = plan_matching_sends(g.scope, state.filters.as_args(), form.decision.data or None)
        total = plan.covered or len(plan.sends)
        if total == 0:
            raise InvalidInput(_("No applicants match these filters."), field="matching")
        if form.confirm_total.data != str(total):
            return render_page("applicants/bulk_matching_confirm.html", "applicants/partial/bulk_matching_confirm.html",
                               send_plan=plan, total=total, form=form, list_url=state.url(),
                               decision_labels=DECISION_LABELS, stage_name=_stage_name(form.stage.data))
    bulk = start_bulk_change(g.scope, current_user.email, state.filters.as_args(), change)
    audit("applicants.bulk_update_matching", f"{bulk.id}: {bulk.total} matching {urlencode(state.filters.as_args()) or 'all'}")
    if not is_partial_request():
        return redirect(url_for("portal.applicants_bulk_change", change_id=bulk.id))
    return render_page("applicants/partial/bulk_change.html", bulk=bulk, list_url=state.url())


def _stage_name(key: str | None) -> str | None:
    return next((stage.name for stage in pipeline(g.scope) if stage.key.lower() == key.lower()), key) if key else None


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


@bp.app_template_filter("number")
def _number(value: int) -> str:
    """A count with the locale's digit grouping (48,213)."""
    return format_number(value)
