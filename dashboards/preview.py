"""Draw every dashboard from a live Prometheus into PNGs, imitating Grafana (no Grafana needed).

    python -m dashboards.preview --prometheus http://127.0.0.1:9090 [--instance HOST:PORT] [--range 1h]
                                 [--offset 1h] [--out /tmp/preview] [--dashboard innodb-redo]

It reads the generated JSON (dashboards/grafana/*.json, what Grafana provisions), substitutes the
dashboard variables as Grafana does ($instance, $__rate_interval, $__range, $__interval, $offset),
evaluates each query over the range (an instant query at its end) and draws each panel at its grid
position: units, thresholds (colours, dashed lines), stacking, min/max and soft limits, fills, line styles,
fixed colours by query and by name, axes of their own (right, hidden), series hidden from the plot, legends
as tables of last and max sorted by max (under the plot at most 35 % of it, or beside it, naming the rows
that do not fit), value mappings (special ones for no value too), a stat's colour mode and the no-value text
of an empty panel. One PNG per dashboard; it prints the panels that drew no data.

What it cannot show is Grafana itself: it is an imitation, for a look without a Grafana, and no test may
pass on the strength of it alone (tests/unit/test_dashboards_grafana.py holds the JSON to Grafana's own rules).
It does not lay out text, ticks, fonts or legends as Grafana's browser code does (so neither a cut-off
legend nor a value drawn over a sparkline shows as it would), ranges an axis only roughly as uPlot does,
draws the stat layouts, tooltips, data links, annotations and the light theme not at all, and knows
Grafana's behaviour only as far as this file imitates it: a panel using a field matcher that the oldest
Grafana the dashboards support lacks is drawn as the blank panel that Grafana gives, with the reason, never
as a newer Grafana would draw it. Look at the dashboards in a real Grafana (README, "The dashboards").
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from signals.units import format_value

from .grafana_version import FIELD_MATCHERS, OLDEST_TEXT

HERE = os.path.dirname(os.path.abspath(__file__))
GRAFANA_DIR = os.path.join(HERE, "grafana")
SCRAPE_INTERVAL = 15  # the data source's timeInterval (provisioning/grafana/datasources/prometheus.yml)
MAX_POINTS = 600  # about the points Grafana asks for in a panel of usual width

# Grafana's named colours and its classic palette, in order.
COLOURS = {"green": "#73BF69", "yellow": "#FADE2A", "orange": "#FF9830", "red": "#F2495C", "blue": "#5794F2",
           "purple": "#B877D9", "text": "#464C54"}
PALETTE = ("#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0", "#508642",
           "#CCA300", "#447EBC", "#C15C17", "#890F02", "#0A437C", "#6D1F62", "#584477")


# --- variables and queries, as Grafana sends them ------------------------------------------------

def duration(seconds: float) -> str:
    return f"{int(seconds)}s"


def variables(instance: str, range_seconds: int, step: int, offset: str,
              scrape_interval: int = SCRAPE_INTERVAL) -> dict[str, str]:
    """Grafana's values: $__rate_interval is max($__interval + scrape interval, 4 × scrape interval), the
    scrape interval being the data source's timeInterval."""
    return {"instance": instance, "offset": offset, "__range": duration(range_seconds),
            "__interval": duration(step), "__rate_interval": duration(max(step + scrape_interval, 4 * scrape_interval))}


def substitute(expr: str, values: dict[str, str]) -> str:
    """``$name`` and ``${name}`` replaced; any variable left unknown is an error, not a silent empty query.
    ``$1`` is label_replace's capture group: Grafana leaves it alone too."""
    def one(match):
        name = match.group(1) or match.group(2)
        if name.isdigit():
            return match.group(0)
        if name not in values:
            raise KeyError(f"variable ${name} has no value: {expr}")
        return values[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, expr)


def query_range(url: str, expr: str, start: float, end: float, step: int) -> dict:
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query_range?{params}", timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        return json.load(exc)


def legend(fmt: str, metric: dict) -> str:
    if not fmt or fmt == "__auto":
        labels = ", ".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
        return f"{metric.get('__name__', '')}{{{labels}}}"
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt)


@dataclass
class Series:
    name: str
    ref: str
    times: list[float]
    values: list[float]


@dataclass
class PanelData:
    series: list[Series] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    window: tuple[float, float] | None = None  # the time range asked for: the x axis, as in Grafana

    @property
    def empty(self) -> bool:
        return not any(not math.isnan(v) for s in self.series for v in s.values)

    @property
    def blank(self) -> bool:
        """Grafana draws no data: none came, or the panel has an error."""
        return self.empty or bool(self.errors)


