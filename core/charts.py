"""Small charts drawn on the server as inline SVG, for the admin's pages.

An operator's page shows a figure's recent course (a line over time) or a few days side by side (bars)
without a charting library or a script: the SVG is part of the HTML a view renders, so a page (or a
fragment of it fetched again to refresh) shows the chart as soon as it arrives, and the tests read it
like any other markup.

Both charts:

* scale to their container's width (``viewBox`` with ``preserveAspectRatio="none"`` on the plot; the
  labels are HTML beside it, so they never stretch);
* carry a ``<title>`` and an ``aria-label`` naming the figure, its latest value and its range, so a
  screen reader (and a test) reads the same as the eye;
* leave a gap where a point is missing (``None``): a sampler that did not run is not a zero;
* draw a zero above the axis, never on it: a figure that stays at 0 is a line one sees, not the axis.

A line's caption is its latest value drawn, with the time it was drawn for when later points are
missing, so that a page showing the same figure beside its chart shows the same value.

Byte counts are shown in one way across the admin (``byte_unit``, ``byte_size``): decimal units
(1 kB = 1,000 bytes), every figure of one table column or one chart in the same unit, that of the
largest, so that they read side by side.
"""

from collections.abc import Sequence
from datetime import datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

# The plot's own coordinates: the SVG scales them to the width it is given.
WIDTH = 300
HEIGHT = 60
PAD = 2
# Where the axis runs, and where a zero is drawn: a few units above it, so a flat zero line shows.
AXIS_Y = HEIGHT - 1
ZERO_Y = HEIGHT - 6
# Trailing points a line may miss before its caption says when its latest value was drawn for.
CAPTION_STALE_AFTER = 2
BYTE_UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))


def number(value: float | None, unit: str = "") -> str:
    """A figure as the pages print it: thousands separated, at most two decimals, with its unit."""
    if value is None:
        return "no data"
    text = f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{text} {unit}".strip()


def byte_unit(largest: float) -> tuple[float, str]:
    """The unit byte counts up to ``largest`` are shown in, as (bytes per unit, its name)."""
    for scale, unit in BYTE_UNITS:
        if largest >= scale:
            return scale, unit
    return 1.0, "B"


def byte_size(value: float, unit: tuple[float, str] | None = None) -> str:
    """A byte count in ``unit`` (``byte_unit``'s answer for the figures it is read beside), else in its own."""
    scale, name = unit or byte_unit(value)
    return number(round(value / scale, 2), name)


def _top(values: Sequence[float], floor: float | None) -> float:
    highest = max(values, default=0.0)
    if floor is not None:
        highest = max(highest, floor)
    return highest if highest > 0 else 1.0


