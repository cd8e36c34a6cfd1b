"""Cycles and their programs, with application counts."""
from __future__ import annotations

from flask import g

from core.applications.overview import cycle_summaries
from portal import bp
from portal.rendering import render_page
from portal.security import staff_required
from portal.settings.apply_link import apply_link


@bp.get("/cycles")
@staff_required
def cycles():
    return render_page("cycles/index.html", summaries=cycle_summaries(g.scope), apply_link=apply_link())
