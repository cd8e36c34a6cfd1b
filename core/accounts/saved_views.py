"""Saved views of the applicant list (a name and a query string), scoped to one user of one institution."""
from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from core.errors import InvalidInput, NotFound
from core.db import db
from core.models import SavedView
from core.scoping import InstitutionScope

MAX_NAME_LENGTH = 100
MAX_QUERY_LENGTH = 2000
MAX_VIEWS_PER_USER = 50


def list_views(scope: InstitutionScope, user_id: str) -> list[SavedView]:
    """The user's views, by name."""
    return list(db.session.scalars(
        scope.select(SavedView).where(SavedView.user_id == user_id).order_by(SavedView.name, SavedView.id)))


def save_view(scope: InstitutionScope, user_id: str, name: str, query: str) -> SavedView:
    """Create the view `name`, or give the user's view of that name this query."""
    name = " ".join(name.split())
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise InvalidInput(f"A view name has 1 to {MAX_NAME_LENGTH} characters.", field="name")
    if len(query) > MAX_QUERY_LENGTH or "\x00" in query:
        raise InvalidInput("This list state is too long to be saved.", field="query")
    view = db.session.scalars(
        scope.select(SavedView).where(SavedView.user_id == user_id, SavedView.name == name)).one_or_none()
    if view is None:
        if len(list_views(scope, user_id)) >= MAX_VIEWS_PER_USER:
            raise InvalidInput(f"You can keep at most {MAX_VIEWS_PER_USER} saved views; delete one first.",
                               field="name")
        view = SavedView(institution_id=scope.institution_id, user_id=user_id, name=name)
        db.session.add(view)
    view.query = query
    try:
        db.session.commit()
    except IntegrityError:  # the same name saved twice at once: the other request's view stands
        db.session.rollback()
        raise InvalidInput("A view with this name was just saved; try again.", field="name") from None
    return view


def get_view(scope: InstitutionScope, user_id: str, view_id: str) -> SavedView:
    view = scope.get(SavedView, view_id)
    if view is None or view.user_id != user_id:
        raise NotFound("Saved view not found")
    return view


def delete_view(scope: InstitutionScope, user_id: str, view_id: str) -> str:
    """Delete the user's view; returns its name."""
    view = get_view(scope, user_id, view_id)
    name = view.name
    db.session.delete(view)
    db.session.commit()
    return name