def query_instant(url: str, expr: str, at: float) -> dict:
    """An instant query, answered in the shape of a range query's (one point a series)."""
    params = urllib.parse.urlencode({"query": expr, "time": at})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=30) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as exc:
        answer = json.load(exc)
    if answer.get("status") == "success":
        answer["data"]["result"] = [{"metric": r["metric"], "values": [r["value"]]} for r in answer["data"]["result"]]
    return answer


def unknown_matchers(panel: dict) -> list[str]:
    """The override matchers of a panel the oldest Grafana the dashboards support does not know: it draws such
    a panel blank, so the preview draws it as an error rather than imitate what a newer Grafana shows."""
    return [o["matcher"]["id"] for o in panel.get("fieldConfig", {}).get("overrides", [])
            if o["matcher"]["id"] not in FIELD_MATCHERS]


def evaluate(panel: dict, url: str, values: dict, start: float, end: float, step: int) -> PanelData:
    data = PanelData(window=(start, end))
    for matcher in unknown_matchers(panel):
        data.errors.append(f"override matcher \"{matcher}\" unknown to Grafana {OLDEST_TEXT}, "
                           "which draws this panel blank")
    for target in panel.get("targets", []):
        expr = substitute(target["expr"], values)
        answer = query_instant(url, expr, end) if target.get("instant") else query_range(url, expr, start, end, step)
        if answer.get("status") != "success":
            data.errors.append(f"{target['refId']}: {answer.get('error')}")
            continue
        for result in answer["data"]["result"]:
            points = [(float(t), float(v)) for t, v in result["values"]]
            data.series.append(Series(substitute(legend(target.get("legendFormat", ""), result["metric"]), values),
                                      target["refId"], [t for t, _ in points], [v for _, v in points]))
    return data


# --- field configuration: defaults and overrides --------------------------------------------------

def _matches(matcher: dict, series: Series) -> bool:
    if matcher["id"] == "byFrameRefID":
        return series.ref == matcher["options"]
    if matcher["id"] == "byName":
        return series.name == matcher["options"]
    if matcher["id"] == "byRegexp":  # Grafana anchors a plain pattern to the whole display name
        return re.fullmatch(matcher["options"], series.name) is not None
    return False


def field_config(panel: dict, series: Series) -> dict:
    """The series' effective config: the defaults with every matching override applied, in order."""
    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    config = {**defaults, "custom": dict(defaults.get("custom", {}))}
    for override in panel.get("fieldConfig", {}).get("overrides", []):
        if _matches(override["matcher"], series):
            for prop in override["properties"]:
                if prop["id"].startswith("custom."):
                    config["custom"][prop["id"][len("custom."):]] = prop["value"]
                else:
                    config[prop["id"]] = prop["value"]
    return config


def mapped(config: dict, value: float | None) -> tuple[str | None, str | None] | None:
    """(text, colour) of a value mapping that matches the value, as Grafana shows it (either may be None: the
    mapping leaves it); None without one. No value (None, NaN) matches only a special null or NaN mapping."""
    missing = value is None or math.isnan(value)
    for mapping in config.get("mappings", []):
        result = None
        if mapping.get("type") == "value" and not missing:
            result = next((r for key, r in mapping.get("options", {}).items() if float(key) == value), None)
        elif mapping.get("type") == "special" and missing and \
                mapping.get("options", {}).get("match") in ("null", "nan", "null+nan"):
            result = mapping["options"].get("result", {})
        if result is not None:
            colour = result.get("color")
            return result.get("text"), COLOURS.get(colour, colour)
    return None


def threshold_colour(thresholds: dict, value: float) -> str:
    colour = "green"
    for step in thresholds.get("steps", []):
        if step["value"] is None or value >= step["value"]:
            colour = step["color"]
    return COLOURS.get(colour, colour)


# --- drawing --------------------------------------------------------------------------------------

ROW_PX, COL_PX, DPI = 34, 66, 100


def _no_value(ax, panel, data: PanelData, colour: str = "#8e8e8e"):
    text = panel.get("fieldConfig", {}).get("defaults", {}).get("noValue") or "No data"
    if data.errors:
        text = "Error: " + "; ".join(data.errors)
        colour = "#C4162A"
    width_chars = max(10, int(ax.get_position().width * ax.figure.get_figwidth() * DPI / 7))
    ax.text(0.5, 0.5, textwrap.fill(text, width_chars), ha="center", va="center", fontsize=9, color=colour,
            transform=ax.transAxes)
    ax.set_axis_off()


