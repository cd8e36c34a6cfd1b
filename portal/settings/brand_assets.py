"""Public files of an institution's identity: its current logo, without sign-in, at
`/brand/<institution_id>/logo-<digest>.<png|jpg>` (cached for good; any other name is a 404)."""
from __future__ import annotations

from flask import Blueprint

from core.applications.applying import active_institution
from core.errors import NotFound
from core.institutions.identity import applicant_identity, logo_file
from core.scoping import InstitutionScope

bp = Blueprint("brand", __name__)

LOGO_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "public, max-age=31536000, immutable",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Content-Disposition": "inline",
}


@bp.get("/brand/<institution_id>/<file_name>")
def institution_logo(institution_id: str, file_name: str):
    scope = InstitutionScope(institution_id)
    identity = applicant_identity(active_institution(scope))
    if identity.logo_file_name is None or file_name != identity.logo_file_name:
        raise NotFound("No such logo")
    data, content_type = logo_file(scope, identity.logo_digest)
    return data, 200, {**LOGO_HEADERS, "Content-Type": content_type}
