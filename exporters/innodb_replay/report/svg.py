"""The report's drawings as inline SVG: a chart of a panel's lines with its alert thresholds, and a server's
state band (the bottleneck class, the alerts, the evidence captures and the settings changes). No script,
no font or image from anywhere: they print, and read offline. Every text from the data is escaped."""

from __future__ import annotations

import math
import time
from html import escape

from signals.units import format_value

WIDTH = 920
LEFT, RIGHT = 76, 16  # room for the y labels; the last x label
PALETTE = ("#1F60C4", "#E0752D", "#37872D", "#8F3BB8", "#C4162A", "#0A8C8C", "#B877D9", "#705DA0")
LEVELS = {"warning": "#FF9830", "critical": "#F2495C", "info": "#5794F2"}
CAPTURE_COLOUR, CHANGE_COLOUR = "#8F3BB8", "#0A8C8C"
GREY = "#9FA7B3"


# --- times, as the dashboards show them ----------------------------------------------------------

def clock(seconds: float, with_date: bool = False, seconds_too: bool = False) -> str:
    """UTC: 14:05, or 2026-11-20 14:05, or 14:05:30."""
    return time.strftime(("%Y-%m-%d " if with_date else "") + ("%H:%M:%S" if seconds_too else "%H:%M"),
                         time.gmtime(seconds))


def span_text(ms: float) -> str:
    """A duration for a person: 45 s, 12 min, 2 h 5 min, 1 d 3 h."""
    seconds = round(ms / 1000)
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


_SECONDS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)


def _nice(span: float, unit: str = "", ticks: int = 4) -> float:
    """A round step for about ``ticks`` ticks: 1, 2, 2.5 or 5 times a power of ten; for durations of a minute
    and more, whole minutes, hours and days."""
    raw = span / ticks if span > 0 else 1.0
    if unit == "s" and raw > 30:
        return next((s for s in _SECONDS if s >= raw), math.ceil(raw / 604800) * 604800)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


_TIME_STEPS = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)


def _time_ticks(start: float, end: float, ticks: int = 8) -> list[float]:
    step = next((s for s in _TIME_STEPS if (end - start) / s <= ticks), _TIME_STEPS[-1])
    first = math.ceil(start / step) * step
    return [t for t in range(int(first), int(end) + 1, step)]


class _Axis:
    """Window seconds to x pixels."""

    def __init__(self, start: float, end: float, left: int = LEFT, width: int = WIDTH):
        self.start, self.end = start, max(end, start + 1)
        self.x0, self.x1 = left, width - RIGHT

    def x(self, t: float) -> float:
        return self.x0 + (t - self.start) / (self.end - self.start) * (self.x1 - self.x0)

    def labels(self, y: float) -> list[str]:
        ticks = _time_ticks(self.start, self.end)
        days = len({time.gmtime(t).tm_yday for t in ticks}) > 1
        out = []
        for t in ticks:
            with_date = days and time.gmtime(t).tm_hour == 0 and time.gmtime(t).tm_min == 0
            out.append(f'<line x1="{self.x(t):.1f}" x2="{self.x(t):.1f}" y1="0" y2="{y:.1f}" class="grid"/>')
            out.append(f'<text x="{self.x(t):.1f}" y="{y + 14:.1f}" text-anchor="middle">'
                       f'{escape(clock(t, with_date))}</text>')
        return out


# --- a chart ---------------------------------------------------------------------------------------

def chart(series: list[tuple[str, list[tuple[float, float]]]], unit: str, start: float, end: float, step: float,
          thresholds=(), marks=(), height: int = 220) -> str:
    """Lines (legend, [(seconds, value)]) against the thresholds ((value, level, label)), with the marks
    ((seconds, kind, title)) as vertical lines. A line breaks where points are missing."""
    axis = _Axis(start, end)
    bottom = height - 24
    values = [v for _, points in series for _, v in points] + [t[0] for t in thresholds]
    low = min(0.0, min(values, default=0.0))
    high = max(values, default=1.0)
    if high <= low:
        high = low + 1.0
    tick = _nice(high - low, unit)
    low, high = math.floor(low / tick) * tick, math.ceil(high / tick) * tick

    def y(v: float) -> float:
        return bottom - (v - low) / (high - low) * (bottom - 6)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
           f'class="chart">']
    value = low
    while value <= high + tick / 2:
        out.append(f'<line x1="{axis.x0}" x2="{axis.x1}" y1="{y(value):.1f}" y2="{y(value):.1f}" class="grid"/>')
        out.append(f'<text x="{axis.x0 - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{escape(format_value(unit, value))}</text>')
        value += tick
    out += axis.labels(bottom)
    out.append(f'<line x1="{axis.x0}" x2="{axis.x1}" y1="{bottom}" y2="{bottom}" class="axis"/>')
    for t, kind, title in marks:
        colour = CAPTURE_COLOUR if kind == "capture" else CHANGE_COLOUR
        out.append(f'<line x1="{axis.x(t):.1f}" x2="{axis.x(t):.1f}" y1="0" y2="{bottom}" stroke="{colour}" '
                   f'stroke-dasharray="2 3"><title>{escape(title)}</title></line>')
    for number, (_, points) in enumerate(series):
        colour = PALETTE[number % len(PALETTE)]
        for run in _runs(points, step):
            if len(run) == 1:
                t, v = run[0]
                out.append(f'<circle cx="{axis.x(t):.1f}" cy="{y(v):.1f}" r="1.5" fill="{colour}"/>')
            else:
                path = " ".join(f"{axis.x(t):.1f},{y(v):.1f}" for t, v in run)
                out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.4"/>')
    ordered = sorted(thresholds, key=lambda t: t[0])
    for number, (value, level, label) in enumerate(ordered):
        colour = LEVELS.get(level, GREY)
        out.append(f'<line x1="{axis.x0}" x2="{axis.x1}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="{colour}" '
                   f'stroke-width="1.5" stroke-dasharray="6 4"><title>{escape(label)}</title></line>')
        # Above its line; below it when the next line up is too close for both labels, or the top is.
        crowded = number + 1 < len(ordered) and y(value) - y(ordered[number + 1][0]) < 16
        below = crowded or y(value) < 14
        out.append(f'<text x="{axis.x1 - 4}" y="{y(value) + (13 if below else -4):.1f}" text-anchor="end" '
                   f'fill="{colour}">{escape(label)}</text>')
    out.append("</svg>")
    return "".join(out)


