"""The dashboard: counts per stage and decision, paid and enrolled shares, applications per day."""
from __future__ import annotations

from flask import g, redirect, request, url_for

from core.models import Cycle
from core.applications.overview import current_cycle, cycles
from core.applications.overview import dashboard as dashboard_figures
from portal import bp
from portal.dashboard.charts import daily_chart, fill_days, weekly_bars
from portal.rendering import render_page
from portal.security import staff_required


@bp.get("/")
def index():
    return redirect(url_for("portal.dashboard"))


@bp.get("/dashboard")
@staff_required
def dashboard():
    every_cycle = cycles(g.scope)
    chosen = request.args.get("cycle")
    cycle = g.scope.require(Cycle, chosen, what="Cycle") if chosen else current_cycle(g.scope)
    figures = dashboard_figures(g.scope, cycle)
    days = fill_days(figures.per_day, figures.first_day, figures.last_day) if cycle else []
    chart = daily_chart(days) if cycle else None
    return render_page("dashboard/index.html", "dashboard/partial/figures.html", figures=figures, chart=chart,
                       weeks=weekly_bars(days), cycle=cycle, cycles=every_cycle)
