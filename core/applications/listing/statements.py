"""The listing's SQL: each filter a condition on a named parameter, the keyset condition, the orders, and page statements built once per shape."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Integer, Select, Text, and_, bindparam, exists, func, or_, select, text, tuple_
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import aliased

from core.applications.listing.cursor import Position, check_issuer
from core.applications.listing.query import DATE_FILTERS, ApplicationQuery, Sort, bad_parameter
from core.applications.records import application_select
from core.applications.references import typed_reference
from core.applications.search_text import fold
from core.db import KeptSelect, db
from core.models import Applicant, Application, Cycle, Program, Stage
from core.scoping import InstitutionScope


# The lengths of text the short-gram index holds (migration 0020_short_search_grams); longer texts use trigrams.
SHORT_GRAM_LENGTHS = (1, 2)

# Three letters or digits in a row: a word pg_trgm draws a trigram from that is not padded at a word's edge.
_TRIGRAM_WORD = re.compile(r"[^\W_]{3}")

# A word of letters and digits with at least three digits (an email's "mrema815202"): rare in applicants' texts.
_NUMBERED_WORD = re.compile(r"(?=[^\W_]*(?:\d[^\W_]*){3})[^\W_]{6,}")

# A sign (not a letter, digit or space) right before a letter or digit, at the start of a text.
_SIGN_BEFORE_WORD = re.compile(r"[^\w\s][^\W_]")

# Ids are opaque to partners, but a search text shaped like an application id is also looked up as one.
_APPLICATION_ID_SHAPE = re.compile(r"^app_[A-Za-z0-9]+$")


def _like_pattern(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


# How many valid names a 400 lists before it only points to the endpoint that lists them all.
LISTED_NAMES = 20


def referenced_ids(scope: InstitutionScope, model, parameter: str, value: str) -> list[str]:
    """Ids of the institution's cycles/programs whose id or exact name is `value`; a 400 listing the names
    (and pointing to GET /api/v1/cycles, which lists cycles with their programs) when there is none."""
    ids = list(db.session.scalars(
        scope.select(model, model.id).where(or_(model.id == value, model.name == value))))
    if not ids:
        names = list(db.session.scalars(scope.select(model, model.name).order_by(model.name).distinct()))
        listed = ", ".join(repr(name) for name in names[:LISTED_NAMES]) + (", …" if len(names) > LISTED_NAMES else "")
        kind = "cycles" if model is Cycle else "programs"
        raise bad_parameter(parameter, f"{parameter} must be the id or the exact name of one of your {kind}: "
                                       f"{listed or 'you have none'} (GET /api/v1/cycles lists them with their ids)")
    return ids


def pipeline_stage(scope: InstitutionScope, value: str) -> str:
    """The stage id of this institution's pipeline that `value` names (any case); a 400 listing them if none."""
    stages = list(db.session.scalars(scope.select(Stage, Stage.key).order_by(Stage.position)))
    for stage in stages:
        if stage.lower() == value.lower():
            return stage
    raise bad_parameter("stage", f"stage must be one of your pipeline's stage ids: {', '.join(stages)} "
                                 "(GET /api/v1/institution lists them)")


def _text_match(values: Mapping[str, Any]):
    """The application's folded text contains `q`: `LIKE '%q%'`, or a narrowing condition and `strpos` (PostgreSQL)."""
    has_grams = None
    if "q_grams" in values:
        has_grams = func.short_text_grams(Application.search_text, type_=ARRAY(Text)).contains(
            bindparam(PARAMETER_PREFIX + "q_grams", values["q_grams"], type_=ARRAY(Text)))
    if "q_text" not in values:
        like = Application.search_text.like(_bound(values, "q_pattern", Application.search_text), escape="\\")
        return like if has_grams is None else and_(like, has_grams)
    whole_text = func.strpos(Application.search_text, _bound(values, "q_text", Application.search_text)) != 0
    if has_grams is not None:
        return and_(whole_text, has_grams)
    return and_(whole_text, Application.search_text.like(
        _bound(values, "q_word", Application.search_text), escape="\\"))


def _search_condition(values: Mapping[str, Any]):
    """Applicant text (name, full name, email; folded) contains `q`, or the id is `q` when id-shaped, or the
    reference is `q` when reference-shaped."""
    conditions = [_text_match(values)]
    if "q_id" in values:
        conditions.insert(0, Application.id == _bound(values, "q_id", Application.id))
    if "q_reference" in values:
        conditions.insert(0, Application.reference == _bound(values, "q_reference", Application.reference))
    return or_(*conditions) if len(conditions) > 1 else conditions[0]


