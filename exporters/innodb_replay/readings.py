"""What ``innodb-replay impact`` reads from a Prometheus HTTP API: a live Prometheus, a Thanos Query, or the
replay Prometheus of an imported bundle.

Every query is in figures.json, generated from signals/impact.py, with ``$instance`` and ``$window`` left to
fill in here. Only range functions and raw samples are read, at times this module chooses: an export of the
window and its import then answer every query with the same numbers (an instant selector would see the
export's series five minutes past their end, where the live Prometheus had marked them stale).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass

from .export import Prometheus

FIGURES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "figures.json")


@dataclass(frozen=True)
class Mark:
    """A change as the exporter marked it (innodb_setting_last_change_timestamp_seconds)."""

    setting: str
    before: str
    after: str
    at: float  # unix time: when the exporter read the new value, or the server's start for a restart
    restart: bool

    def describe(self) -> str:
        return f"{self.setting} {self.before} → {self.after}" + (" (across a restart)" if self.restart else "")


@dataclass(frozen=True)
class Figure:
    key: str
    title: str
    unit: str
    better: str
    expr: str


@dataclass(frozen=True)
class BottleneckClass:
    key: str
    name: str
    code: int
    expr: str


class Queries:
    """figures.json, read once."""

    def __init__(self, path: str = FIGURES_FILE):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        self.figures = tuple(Figure(**f) for f in doc["figures"])
        bottleneck = doc["bottleneck"]
        self.classes = tuple(BottleneckClass(**c) for c in bottleneck["classes"])
        self.class_names = {c.code: c.name for c in self.classes}
        for extra in ("healthy", "unknown"):
            self.class_names[bottleneck[extra]["code"]] = bottleneck[extra]["name"]
        self.changes, self.starts, self.up, self.instances = doc["changes"], doc["starts"], doc["up"], doc["instances"]


def _label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def fill(expr: str, instance: str, window: float | None = None) -> str:
    """The query for ``instance``, with ``window`` seconds as ``$window``."""
    out = expr.replace("$instance", _label_value(instance))
    if window is not None:
        out = out.replace("$window", f"{round(window * 1000)}ms")
    return out


def _number(text) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


class PrometheusReadings:
    """The readings impact takes, from a Prometheus HTTP API (``export.Prometheus``: errors name the URL,
    credentials in it become basic auth)."""

    def __init__(self, url: str, queries: Queries | None = None):
        self.prometheus = Prometheus(url)
        self.q = queries or Queries()

    def _instant(self, query: str, at: float) -> list[dict]:
        return self.prometheus.get("/api/v1/query", query=query, time=f"{at:.3f}")["result"]

    def _raw(self, selector: str, start: float, end: float) -> list[dict]:
        """Every stored sample of ``selector`` in [start, end]."""
        return self._instant(f"{selector}[{max(1, round((end - start) * 1000))}ms]", end)

    def instances(self, start: float, end: float) -> list[str]:
        """The servers with an exporter's series in [start, end] (the series API reads the index, not samples)."""
        found = self.prometheus.get("/api/v1/series", **{"match[]": self.q.instances, "start": f"{start:.3f}",
                                                          "end": f"{end:.3f}"})
        return sorted({labels.get("instance", "") for labels in found if isinstance(labels, dict)})

    def latest_change(self, instance: str, setting: str, end: float, lookback: float) -> Mark | None:
        selector = fill(self.q.changes, instance).rstrip("}") + f',setting="{_label_value(setting)}"}}'
        query = f"max_over_time({selector}[{round(lookback)}s])"
        marks = [self._mark(r["metric"], r["value"][1]) for r in self._instant(query, end)]
        marks = [m for m in marks if m is not None]
        return max(marks, key=lambda m: m.at) if marks else None

    def changes(self, instance: str, start: float, end: float, seen_until: float) -> list[Mark]:
        """Every change marked in [start, end], from the samples up to ``seen_until`` (a mark is exported
        from the moment the exporter saw the change on)."""
        marks = set()
        for series in self._raw(fill(self.q.changes, instance), start, seen_until):
            for _, value in series["values"]:
                mark = self._mark(series["metric"], value)
                if mark is not None and start <= mark.at <= end:
                    marks.add(mark)
        return sorted(marks, key=lambda m: (m.at, m.setting))

    @staticmethod
    def _mark(labels: dict, value) -> Mark | None:
        at = _number(value)
        if at is None:
            return None
        return Mark(labels.get("setting", ""), labels.get("from", ""), labels.get("to", ""), at,
                    labels.get("restart") == "1")

    def starts(self, instance: str, start: float, end: float) -> list[float]:
        """The server's start times that samples in [start, end] give, oldest first."""
        values = {_number(v) for s in self._raw(fill(self.q.starts, instance), start, end) for _, v in s["values"]}
        return sorted(v for v in values if v is not None)

    def up_samples(self, instance: str, start: float, end: float) -> list[tuple[float, float]]:
        """(time, innodb_up) of every scrape of the exporter in [start, end]."""
        out = [(float(t), float(v)) for s in self._raw(fill(self.q.up, instance), start, end) for t, v in s["values"]]
        return sorted(out)

    def averages(self, figure: Figure, instance: str, ends: list[float], length: float) -> list[float | None]:
        """The figure averaged over ``length`` seconds ending at each of ``ends`` (evenly spaced)."""
        query = fill(figure.expr, instance, length)
        if len(ends) == 1:
            result = self._instant(query, ends[0])
            return [_number(result[0]["value"][1]) if len(result) == 1 else None]
        step = ends[1] - ends[0]
        data = self.prometheus.get("/api/v1/query_range", query=query, start=f"{ends[0]:.3f}",
                                   end=f"{ends[-1]:.3f}", step=f"{step:.3f}")["result"]
        if len(data) != 1:  # none: not measured; several: not one number per moment
            return [None] * len(ends)
        at = {round(float(t) * 1000): _number(v) for t, v in data[0]["values"]}
        return [at.get(round(t * 1000)) for t in ends]

    def class_states(self, instance: str, start: float, end: float, step: float) -> dict[int, dict[int, float]]:
        """Each bottleneck class's state (1 holds, 0 clear, -1 not decidable) at every step in [start, end]:
        class code -> {time in ms: state}."""
        out: dict[int, dict[int, float]] = {}
        for c in self.q.classes:
            data = self.prometheus.get("/api/v1/query_range", query=fill(c.expr, instance), start=f"{start:.3f}",
                                       end=f"{end:.3f}", step=f"{step:.3f}")["result"]
            states: dict[int, float] = {}
            for series in data:  # one per instance; latch contention's carries the latch
                for t, v in series["values"]:
                    value = _number(v)
                    if value is not None:
                        key = round(float(t) * 1000)
                        states[key] = max(states.get(key, value), value)
            out[c.code] = states
        return out


def spacing(samples: list[tuple[float, float]]) -> float | None:
    """The usual time between scrapes."""
    gaps = [b[0] - a[0] for a, b in zip(samples, samples[1:])]
    return statistics.median(gaps) if gaps else None
