"""The address of the institution's application form (`/apply/<institution>`), shown on Settings and Cycles, and
its QR code as an SVG file to print on posters."""
from __future__ import annotations

import io

from flask import g, make_response, url_for

from core.config import settings
from portal import bp
from portal.security import staff_required


def apply_link() -> str:
    """The application form's absolute address, on PUBLIC_BASE_URL (the address applicants reach)."""
    return settings().PUBLIC_BASE_URL.rstrip("/") + url_for("public.apply", institution_id=g.scope.institution_id)


def apply_link_qr(link: str) -> bytes:
    """`link` as a QR code in SVG (error correction M, a quiet zone of 4 modules), sized for print."""
    import segno  # only when a QR code is asked for (tests/architecture/test_import_weight.py)

    out = io.BytesIO()
    segno.make(link, error="m", micro=False).save(out, kind="svg", scale=8, border=4, xmldecl=True,
                                                    title=link)
    return out.getvalue()


@bp.get("/apply-link/qr.svg")
@staff_required
def apply_link_qr_svg():
    """The QR code of the application form's address (the page's download link saves it as a file)."""
    response = make_response(apply_link_qr(apply_link()))
    response.mimetype = "image/svg+xml"
    response.headers["Cache-Control"] = "private, no-cache"
    response.headers["Content-Disposition"] = f'inline; filename="apply-{g.scope.institution_id}-qr.svg"'
    return response