def draw_stat(fig, rect, panel, data: PanelData):
    """The last value that is not null of the first series with one, in its colour: as the background or as
    the text (the panel's colour mode); without a value, the no-value text in the colour Grafana gives null."""
    ax = fig.add_axes(rect)
    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    background = panel.get("options", {}).get("colorMode", "value") == "background"
    ax.set_xticks([])
    ax.set_yticks([])
    if data.blank:
        mapping = mapped(defaults, None)
        colour = (mapping and mapping[1]) or threshold_colour(defaults.get("thresholds", {}), -math.inf)
        if background and not data.errors:
            ax.set_facecolor(colour)
            _no_value(ax, panel, data, "white")
            ax.set_axis_on()
        else:
            _no_value(ax, panel, data, colour)
        return
    s = next(s for s in data.series if not math.isnan(_last(s.values)))
    last = _last(s.values)
    colour_config = defaults.get("color", {"mode": "thresholds"})
    colour = (COLOURS.get(colour_config.get("fixedColor"), colour_config.get("fixedColor"))
              if colour_config.get("mode") == "fixed" else threshold_colour(defaults.get("thresholds", {}), last))
    text = format_value(defaults.get("unit", ""), last)
    mapping = mapped(field_config(panel, s), last)
    if mapping:  # a mapping's text and colour win over the unit and the colour scheme, as in Grafana
        text, colour = mapping[0] or text, mapping[1] or colour
    if background:
        ax.set_facecolor(colour)
    if panel.get("options", {}).get("graphMode") == "area" and len(s.values) > 1:
        ax.fill_between(s.times, s.values, color="white" if background else colour, alpha=0.25, linewidth=0)
    ax.text(0.5, 0.45, textwrap.fill(text, 18), ha="center", va="center", fontsize=20 if len(text) < 12 else 14,
            color="white" if background else colour, weight="bold", transform=ax.transAxes)
    finite = [v for v in s.values if not math.isnan(v)]
    low, high = min(finite + [0]), max(finite + [0])
    ax.set_ylim(low, high + (high - low or 1) * 1.5)
    ax.set_xlim(*(data.window or (min(s.times), max(s.times))))


