"""The one place where institution data is scoped to the caller's institution (`InstitutionScope`)."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Delete, Select, delete, select

from core.errors import NotFound
from core.db import db
from core.models import Institution


@dataclass(frozen=True)
class InstitutionScope:
    institution_id: str

    def institution(self) -> Institution | None:
        """The institution itself, or None when there is no such institution."""
        return db.session.get(Institution, self.institution_id)

    def select(self, model, *columns) -> Select:
        """`SELECT model (or the given columns) WHERE model.institution_id = <this institution>`."""
        statement = select(*columns) if columns else select(model)
        return statement.where(model.institution_id == self.institution_id)

    def delete_all(self, model) -> Delete:
        """`DELETE model WHERE model.institution_id = <this institution>`."""
        return delete(model).where(model.institution_id == self.institution_id)

    def sandbox(self) -> Institution | None:
        """This institution's sandbox (its hidden test-mode companion), or None before its first use."""
        return db.session.scalars(select(Institution).where(Institution.sandbox_of_id == self.institution_id)).first()

    def owns(self, model):
        """`model.institution_id = <this institution>`, for a joined model (e.g. to let its index order a join)."""
        return model.institution_id == self.institution_id

    def get(self, model, object_id: str):
        """The row with this id in this institution, or None when it is missing or belongs elsewhere."""
        if not isinstance(object_id, str):
            return None
        return db.session.scalars(self.select(model).where(model.id == object_id)).one_or_none()

    def require(self, model, object_id: str, what: str | None = None):
        found = self.get(model, object_id)
        if found is None:
            raise NotFound(f"{what or model.__name__} not found")
        return found