def line_chart(
    points: Sequence[tuple[datetime, float | None]],
    *,
    label: str,
    unit: str = "",
    y_max: float | None = None,
    kind: str = "",
) -> SafeString:
    """The course of one figure over time: ``points`` are (moment, value) oldest first, ``None`` where
    nothing was recorded. ``y_max`` is the least top of the scale (a threshold the line is read
    against, such as 1 second of lag); ``kind`` adds a modifier class (``warning``, ``error``)."""
    known = [value for _, value in points if value is not None]
    top = _top(known, y_max)
    step = (WIDTH - 2 * PAD) / max(len(points) - 1, 1)
    segments: list[list[str]] = [[]]
    for index, (_, value) in enumerate(points):
        if value is None:
            if segments[-1]:
                segments.append([])
            continue
        x = PAD + index * step
        y = ZERO_Y - (ZERO_Y - PAD) * min(value, top) / top
        segments[-1].append(f"{x:.1f},{y:.1f}")
    lines = format_html_join(
        "",
        '<polyline class="memory-chart__line" points="{}"></polyline>',
        ((" ".join(segment),) for segment in segments if len(segment) > 1),
    )
    dots = format_html_join(
        "",
        '<circle class="memory-chart__dot" cx="{}" cy="{}" r="1.5"></circle>',
        (tuple(segment[0].split(",")) for segment in segments if len(segment) == 1),
    )
    drawn = [(index, moment, value) for index, (moment, value) in enumerate(points) if value is not None]
    latest = drawn[-1][2] if drawn else None
    caption = number(latest, unit)
    if drawn and len(points) - 1 - drawn[-1][0] >= CAPTION_STALE_AFTER:
        caption += f" at {drawn[-1][1]:%H:%M} UTC"
    summary = _summary(label, unit, latest, known, points[0][0] if points else None, points[-1][0] if points else None)
    return format_html(
        '<figure class="memory-chart memory-chart--line{}" aria-label="{}">'
        '<figcaption><span class="memory-chart__label">{}</span> <strong class="memory-chart__value">{}</strong></figcaption>'
        '<svg viewBox="0 0 {} {}" preserveAspectRatio="none" role="img"><title>{}</title>'
        '<line class="memory-chart__axis" x1="0" y1="{}" x2="{}" y2="{}"></line>{}{}</svg>'
        '<div class="memory-chart__scale"><span>{}</span><span>top {}</span></div></figure>',
        f" memory-chart--{kind}" if kind else "",
        summary,
        label,
        caption,
        WIDTH,
        HEIGHT,
        summary,
        AXIS_Y,
        WIDTH,
        AXIS_Y,
        lines,
        dots,
        _span(points),
        number(top, unit),
    )


def bar_chart(bars: Sequence[tuple[str, float]], *, label: str, unit: str = "", summed: bool = True) -> SafeString:
    """Figures side by side, one bar each (a day's usage): ``bars`` are (name, value) in reading order.
    The caption gives their sum, or with ``summed=False`` the last one (a level, such as storage at
    each day's end, is not added up)."""
    values = [value for _, value in bars]
    top = _top(values, None)
    slot = (WIDTH - 2 * PAD) / max(len(bars), 1)
    rects = format_html_join(
        "",
        '<rect class="memory-chart__bar" x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>',
        (
            (
                f"{PAD + index * slot + slot * 0.1:.1f}",
                f"{HEIGHT - PAD - (HEIGHT - 2 * PAD) * value / top:.1f}",
                f"{slot * 0.8:.1f}",
                f"{(HEIGHT - 2 * PAD) * value / top:.1f}",
                name,
                number(value, unit),
            )
            for index, (name, value) in enumerate(bars)
        ),
    )
    summary = _summary(label, unit, values[-1] if values else None, values, None, None)
    return format_html(
        '<figure class="memory-chart memory-chart--bars" aria-label="{}">'
        '<figcaption><span class="memory-chart__label">{}</span> <strong class="memory-chart__value">{}</strong></figcaption>'
        '<svg viewBox="0 0 {} {}" preserveAspectRatio="none" role="img"><title>{}</title>{}</svg>'
        '<div class="memory-chart__scale"><span>{}</span><span>top {}</span></div></figure>',
        summary,
        label,
        ((number(sum(values), unit) + " in all") if summed else number(values[-1], unit)) if values else "no data",
        WIDTH,
        HEIGHT,
        summary,
        rects,
        f"{bars[0][0]} to {bars[-1][0]}" if bars else "",
        number(top, unit),
    )


def _summary(
    label: str, unit: str, latest: float | None, known: Sequence[float], start: datetime | None, end: datetime | None
) -> str:
    if not known:
        return f"{label}: no data"
    text = f"{label}: latest {number(latest, unit)}, lowest {number(min(known), unit)}, highest {number(max(known), unit)}"
    if start and end:
        text += f", {start:%H:%M} to {end:%H:%M} UTC"
    return text


def _span(points: Sequence[tuple[datetime, float | None]]) -> str:
    if not points:
        return ""
    return f"{points[0][0]:%H:%M} to {points[-1][0]:%H:%M} UTC"
