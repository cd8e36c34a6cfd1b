from datetime import date

import pytest

from portal.dashboard.charts import daily_chart, fill_days, nice_step, weekly_bars


@pytest.mark.parametrize(
    ("maximum", "step"),
    [(0, 1), (1, 1), (4, 1), (5, 1), (6, 2), (10, 2), (11, 5), (24, 5), (26, 10), (99, 20), (480, 100), (1234, 500)],
)
def test_nice_step_gives_at_most_five_steps_of_1_2_5(maximum, step):
    assert nice_step(maximum) == step
    assert maximum <= 5 * step


def test_fill_days_adds_missing_days_as_zero():
    counts = {date(2026, 3, 2): 4, date(2026, 3, 4): 1}
    assert fill_days(counts, date(2026, 3, 1), date(2026, 3, 4)) == [
        (date(2026, 3, 1), 0),
        (date(2026, 3, 2), 4),
        (date(2026, 3, 3), 0),
        (date(2026, 3, 4), 1),
    ]


def test_bars_scale_to_the_top_tick_and_sit_on_the_axis():
    series = fill_days({date(2026, 3, 1): 3, date(2026, 3, 3): 7}, date(2026, 3, 1), date(2026, 3, 3))
    chart = daily_chart(series)

    assert [tick.value for tick in chart.ticks] == [0, 2, 4, 6, 8]
    assert chart.total == 10
    assert chart.busiest.count == 7 and chart.busiest.day == date(2026, 3, 3)
    plot_height = chart.plot_bottom - chart.plot_top
    for bar in chart.bars:
        assert bar.y + bar.height == pytest.approx(chart.plot_bottom)
        assert bar.height == pytest.approx(plot_height * bar.count / 8, abs=0.01)
    assert chart.bars[1].height == 0
    assert chart.bars[0].x < chart.bars[1].x < chart.bars[2].x
    assert chart.bars[-1].x + chart.bars[-1].width <= chart.plot_right


def test_long_cycles_get_sparse_date_labels():
    series = [(date(2026, 1, 1).fromordinal(date(2026, 1, 1).toordinal() + i), 1) for i in range(90)]
    chart = daily_chart(series)
    assert 1 < len(chart.x_labels) <= 8
    assert chart.x_labels[0].text == "1 Jan"  # the portal's one date format, day without a leading zero


def test_empty_series_is_an_empty_chart():
    chart = daily_chart(fill_days({}, date(2026, 3, 1), date(2026, 3, 7)))
    assert chart.is_empty
    assert chart.busiest is None
    assert len(chart.bars) == 7


def test_weekly_bars_sum_the_days_from_monday_cut_to_the_days_charted():
    # Wednesday 4 March to Tuesday 17 March 2026: a short first week, a whole one, a short last one.
    series = fill_days({date(2026, 3, 4): 2, date(2026, 3, 8): 1, date(2026, 3, 9): 6, date(2026, 3, 17): 3},
                       date(2026, 3, 4), date(2026, 3, 17))
    weeks = weekly_bars(series)
    assert [(week.first, week.last, week.count) for week in weeks] == [
        (date(2026, 3, 4), date(2026, 3, 8), 3),
        (date(2026, 3, 9), date(2026, 3, 15), 6),
        (date(2026, 3, 16), date(2026, 3, 17), 3),
    ]
    assert [week.share for week in weeks] == [0.5, 1.0, 0.5]
    assert [week.label for week in weeks] == ["4 Mar – 8 Mar", "9 Mar – 15 Mar", "16 Mar – 17 Mar"]
    assert weekly_bars(fill_days({}, date(2026, 3, 2), date(2026, 3, 2)))[0].label == "2 Mar"
    assert weekly_bars([]) == []
