"""Geometry for the server-rendered SVG chart of applications per day, which the template draws."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta

from babel.dates import format_date
from flask_babel import get_locale

WIDTH = 720
HEIGHT = 260
MARGIN_LEFT = 44
MARGIN_RIGHT = 12
MARGIN_TOP = 36  # the band above the plot holds the focused day's label, clear of every bar
MARGIN_BOTTOM = 36
MAX_X_LABELS = 8


TIP_HALF_WIDTH = 180  # room kept either side of a day's label ("3 Nov 2026: 12 applications") inside the plot


@dataclass(frozen=True)
class Bar:
    """One day: its bar, the whole column it owns (what a tap or the focus lands on) and where its label is
    centred (above the plot, kept inside it)."""
    day: date
    count: int
    x: float
    y: float
    width: float
    height: float
    slot_x: float
    slot_width: float
    tip_x: float


@dataclass(frozen=True)
class Tick:
    value: int
    y: float


@dataclass(frozen=True)
class XLabel:
    text: str
    x: float


@dataclass(frozen=True)
class DailyChart:
    width: int
    height: int
    plot_left: float
    plot_right: float
    plot_top: float
    plot_bottom: float
    bars: list[Bar]
    ticks: list[Tick]
    x_labels: list[XLabel]
    total: int
    busiest: Bar | None

    @property
    def tip_y(self) -> float:
        """The baseline of a focused day's label, in the band above the plot."""
        return self.plot_top - 12

    @property
    def is_empty(self) -> bool:
        return self.total == 0


@dataclass(frozen=True)
class Week:
    """The applications of one week (Monday to Sunday, cut to the days charted) and its bar's share of the
    busiest week's (0 to 1)."""
    first: date
    last: date
    count: int
    share: float

    @property
    def label(self) -> str:
        """`2 Mar – 8 Mar` in the page's language (a single day alone)."""
        ends = [format_date(day, "d MMM", locale=get_locale() or "en") for day in dict.fromkeys((self.first, self.last))]
        return " – ".join(ends)


def weekly_bars(series: list[tuple[date, int]]) -> list[Week]:
    """The days of `series` (in day order) summed per week from Monday: the chart drawn on phones."""
    weeks: dict[date, list[tuple[date, int]]] = {}
    for day, count in series:
        weeks.setdefault(day - timedelta(days=day.weekday()), []).append((day, count))
    totals = [(days[0][0], days[-1][0], sum(count for _, count in days)) for days in weeks.values()]
    peak = max((total for _, _, total in totals), default=0)
    return [Week(first, last, total, total / peak if peak else 0.0) for first, last, total in totals]


def nice_step(maximum: int, max_ticks: int = 5) -> int:
    """Smallest step of the form 1, 2 or 5 times a power of ten giving at most max_ticks steps."""
    if maximum <= 0:
        return 1
    raw = maximum / max_ticks
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    for multiplier in (1, 2, 5, 10):
        step = multiplier * magnitude
        if step >= raw:
            return max(1, int(step))
    return max(1, int(10 * magnitude))


def fill_days(counts: dict[date, int], first: date, last: date) -> list[tuple[date, int]]:
    """Every day from first to last inclusive, zero where nothing was counted."""
    days = (last - first).days + 1
    return [(first + timedelta(days=offset), counts.get(first + timedelta(days=offset), 0)) for offset in range(max(0, days))]


def daily_chart(series: list[tuple[date, int]]) -> DailyChart:
    """Lay out one bar per day; series must be in day order with every day present."""
    plot_left = MARGIN_LEFT
    plot_right = WIDTH - MARGIN_RIGHT
    plot_top = MARGIN_TOP
    plot_bottom = HEIGHT - MARGIN_BOTTOM
    plot_height = plot_bottom - plot_top

    peak = max((count for _, count in series), default=0)
    step = nice_step(peak)
    top_value = max(step, math.ceil(peak / step) * step)
    ticks = [
        Tick(value=value, y=plot_bottom - plot_height * value / top_value)
        for value in range(0, top_value + 1, step)
    ]

    slot = (plot_right - plot_left) / max(1, len(series))
    gap = min(2.0, slot * 0.2)
    bars = []
    for index, (day, count) in enumerate(series):
        height = plot_height * count / top_value
        centre = plot_left + index * slot + slot / 2
        bars.append(
            Bar(
                day=day,
                count=count,
                x=round(plot_left + index * slot + gap / 2, 2),
                y=round(plot_bottom - height, 2),
                width=round(max(0.5, slot - gap), 2),
                height=round(height, 2),
                slot_x=round(plot_left + index * slot, 2),
                slot_width=round(slot, 2),
                tip_x=round(min(max(centre, plot_left + TIP_HALF_WIDTH), plot_right - TIP_HALF_WIDTH), 2),
            )
        )

    every = max(1, math.ceil(len(series) / MAX_X_LABELS))
    x_labels = [
        XLabel(text=format_date(bar.day, "d MMM", locale=get_locale() or "en"), x=round(bar.x + bar.width / 2, 2))
        for index, bar in enumerate(bars)
        if index % every == 0
    ]
    busiest = max(bars, key=lambda bar: bar.count) if bars and peak > 0 else None
    return DailyChart(
        width=WIDTH,
        height=HEIGHT,
        plot_left=plot_left,
        plot_right=plot_right,
        plot_top=plot_top,
        plot_bottom=plot_bottom,
        bars=bars,
        ticks=ticks,
        x_labels=x_labels,
        total=sum(count for _, count in series),
        busiest=busiest,
    )
