"""Server-rendered SVG charts for the admin dashboard: no script, no external asset, text escaped.

Each function returns markup (a `SafeString`) of one `<svg>` sized by its viewBox, so it scales with the page.
Bars are `<rect class="bar">`, lines `<polyline class="line">`; each chart carries `data-points` (the number of
values drawn), which the browser test reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")
OTHER_COLOR = "#bab0ac"
WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 48, 16, 40


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    while magnitude > value:
        magnitude /= 10
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def _fmt(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:,.3f}" if value < 1 else (f"${value:,.2f}" if value < 100 else f"${value:,.0f}")
    if unit == "%":
        return f"{value * 100:.3g}%"
    if unit == "ms":
        return f"{value:,.0f} ms"
    return f"{value:,.0f}"


def _frame(kind: str, points: int, body: list[str], title: str, height: int = HEIGHT) -> SafeString:
    return mark_safe(
        f'<svg class="chart" data-chart="{kind}" data-points="{points}" viewBox="0 0 {WIDTH} {height}" '
        f'role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _axes(labels: Sequence[str], top_value: float, unit: str, right_max: float | None = None) -> list[str]:
    plot_h = HEIGHT - TOP - BOTTOM
    parts = []
    for i in range(5):
        y = TOP + plot_h - plot_h * i / 4
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f"{escape(_fmt(top_value * i / 4, unit))}</text>")  # fmt: skip
        if right_max is not None:
            parts.append(f'<text class="tick" x="{WIDTH - RIGHT + 2}" y="{y + 4:.1f}">'
                         f"{escape(_fmt(right_max * i / 4, '%'))}</text>")  # fmt: skip
    step = max(1, len(labels) // 8)
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    for index in range(0, len(labels), step):
        x = LEFT + slot * (index + 0.5)
        parts.append(f'<text class="tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                     f"{escape(labels[index])}</text>")  # fmt: skip
    return parts


def stacked_bars(labels: Sequence[str], series: dict[str, Sequence[float]], unit: str, title: str) -> SafeString:
    """One bar per label, stacked by series (in order; the last series named "other" is grey), with a legend."""
    totals = [sum(values[i] for values in series.values()) for i in range(len(labels))]
    top = _nice_max(max(totals, default=0))
    plot_h = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    parts = _axes(labels, top, unit)
    drawn = 0
    for index in range(len(labels)):
        y = TOP + plot_h
        for number, (name, values) in enumerate(series.items()):
            height = plot_h * values[index] / top
            if height <= 0:
                continue
            y -= height
            color = OTHER_COLOR if name == "other" else PALETTE[number % len(PALETTE)]
            parts.append(
                f'<rect class="bar" x="{LEFT + slot * index + slot * 0.1:.1f}" y="{y:.1f}" width="{slot * 0.8:.1f}" '
                f'height="{height:.1f}" fill="{color}"><title>{escape(labels[index])} {escape(name)}: '
                f"{escape(_fmt(values[index], unit))}</title></rect>"
            )
            drawn += 1
    return _frame("stacked", drawn, parts, title)


def bars_and_line(labels: Sequence[str], bars: Sequence[float], line: Sequence[float], title: str) -> SafeString:
    """Bars (counts, left axis) with a line (a rate 0..1, right axis)."""
    top = _nice_max(max(bars, default=0))
    rate_top = _nice_max(max(line, default=0) * 100) / 100 if any(line) else 0.01
    plot_h = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    parts = _axes(labels, top, "", right_max=rate_top)
    points = []
    for index, (count, rate) in enumerate(zip(bars, line, strict=True)):
        height = plot_h * count / top
        x = LEFT + slot * index
        parts.append(
            f'<rect class="bar" x="{x + slot * 0.1:.1f}" y="{TOP + plot_h - height:.1f}" width="{slot * 0.8:.1f}" '
            f'height="{height:.1f}" fill="{PALETTE[0]}"><title>{escape(labels[index])}: {count:,.0f} requests, '
            f"{rate * 100:.2f}% errors</title></rect>"
        )
        points.append(f"{x + slot / 2:.1f},{TOP + plot_h - plot_h * rate / rate_top:.1f}")
    if points:
        parts.append(f'<polyline class="line" fill="none" stroke="{PALETTE[2]}" stroke-width="2" '
                     f'points="{" ".join(points)}"/>')  # fmt: skip
    return _frame("requests", len(points), parts, title)


def lines(labels: Sequence[str], series: dict[str, Sequence[float | None]], unit: str, title: str) -> SafeString:
    """One polyline per series (None values are gaps), with a legend."""
    values = [v for vs in series.values() for v in vs if v is not None]
    top = _nice_max(max(values, default=0))
    plot_h = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    parts = _axes(labels, top, unit)
    drawn = 0
    for number, (name, vs) in enumerate(series.items()):
        points = [
            f"{LEFT + slot * (i + 0.5):.1f},{TOP + plot_h - plot_h * v / top:.1f}"
            for i, v in enumerate(vs)
            if v is not None
        ]
        drawn += len(points)
        color = PALETTE[(number * 2) % len(PALETTE)]
        if points:
            parts.append(f'<polyline class="line" fill="none" stroke="{color}" stroke-width="2" '
                         f'points="{" ".join(points)}"><title>{escape(name)}</title></polyline>')  # fmt: skip
        parts.append(f'<text class="legend" x="{LEFT + 8 + 90 * number}" y="{TOP + 10}" fill="{color}">'
                     f"{escape(name)}</text>")  # fmt: skip
    return _frame("lines", drawn, parts, title)


def horizontal_bars(rows: Sequence[tuple[str, float, float | None]], unit: str, title: str) -> SafeString:
    """One row per (label, value, limit): a bar of the value, against the limit when there is one (then the bar
    is the share of the limit, red from 90 %)."""
    row_h, label_w = 26, 220
    height = max(len(rows), 1) * row_h + 8
    span = WIDTH - label_w - 210
    top = _nice_max(max((value for _, value, limit in rows if limit is None), default=0))
    parts = []
    for index, (label, value, limit) in enumerate(rows):
        y = 4 + index * row_h
        share = (value / limit if limit else 0) if limit is not None else value / top
        color = PALETTE[0] if limit is None else (PALETTE[2] if share >= 0.9 else PALETTE[4])
        text = _fmt(value, unit) + (f" of {_fmt(limit, unit)} ({share * 100:.0f}%)" if limit is not None else "")
        parts.append(
            f'<text class="label" x="{label_w - 8}" y="{y + 17}" text-anchor="end">{escape(label[:34])}</text>'
        )
        if limit is not None:
            parts.append(f'<rect class="track" x="{label_w}" y="{y + 4}" width="{span}" height="18" fill="#eee"/>')
        parts.append(
            f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{max(span * min(share, 1), 1):.1f}" height="18" '
            f'fill="{color}"><title>{escape(label)}: {escape(text)}</title></rect>'
        )
        parts.append(f'<text class="value" x="{label_w + span + 6}" y="{y + 17}">{escape(text)}</text>')
    return _frame("hbars", len(rows), parts, title, height=height)