def filter_values(scope: InstitutionScope, filters: Mapping[str, Any]) -> dict[str, Any]:
    """The values the list filters bind, by name (ids checked, stage resolved, search as a LIKE pattern).

    Raises InvalidInput when `cycle` or `program` names nothing of this institution.
    """
    values: dict[str, Any] = {}
    if "cycle" in filters:
        values["cycle_ids"] = referenced_ids(scope, Cycle, "cycle", filters["cycle"])
    if "program" in filters:
        values["program_ids"] = referenced_ids(scope, Program, "program", filters["program"])
    for name in DATE_FILTERS:
        if name in filters:
            values[name] = filters[name]
    if "stage" in filters:
        values["stage"] = pipeline_stage(scope, filters["stage"])
    for name in ("decision", "enrolled", "paid"):
        if name in filters:
            values[name] = filters[name]
    if "q" in filters:
        folded = fold(filters["q"])
        values["q_pattern"] = _like_pattern(folded)
        if db.session.get_bind().dialect.name == "postgresql":
            values.update(_narrowing_values(folded))
        if _APPLICATION_ID_SHAPE.match(filters["q"]):
            values["q_id"] = filters["q"]
        reference = typed_reference(filters["q"])
        if reference is not None:
            values["q_reference"] = reference
    return values


def _narrowing_values(folded: str) -> dict[str, Any]:
    """For a text PostgreSQL's trigram index serves badly, the values that narrow its candidates; else nothing.

    The cases and their measurements: docs/performance-read-side.md.
    """
    if SHORT_GRAM_LENGTHS[0] <= len(folded) <= SHORT_GRAM_LENGTHS[1]:
        return {"q_grams": [folded], "q_text": folded}
    if not _TRIGRAM_WORD.search(folded):
        if not _few_contain(folded):
            return {}
        return {"q_grams": sorted({folded[at:at + 2] for at in range(len(folded) - 1)}), "q_text": folded}
    numbered = _NUMBERED_WORD.search(folded)
    if numbered and numbered.group() != folded:
        return {"q_word": _like_pattern(numbered.group()), "q_text": folded}
    if _SIGN_BEFORE_WORD.match(folded) and _few_contain(folded):
        return {"q_grams": [folded[:2]]}
    return {}


# At most this share of the applications contain a text that `_narrowing_values` narrows by its pairs.
FEW_CONTAIN_SHARE = 0.001


def _few_contain(folded: str) -> bool:
    """Whether PostgreSQL's estimate (by EXPLAIN) of the `LIKE` is at most FEW_CONTAIN_SHARE of the applications."""
    plan = db.session.execute(text("EXPLAIN (FORMAT JSON) SELECT 1 FROM applications WHERE search_text LIKE "
                                   ":pattern ESCAPE '\\'"), {"pattern": _like_pattern(folded)}).scalar()
    total = db.session.execute(text("SELECT reltuples FROM pg_class WHERE oid = 'applications'::regclass")).scalar()
    return total <= 0 or plan[0]["Plan"]["Plan Rows"] <= FEW_CONTAIN_SHARE * total


PARAMETER_PREFIX = "list_"


def _bound(values: Mapping[str, Any], name: str, column, expanding: bool = False):
    """Filter value `name` as the named parameter `list_<name>`. A statement kept for reuse is run with each
    request's values under the same names (see `page_statement`)."""
    return bindparam(PARAMETER_PREFIX + name, values[name], type_=column.type, expanding=expanding)


# Each filter value's condition on the applications, in the order they are applied.
_CONDITIONS = {
    "cycle_ids": lambda values: Application.cycle_id.in_(_bound(values, "cycle_ids", Application.cycle_id, True)),
    "program_ids": lambda values: Application.program_id.in_(
        _bound(values, "program_ids", Application.program_id, True)),
    "submitted_after": lambda values: Application.submitted_at >= _bound(
        values, "submitted_after", Application.submitted_at),
    "submitted_before": lambda values: Application.submitted_at < _bound(
        values, "submitted_before", Application.submitted_at),
    "updated_since": lambda values: Application.updated_at >= _bound(values, "updated_since", Application.updated_at),
    "stage": lambda values: Application.stage == _bound(values, "stage", Application.stage),
    "decision": lambda values: Application.decision == _bound(values, "decision", Application.decision),
    "enrolled": lambda values: Application.enrolled == _bound(values, "enrolled", Application.enrolled),
    "paid": lambda values: Application.paid == _bound(values, "paid", Application.paid),
}


def filtered(scope: InstitutionScope, values: Mapping[str, Any], statement: Select | None = None) -> Select:
    """`statement` (default: the record select) with the conditions of `filter_values`' values."""
    statement = application_select(scope) if statement is None else statement
    conditions = [condition(values) for name, condition in _CONDITIONS.items() if name in values]
    if "q_pattern" in values:
        conditions += [_search_condition(values), not_erased(scope)]
    return statement.where(*conditions) if conditions else statement


def filtered_applications(scope: InstitutionScope, filters: Mapping[str, Any], statement: Select | None = None):
    """Apply the list filters to `statement` (default: the record select of this institution).

    Raises InvalidInput when `cycle` or `program` names nothing of this institution (a foreign id included).
    """
    return filtered(scope, filter_values(scope, filters), statement)