def _y_range(panel, stacked_top, config=None):
    defaults = config or panel.get("fieldConfig", {}).get("defaults", {})
    custom = defaults.get("custom", {})
    finite = [v for v in stacked_top if not math.isnan(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if custom.get("axisSoftMin") is not None:
        low = min(low, custom["axisSoftMin"])
    if custom.get("axisSoftMax") is not None:
        high = max(high, custom["axisSoftMax"])
    if defaults.get("min") is not None:
        low = defaults["min"]
    if defaults.get("max") is not None:
        high = defaults["max"]
    if high <= low:
        high = low + 1
    return low, high


def _colour(config: dict, number: int) -> str:
    fixed = config.get("color", {})
    if isinstance(fixed, dict) and fixed.get("mode") == "fixed":
        return COLOURS.get(fixed.get("fixedColor"), fixed.get("fixedColor"))
    return PALETTE[number % len(PALETTE)]


def _last(values: list[float]) -> float:
    return next((v for v in reversed(values) if not math.isnan(v)), float("nan"))


def _legend_cell(config: dict, unit: str, value: float) -> str:
    mapping = mapped(config, value)
    return mapping[0] if mapping else format_value(config.get("unit", unit), value)


def draw_timeseries(fig, rect, panel, data: PanelData):
    """Lines on a left axis, and on axes of their own where an override places them (right, hidden); the
    legend a table of each series' last value and maximum, sorted by the maximum, under the plot (at most 35 %
    of the panel, as Grafana gives it) or beside it, with the rows that do not fit named as hidden."""
    import matplotlib.dates as mdates
    from matplotlib.ticker import MaxNLocator
    from datetime import datetime, timezone

    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    unit = defaults.get("unit", "")
    x, y, w, h = rect
    options = panel.get("options", {}).get("legend", {})
    placement = options.get("placement", "bottom")
    px_w, px_h = 1 / (fig.get_figwidth() * DPI), 1 / (fig.get_figheight() * DPI)
    configs = [field_config(panel, s) for s in data.series]
    rows = [(s, c, _colour(c, n)) for n, (s, c) in enumerate(zip(data.series, configs))]
    if options.get("sortBy") == "Max":
        rows.sort(key=lambda r: max((v for v in r[0].values if not math.isnan(v)), default=-math.inf),
                  reverse=options.get("sortDesc", False))
    line_h = 12 * px_h
    wanted = (len(rows) + 1) * line_h if rows else 0
    if placement == "right":
        legend_rect = (x + w * 0.62, y, w * 0.38, h)
        legend_h = min(wanted, h - 4 * px_h)
        plot = [x + 58 * px_w, y + 16 * px_h, w * 0.62 - 70 * px_w, h - 20 * px_h]
    else:
        legend_h = min(wanted, 0.35 * h)
        legend_rect = (x, y, w, legend_h)
        plot = [x + 58 * px_w, y + legend_h + 16 * px_h, w - 64 * px_w, h - legend_h - 20 * px_h]
    ax = fig.add_axes(plot)
    ax.tick_params(labelsize=7)
    if data.blank:
        _no_value(ax, panel, data)
        return
    stacked = defaults.get("custom", {}).get("stacking", {}).get("mode") == "normal"
    times = sorted({t for s in data.series for t in s.times})
    xs = [datetime.fromtimestamp(t, timezone.utc) for t in times]
    below = {t: 0.0 for t in times}
    axes = {}  # placement -> (axis, tops, config of its first series)
    for s, config, colour in zip(data.series, configs, [_colour(c, n) for n, c in enumerate(configs)]):
        custom = config["custom"]
        if custom.get("hideFrom", {}).get("viz"):
            continue
        where = custom.get("axisPlacement", "auto")
        if where not in axes:
            axes[where] = (ax if where in ("auto", "left") else ax.twinx(), [], config)
        target, tops, _ = axes[where]
        values = dict(zip(s.times, s.values))
        ys = [values.get(t, float("nan")) for t in times]
        base = [0.0] * len(times)
        if stacked and target is ax:
            base = [below[t] for t in times]
            ys = [b + (v if not math.isnan(v) else 0.0) for b, v in zip(base, ys)]
            for t, v in zip(times, ys):
                below[t] = v
        tops.extend(ys)
        style = custom.get("lineStyle", {}).get("fill", "solid")
        if custom.get("lineWidth", 1):
            target.plot(xs, ys, color=colour, linewidth=custom.get("lineWidth", 1),
                        linestyle={"dash": (0, (4, 3)), "dot": (0, (1, 3))}.get(style, "-"))
        fill = custom.get("fillOpacity", 0) / 100
        if fill:
            target.fill_between(xs, base, ys, color=colour, alpha=fill, linewidth=0)
    for where, (target, tops, config) in axes.items():
        main = target is ax
        low, high = _y_range(panel, tops, None if main else config)
        if main and defaults.get("custom", {}).get("scaleDistribution", {}).get("type") == "log":
            positive = [v for v in tops if not math.isnan(v) and v > 0]
            low, high = (min(positive), max(positive)) if positive else (1e-6, 1.0)
            soft = defaults.get("custom", {}).get("axisSoftMax")
            high = max(high, soft) if soft else high
            low, high = 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))
            target.set_yscale("log")
        target.set_ylim(low, high)
        if where == "hidden":
            target.set_yticks([])
            continue
        axis_unit = config.get("unit", unit)
        target.yaxis.set_major_formatter(lambda v, _, u=axis_unit: format_value(u, v))
        if config.get("decimals") == 0:
            target.yaxis.set_major_locator(MaxNLocator(integer=True))
        label = config["custom"].get("axisLabel")
        if label:
            target.set_ylabel(label, fontsize=7)
        target.tick_params(labelsize=7)
        if main and defaults.get("custom", {}).get("thresholdsStyle", {}).get("mode") in ("line", "dashed"):
            dashed = defaults["custom"]["thresholdsStyle"]["mode"] == "dashed"
            for step in defaults.get("thresholds", {}).get("steps", [])[1:]:
                if low <= step["value"] <= high:
                    target.axhline(step["value"], color=COLOURS.get(step["color"], step["color"]), linewidth=1,
                                   linestyle=(0, (6, 4)) if dashed else "-")
    if data.window:
        ax.set_xlim(*(datetime.fromtimestamp(t, timezone.utc) for t in data.window))
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
    ax.grid(alpha=0.2)
    ax.spines["top"].set_visible(False)
    if "right" not in axes:
        ax.spines["right"].set_visible(False)
    _draw_legend(fig, legend_rect, legend_h, rows, unit, options, line_h)


