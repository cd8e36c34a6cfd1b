"""RQ job: apply a bulk change to every application matching a filter (queued by the applicant list)."""
from __future__ import annotations

from core.applications.matching_updates import run_bulk_change
from core.scoping import InstitutionScope


def apply_bulk_change(institution_id: str, change_id: str) -> dict:
    """Returns the counts of the finished change (rows looked at, changed, refused)."""
    bulk = run_bulk_change(InstitutionScope(institution_id), change_id)
    return {"status": bulk.status, "done": bulk.done, "changed": bulk.changed, "refused": bulk.refused}