def _runs(points: list[tuple[float, float]], step: float) -> list[list[tuple[float, float]]]:
    runs: list[list[tuple[float, float]]] = []
    for t, v in points:
        if runs and t - runs[-1][-1][0] <= step * 2.5:
            runs[-1].append((t, v))
        else:
            runs.append([(t, v)])
    return runs


# --- the state band ----------------------------------------------------------------------------------

ROW = 22
BAND_LEFT = 236  # room for an alert's name and severity


def band(rows: list[tuple[str, list[tuple[float, float, str, str]]]],
         marks: list[tuple[str, str, list[tuple[float, str]]]], start: float, end: float) -> str:
    """Rows of spans (label, [(start s, end s, colour, title)]) and rows of marks (label, colour, [(s, title)]),
    on the window's time axis. Spans narrower than a pixel still show as one; marks outside the window do not."""
    axis = _Axis(start, end, BAND_LEFT)
    height = ROW * (len(rows) + len(marks)) + 24
    bottom = height - 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
           f'class="band">']
    out += axis.labels(bottom)
    for number, (label, spans) in enumerate(rows):
        top = number * ROW
        out.append(f'<text x="{axis.x0 - 6}" y="{top + 15}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<rect x="{axis.x0}" y="{top + 3}" width="{axis.x1 - axis.x0}" height="{ROW - 6}" '
                   f'class="lane"/>')
        for s, e, colour, title in spans:
            x0, x1 = axis.x(max(s, start)), axis.x(min(e, end))
            out.append(f'<rect x="{x0:.1f}" y="{top + 3}" width="{max(x1 - x0, 1.0):.1f}" height="{ROW - 6}" '
                       f'fill="{escape(colour)}"><title>{escape(title)}</title></rect>')
    for number, (label, colour, points) in enumerate(marks, start=len(rows)):
        top = number * ROW
        out.append(f'<text x="{axis.x0 - 6}" y="{top + 15}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<rect x="{axis.x0}" y="{top + 3}" width="{axis.x1 - axis.x0}" height="{ROW - 6}" class="lane"/>')
        for t, title in points:
            if not start <= t <= end:
                continue
            x = axis.x(t)
            out.append(f'<path d="M{x:.1f},{top + 4} l5,7 l-5,7 l-5,-7 z" fill="{colour}">'
                       f'<title>{escape(title)}</title></path>')
    out.append(f'<line x1="{axis.x0}" x2="{axis.x1}" y1="{bottom}" y2="{bottom}" class="axis"/>')
    out.append("</svg>")
    return "".join(out)


def pixels(spans: list[tuple[float, float, int]], start: float, end: float, rank) -> list[tuple[float, float, int]]:
    """Spans (start s, end s, value) as the band can draw them: one value per pixel column, the one that
    ``rank`` puts first among those the column holds (the winner's own rule, at a pixel's scale), runs of
    a value joined. A day of 15 s evaluations becomes a few hundred rectangles instead of thousands."""
    axis = _Axis(start, end, BAND_LEFT)
    seconds_per_pixel = (axis.end - axis.start) / (axis.x1 - axis.x0)
    columns: dict[int, list[int]] = {}
    for s, e, value in spans:
        for column in range(int((s - start) / seconds_per_pixel), int(math.ceil((e - start) / seconds_per_pixel))):
            columns.setdefault(column, []).append(value)
    out: list[list] = []
    for column in sorted(columns):
        value = min(columns[column], key=rank)
        s, e = start + column * seconds_per_pixel, start + (column + 1) * seconds_per_pixel
        if out and out[-1][2] == value and abs(out[-1][1] - s) < 1e-6:
            out[-1][1] = e
        else:
            out.append([s, e, value])
    return [(max(s, start), min(e, end), v) for s, e, v in out]