def _draw_legend(fig, rect, height, rows, unit, options, line_h):
    """A table: colour and name, then a column per calculation; the rows past its height are named as hidden."""
    x, y, w, _ = rect
    if not rows or height <= 0:
        return
    calcs = options.get("calcs", [])
    titles = {"lastNotNull": "Last *", "max": "Max", "mean": "Mean"}
    top = y + height
    column_w = 58 / (fig.get_figwidth() * DPI)
    for number, calc in enumerate(reversed(calcs)):
        fig.text(x + w - 0.004 - number * column_w, top - 0.8 * line_h, titles.get(calc, calc), fontsize=6.5,
                 ha="right", color="#1F60C4")
    fits = max(0, int(height / line_h) - 1)
    for number, (s, config, colour) in enumerate(rows[:fits]):
        fy = top - (number + 1.8) * line_h
        hidden = config["custom"].get("hideFrom", {}).get("viz")
        style = config["custom"].get("lineStyle", {}).get("fill")
        fig.text(x + 0.004, fy, {"dash": "╌ ", "dot": "┈ "}.get(style, "▬ "), color=colour, fontsize=7)
        fig.text(x + 0.016, fy, s.name, fontsize=6.5, color="#9a9a9a" if hidden else "#333333", clip_on=True)
        values = {"lastNotNull": _last(s.values), "max": max((v for v in s.values if not math.isnan(v)),
                                                             default=float("nan"))}
        for column, calc in enumerate(reversed(calcs)):
            fig.text(x + w - 0.004 - column * column_w, fy, _legend_cell(config, unit, values.get(calc, math.nan)),
                     fontsize=6.5, ha="right", color="#333333")
    if len(rows) > fits:
        fig.text(x + w - 0.004, y + 0.002, f"+{len(rows) - fits} rows hidden (scroll)", fontsize=6.5, ha="right",
                 color="#C4162A")


def draw_state_timeline(fig, rect, panel, data: PanelData):
    """One row per series, top to bottom in query order; each run of one value a bar in its mapping's colour,
    named by the mapping's text where it fits; unmapped values grey, gaps empty."""
    from datetime import datetime, timezone

    x, y, w, h = rect
    px_w, px_h = 1 / (fig.get_figwidth() * DPI), 1 / (fig.get_figheight() * DPI)
    label_w = min(0.3 * w, 150 * px_w)
    ax = fig.add_axes([x + label_w, y + 16 * px_h, w - label_w - 6 * px_w, h - 20 * px_h])
    ax.tick_params(labelsize=7)
    if data.blank:
        _no_value(ax, panel, data)
        return
    start, end = data.window or (min(t for s in data.series for t in s.times), max(t for s in data.series for t in s.times))
    step = min((b - a for s in data.series for a, b in zip(s.times, s.times[1:])), default=SCRAPE_INTERVAL)
    rows = len(data.series)
    for row, s in enumerate(data.series):
        config = field_config(panel, s)
        top = rows - row - 1
        runs = []  # (start, end, value): consecutive points of one value
        for t, v in zip(s.times, s.values):
            if runs and runs[-1][2] == v and t - runs[-1][1] <= step * 1.5:
                runs[-1][1] = t
            else:
                runs.append([t, t, v])
        for run_start, run_end, value in runs:
            if math.isnan(value):
                continue
            text, colour = mapped(config, value) or (format_value(config.get("unit", ""), value), "#8e8e8e")
            left, right = run_start, run_end + step
            ax.barh(top, right - left, left=left, height=0.85, color=colour, linewidth=0)
            if (right - left) / (end - start) * ax.get_position().width * fig.get_figwidth() * DPI > len(text) * 5.5:
                ax.text((left + right) / 2, top, text, ha="center", va="center", fontsize=6.5, color="#222222")
        fig.text(x + 4 * px_w, y + 16 * px_h + (top + 0.5) / rows * (h - 20 * px_h), s.name[:34], fontsize=6.5,
                 va="center", color="#333333")
    ax.set_ylim(-0.5, rows - 0.5)
    ax.set_yticks([])
    ax.set_xlim(start, end)
    ticks = [start + (end - start) * i / 6 for i in range(7)]
    ax.set_xticks(ticks)
    clock = "%H:%M:%S" if end - start < 900 else "%H:%M"  # a short range: minutes alone would repeat
    ax.set_xticklabels([datetime.fromtimestamp(t, timezone.utc).strftime(clock) for t in ticks])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def draw_dashboard(dashboard: dict, results: dict[int, PanelData], values: dict, path: str, subtitle: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dashboard["panels"])
    fig = plt.figure(figsize=(24 * COL_PX / DPI, (rows * ROW_PX + 50) / DPI), dpi=DPI)
    total_h = rows * ROW_PX + 50
    fig.text(0.005, 1 - 18 / total_h, f"{dashboard['title']}   ({subtitle})", fontsize=11, weight="bold")
    for p in dashboard["panels"]:
        g = p["gridPos"]
        left, width = g["x"] / 24, g["w"] / 24
        top_px, height_px = 40 + g["y"] * ROW_PX, g["h"] * ROW_PX
        bottom = 1 - (top_px + height_px) / total_h
        height = height_px / total_h
        frame = fig.add_axes([left + 0.002, bottom + 0.002, width - 0.004, height - 0.004])
        frame.set_xticks([])
        frame.set_yticks([])
        frame.set_facecolor("#fbfbfb")
        for spine in frame.spines.values():
            spine.set_color("#d8d9da")
        title_h = 18 / total_h
        fig.text(left + 0.006, bottom + height - title_h + 0.002, substitute(p["title"], values), fontsize=8.5,
                 weight="bold")
        rect = (left + 0.004, bottom + 0.006, width - 0.008, height - title_h - 0.01)
        if p["type"] == "stat":
            draw_stat(fig, rect, p, results[p["id"]])
        elif p["type"] == "state-timeline":
            draw_state_timeline(fig, rect, p, results[p["id"]])
        else:
            draw_timeseries(fig, rect, p, results[p["id"]])
    fig.savefig(path)
    plt.close(fig)