def not_erased(scope: InstitutionScope):
    """Leaves out applications of applicants whose personal data was erased (search and exports), by NOT EXISTS."""
    erased = aliased(Applicant)
    return ~exists().where(erased.id == Application.applicant_id, scope.owns(erased), erased.erased_at.is_not(None))


def plan_search_for_buffer_cache() -> None:
    """Steer this transaction's PostgreSQL planner (cache size, no parallel workers) towards fast search plans."""
    db.session.execute(select(
        func.set_config("effective_cache_size", func.current_setting("shared_buffers"), True),
        func.set_config("max_parallel_workers_per_gather", "0", True)))


# The order of exports: the list's default order.
EXPORT_ORDER = (Application.submitted_at, Application.id)


def ordered_applications(scope: InstitutionScope, filters: Mapping[str, Any]) -> Select:
    """Every matching application record, in list order (for exports; erased applicants left out)."""
    return filtered_applications(scope, filters).where(not_erased(scope)).order_by(*EXPORT_ORDER)


def _order_columns(sort: Sort) -> tuple:
    """The keyset columns of a sort (an index of migration 0014 or earlier serves each, forwards or backwards)."""
    if sort.key == "updated":
        return Application.updated_at, Application.id
    if sort.key == "name":
        # The applicant's folded "first last email": case and accents do not change the order.
        return Applicant.search_text, Applicant.id, Application.id
    return Application.submitted_at, Application.id


def _order_by(sort: Sort) -> tuple:
    """The ORDER BY of a sort: its keyset columns, each descending when the sort is."""
    return tuple(column.desc() if sort.descending else column for column in _order_columns(sort))


def keyset_after(scope: InstitutionScope, position: Position, *columns, descending: bool = False):
    """`(columns) > position` (`<` when descending): the rows after the cursor in this order. The position's
    values are the named parameters of `after_parameters`."""
    check_issuer(scope, position)
    bound = tuple(bindparam(name, value, type_=column.type)
                  for (name, value), column in zip(after_parameters(position).items(), columns))
    after = tuple_(*columns) < tuple_(*bound) if descending else tuple_(*columns) > tuple_(*bound)
    if len(columns) < 3:
        return after
    # Keys from two tables (name: the applicant's text and id, then the application id): the same bound on the
    # first table's keys alone is what its index can start from; without it the walk starts at the beginning.
    leading, values = tuple_(*columns[:-1]), tuple_(*bound[:-1])
    return and_(leading <= values if descending else leading >= values, after)


def after_parameters(position: Position) -> dict[str, Any]:
    return {f"list_after_{number}": value for number, value in enumerate(position.values)}


def ordered_page(scope: InstitutionScope, values: Mapping[str, Any], query: ApplicationQuery) -> Select:
    """The page statement of a sort other than `stage`: filters, cursor condition, order, limit + 1 rows."""
    sort = query.sort
    if "q_pattern" in values and sort.key == "submitted":
        ids = filtered(scope, values, scope.select(Application, Application.id))
        # Materialized: the page's ids are found once, whatever the planner thinks of the tables' sizes.
        page = _sorted_page(scope, query, ids).cte("page").prefix_with("MATERIALIZED", dialect="postgresql")
        return application_select(scope).join(page, page.c.id == Application.id).order_by(*_order_by(sort))
    return _sorted_page(scope, query, filtered(scope, values))


def _sorted_page(scope: InstitutionScope, query: ApplicationQuery, statement: Select) -> Select:
    """`statement` after the cursor, in the query's order, limit + 1 rows."""
    sort = query.sort
    if sort.key == "name":
        # The applicant's own institution condition lets its (institution, search_text, id) index give the
        # order, joined to each applicant's applications.
        statement = statement.add_columns(Applicant.search_text.label("sort_name")).where(scope.owns(Applicant))
    columns = _order_columns(sort)
    if query.after is not None:
        statement = statement.where(keyset_after(scope, query.after, *columns, descending=sort.descending))
    statement = statement.order_by(*_order_by(sort))
    return statement.limit(page_limit(query.limit + 1))


# Page statements already built, by shape: institution, which filters, sort, whether a cursor, limit.
_PAGE_STATEMENTS: dict[tuple, KeptSelect] = {}


_PAGE_STATEMENTS_KEPT = 512


def page_statement(shape: tuple, build) -> KeptSelect:
    """The statement of this shape (values as `list_…` parameters), from a bounded cache or built now."""
    statement = _PAGE_STATEMENTS.get(shape)
    if statement is None:
        if len(_PAGE_STATEMENTS) >= _PAGE_STATEMENTS_KEPT:
            _PAGE_STATEMENTS.clear()
        statement = _PAGE_STATEMENTS[shape] = KeptSelect(build())
    return statement


def page_limit(rows: int):
    """A LIMIT written into the statement's text rather than sent as a parameter, so PostgreSQL keeps a generic plan."""
    return bindparam("page_limit", rows, type_=Integer, literal_execute=True)
