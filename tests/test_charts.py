"""The admin's inline SVG charts: what they draw, what they say, and what they leave out."""

import re
from datetime import UTC, datetime, timedelta

from core.charts import AXIS_Y, bar_chart, byte_size, byte_unit, line_chart, number

START = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def minutes(values: list[float | None]) -> list[tuple[datetime, float | None]]:
    return [(START + timedelta(minutes=index), value) for index, value in enumerate(values)]


def test_a_line_names_its_figure_latest_value_and_range_for_the_eye_and_the_screen_reader():
    chart = line_chart(minutes([1, 4, 2]), label="Persist lag p99", unit="ms")

    assert 'aria-label="Persist lag p99: latest 2 ms, lowest 1 ms, highest 4 ms, 10:00 to 10:02 UTC"' in chart
    assert "<title>Persist lag p99: latest 2 ms" in chart
    assert chart.count("<polyline") == 1
    assert "10:00 to 10:02 UTC" in chart


def test_a_missing_sample_leaves_a_gap_not_a_zero():
    chart = line_chart(minutes([1, 2, None, 3, 4]), label="Queue depth")

    assert chart.count("<polyline") == 2
    assert "lowest 1" in chart  # the gap is not counted as 0


def test_a_lone_point_between_gaps_is_a_dot():
    chart = line_chart(minutes([None, 5, None]), label="Hit rate", unit="%")

    assert chart.count("<polyline") == 0
    assert chart.count("<circle") == 1


def test_a_chart_without_any_sample_says_so():
    chart = line_chart(minutes([None, None]), label="Dead letters")

    assert 'aria-label="Dead letters: no data"' in chart
    assert "no data" in chart


def test_a_threshold_sets_the_least_top_of_the_scale_and_values_above_it_stay_inside_the_plot():
    low = line_chart(minutes([10, 20]), label="Lag", unit="ms", y_max=1000)
    high = line_chart(minutes([10, 5000]), label="Lag", unit="ms", y_max=1000)

    assert "top 1,000 ms" in low
    assert "top 5,000 ms" in high
    for chart in (low, high):
        ys = [float(pair.split(",")[1]) for pair in chart.split('points="')[1].split('"')[0].split()]
        assert all(0 <= y <= 60 for y in ys)


def test_labels_are_escaped():
    chart = line_chart(minutes([1, 2]), label="<script>alert(1)</script>")

    assert "<script>" not in chart
    assert "&lt;script&gt;" in chart


def test_bars_are_one_per_day_with_a_title_each_and_a_total():
    chart = bar_chart([("2026-11-27", 3), ("2026-11-28", 0), ("2026-11-29", 12)], label="Messages")

    assert chart.count("<rect") == 3
    assert "<title>2026-11-27: 3</title>" in chart
    assert "15 in all" in chart
    assert "2026-11-27 to 2026-11-29" in chart


def test_numbers_read_with_separators_and_at_most_two_decimals():
    assert number(1234567) == "1,234,567"
    assert number(0.125, "s") == "0.12 s"
    assert number(2.5, "%") == "2.5 %"
    assert number(None) == "no data"


def test_bars_of_a_level_are_captioned_with_the_latest_not_the_sum():
    chart = bar_chart([("2026-11-28", 1.5), ("2026-11-29", 2.25)], label="Storage", unit="MB", summed=False)

    assert "in all" not in chart
    assert '<strong class="memory-chart__value">2.25 MB</strong>' in chart


def test_a_flat_zero_line_is_drawn_above_the_axis_not_on_it():
    chart = line_chart(minutes([0, 0, 0, 0]), label="Dead letters waiting")

    ys = {float(pair.split(",")[1]) for pair in re.search(r'<polyline[^>]* points="([^"]+)"', chart).group(1).split()}
    axis = float(re.search(r'<line class="memory-chart__axis"[^>]* y1="([^"]+)"', chart).group(1))
    assert axis == AXIS_Y
    assert len(ys) == 1
    assert axis - ys.pop() >= 4  # a few units above: a line of its own, not the axis drawn twice
    assert '<strong class="memory-chart__value">0</strong>' in chart


def test_a_caption_says_when_its_latest_value_was_drawn_for_when_later_points_are_missing():
    fresh = line_chart(minutes([1, 2, 3]), label="Hit rate", unit="%")
    stale = line_chart(minutes([1, 2, None, None, None]), label="Hit rate", unit="%")

    assert '<strong class="memory-chart__value">3 %</strong>' in fresh
    assert '<strong class="memory-chart__value">2 % at 10:01 UTC</strong>' in stale


def test_byte_counts_read_in_decimal_units_and_in_one_unit_side_by_side():
    assert byte_size(999) == "999 B"
    assert byte_size(428_231) == "428 kB"
    assert byte_size(440_000) == "440 kB"
    assert byte_size(1_500_000) == "1.5 MB"
    unit = byte_unit(1_500_000)
    assert byte_size(428_231, unit) == "0.43 MB"  # beside 1.5 MB, in MB too
    assert byte_unit(0) == (1.0, "B")