def first_instance(url: str) -> str:
    params = urllib.parse.urlencode({"match[]": "innodb_up"})
    with urllib.request.urlopen(f"{url}/api/v1/label/instance/values?{params}", timeout=10) as response:
        found = json.load(response)["data"]
    if not found:
        raise SystemExit(f"{url} has no innodb_up series: is the InnoDB exporter scraped?")
    return found[0]


def seconds(text: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return int(text[:-1]) * units[text[-1]]


def preview(url: str, out: str, instance: str | None = None, range_: str = "1h", offset: str = "1h",
            only: str | None = None) -> dict[str, list[str]]:
    """Draw each dashboard into out/<uid>.png; returns uid -> titles of the panels that drew no data."""
    os.makedirs(out, exist_ok=True)
    instance = instance or first_instance(url)
    end = time.time()
    span = seconds(range_)
    step = max(SCRAPE_INTERVAL, span // MAX_POINTS)
    values = variables(instance, span, step, offset)
    empty = {}
    for path in sorted(glob.glob(os.path.join(GRAFANA_DIR, "*.json"))):
        with open(path, encoding="utf-8") as f:
            dashboard = json.load(f)
        if only and dashboard["uid"] != only:
            continue
        results = {p["id"]: evaluate(p, url, values, end - span, end, step) for p in dashboard["panels"]}
        draw_dashboard(dashboard, results, values, os.path.join(out, f"{dashboard['uid']}.png"),
                       f"instance {instance}, last {range_}" + (f", offset {offset}" if "offset" in json.dumps(
                           dashboard["templating"]) else ""))
        empty[dashboard["uid"]] = [p["title"] for p in dashboard["panels"] if results[p["id"]].blank]
    return empty


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dashboards.preview", description=__doc__.splitlines()[0])
    p.add_argument("--prometheus", required=True, help="the Prometheus URL, e.g. http://127.0.0.1:9090")
    p.add_argument("--instance", help="the server (default: the first instance with innodb_up)")
    p.add_argument("--range", default="1h", help="the time range shown, ending now (default 1h)")
    p.add_argument("--offset", default="1h", help="the Compare dashboard's $offset (default 1h)")
    p.add_argument("--dashboard", help="only this uid")
    p.add_argument("--out", default="preview", help="directory for the PNGs (default ./preview)")
    args = p.parse_args(argv)
    empty = preview(args.prometheus.rstrip("/"), args.out, args.instance, args.range, args.offset, args.dashboard)
    for uid, titles in empty.items():
        print(f"{uid}: {len(titles)} empty" + (f": {'; '.join(titles)}" if titles else ""))
    print(f"PNGs in {os.path.abspath(args.out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
