"""What happened in a window, read off a Prometheus (the live one, or a replay of a bundle): the servers, what
limited each (the bottleneck classes the recording rules name), the alerts that fired, the evidence
captures and the settings changes marked, and the charts with their peaks.

Spans come from the stored samples themselves (a range selector, as export reads them), not from a range
query: a range query would carry the last value five minutes past the end of a span (its look-back), so an
alert would last five minutes longer than it fired.
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from dataclasses import dataclass, field, replace

from innodb_bundle.terminal import printable
from signals import CONFIG, bottleneck as b, innodb as s, panel_context
from signals.promql import innodb, series

from . import ReportError, charts
from .charts import RESOLUTION_S, Chart, Peak, Threshold

MAX_SERVERS = 20  # servers drawn in one report: --instance chooses among more
MAX_SERIES = 8  # series drawn per line of a chart: the highest ones
CAPTURES = innodb("innodb_exporter_last_capture_timestamp_seconds")
# The tuning loop's mark of each settings change (one series per setting; its value is the time of the
# latest change; labels setting, from, to, restart).
SETTING_CHANGES = innodb("innodb_setting_last_change_timestamp_seconds")
FIRING = series("ALERTS", 'alertstate="firing"')
CODES = {float(c.code) for c in b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS)}
ALERT_OWN_LABELS = ("alertname", "alertstate", "severity", "instance", "job", "__name__")


@dataclass
class Span:
    start_ms: int
    end_ms: int
    value: float

    @property
    def ms(self) -> int:
        return self.end_ms - self.start_ms


def spans(samples: list[tuple[int, float]], window_end_ms: int) -> list[Span]:
    """Consecutive samples of one value as spans. A sample stands until the next one, or for one spacing
    (the median gap between samples) when the next is more than 2.5 spacings away: no span covers a gap."""
    if not samples:
        return []
    gaps = [b_ - a for (a, _), (b_, _) in zip(samples, samples[1:]) if b_ > a]
    spacing = int(statistics.median(gaps)) if gaps else RESOLUTION_S * 1000
    out: list[Span] = []
    for number, (t, value) in enumerate(samples):
        following = samples[number + 1][0] if number + 1 < len(samples) else None
        end = following if following is not None and following - t <= 2.5 * spacing else t + spacing
        end = max(t, min(end, window_end_ms))
        if out and out[-1].value == value and out[-1].end_ms == t:
            out[-1].end_ms = end
        else:
            out.append(Span(t, end, value))
    return out


@dataclass
class AlertFired:
    name: str
    severity: str
    labels: dict[str, str]  # the alert's own labels besides its name, severity, instance and job
    spans: list[Span]

    @property
    def total_ms(self) -> int:
        return sum(x.ms for x in self.spans)


@dataclass
class SettingChange:
    at_ms: int
    setting: str
    before: str
    after: str
    restart: str  # "1" where the change came with a restart, as the exporter labels it


@dataclass
class Drawn:
    legend: str
    line: int  # the chart's line it was drawn from
    points: list[tuple[float, float]]  # (unix seconds, value)


@dataclass
class ChartData:
    chart: Chart
    step_s: int
    series: list[Drawn] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class PeakValue:
    peak: Peak
    unit: str
    value: float | None = None
    at_s: float | None = None
    legend: str = ""
    thresholds: tuple[Threshold, ...] = ()


@dataclass
class Server:
    instance: str
    classes: list[Span] = field(default_factory=list)  # the winner's code over the window
    alerts: list[AlertFired] = field(default_factory=list)
    captures_ms: list[int] = field(default_factory=list)
    changes: list[SettingChange] = field(default_factory=list)
    charts: list[ChartData] = field(default_factory=list)
    peaks: list[PeakValue] = field(default_factory=list)


@dataclass
class Incident:
    start_ms: int
    end_ms: int
    servers: list[Server]
    alerts_from: str  # "ALERTS" (what the Prometheus fired) or "rules" (computed here from the alerting rules)
    notes: list[str] = field(default_factory=list)
    classes_found: bool = True  # some server has the bottleneck classes


def _context(instance: str | None = None):
    """The panels' context, for one server or (None) for all."""
    matcher = f'instance="{charts.quoted(instance)}"' if instance is not None else ""
    return replace(panel_context(CONFIG), instance=matcher)


def gather(prometheus, start_ms: int, end_ms: int, alerting_rules: list[dict], instances: list[str] | None = None,
           progress: bool = True) -> Incident:
    """Read the window off ``prometheus`` (export.Prometheus)."""
    found = sorted({r.get("instance", "") for r in prometheus.series(s.SERVER_UP.expr.render(_context()), start_ms,
                                                                     end_ms)} - {""})
    if instances:
        unknown = [i for i in instances if i not in found]
        if unknown:
            raise ReportError(f"no server {printable(unknown[0], 100)!r} in the window: it has "
                              f"{', '.join(printable(i, 100) for i in found) or 'none'}")
        found = [i for i in found if i in instances]
    notes = []
    if not found:
        raise ReportError("no server in the window: no innodb_up series of the InnoDB exporter between "
                          f"{start_ms / 1000:.0f} and {end_ms / 1000:.0f}")
    if len(found) > MAX_SERVERS:
        notes.append(f"{len(found)} servers in the window: the first {MAX_SERVERS} are reported (--instance chooses)")
        found = found[:MAX_SERVERS]
    present = prometheus.names(start_ms, end_ms)
    if "ALERTS" in present:
        alerts_from, alerts = "ALERTS", _fired(prometheus, start_ms, end_ms)
    else:
        alerts_from = "rules"
        alerts, missing = computed_alerts(prometheus, alerting_rules, present, start_ms, end_ms, progress)
        notes += missing
    incident = Incident(start_ms, end_ms, [], alerts_from, notes)
    step = charts.step_seconds((end_ms - start_ms) / 1000)
    for instance in found:
        if progress:
            print(f"reading {printable(instance, 100)}: classes, alerts, marks, {len(charts.CHARTS)} charts",
                  file=sys.stderr, flush=True)
        server = Server(instance, alerts=sorted(alerts.get(instance, []), key=lambda a: a.spans[0].start_ms))
        ctx = _context(instance)
        winner = prometheus.samples(series(b.WINNER).render(ctx), start_ms, end_ms)
        # A bundle may carry a winner series of its own: only the codes the rules give are read.
        codes = [[(t, v) for t, v in values if v in CODES] for values in winner.values()]
        server.classes = spans(max(codes, key=len), end_ms) if codes else []
        server.captures_ms = sorted({round(v * 1000) for values in prometheus.samples(
            CAPTURES.render(ctx), start_ms, end_ms).values() for _, v in values if start_ms <= v * 1000 <= end_ms})
        server.changes = _changes(prometheus.samples(SETTING_CHANGES.render(ctx), start_ms, end_ms), start_ms, end_ms)
        server.charts = [_chart(prometheus, chart, instance, start_ms, end_ms, step) for chart in charts.CHARTS]
        server.peaks = [_peak(peak, server.charts) for peak in charts.PEAKS]
        incident.servers.append(server)
    incident.classes_found = any(server.classes for server in incident.servers)
    return incident


def _fired(prometheus, start_ms: int, end_ms: int) -> dict[str, list[AlertFired]]:
    """The alerts the Prometheus fired, from its ALERTS series."""
    out: dict[str, list[AlertFired]] = {}
    for labels, samples in prometheus.samples(FIRING.render(_context()), start_ms, end_ms).items():
        labels = dict(labels)
        out.setdefault(labels.get("instance", ""), []).append(AlertFired(
            labels.get("alertname", "?"), labels.get("severity", ""),
            {k: v for k, v in labels.items() if k not in ALERT_OWN_LABELS}, spans(samples, end_ms)))
    return out


_DURATION = re.compile(r"([0-9]+)(ms|s|m|h|d|w|y)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text: str) -> float:
    """A Prometheus duration ('5m', '1h30m') in seconds."""
    parts = _DURATION.findall(str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        raise ReportError(f"not a Prometheus duration: {printable(text, 40)!r}")
    return sum(int(n) * _UNIT_S[u] for n, u in parts)


def firing(times: list[float], for_s: float, step_s: float) -> list[float]:
    """The evaluations at which an alert fired, given those at which its expression held: as Prometheus
    decides, it fires once its expression has held at every evaluation for ``for``."""
    out, since, previous = [], None, None
    for t in times:
        if previous is None or t - previous > step_s * 1.5:
            since = t  # pending from here
        if t - since >= for_s - 1e-6:
            out.append(t)
        previous = t
    return out


def computed_alerts(prometheus, rules: list[dict], present: set[str], start_ms: int, end_ms: int,
                    progress: bool = True) -> tuple[dict[str, list[AlertFired]], list[str]]:
    """The alerts the rules would have fired over the window, each expression evaluated at the stack's
    evaluation interval; a rule whose series the data lacks is named, not taken as silent."""
    out: dict[str, list[AlertFired]] = {}
    notes = []
    unevaluated = []
    if progress and rules:
        print(f"computing {len(rules)} alerting rules over the window", file=sys.stderr, flush=True)
    for rule in rules:
        missing = sorted(expression_names(rule["expr"]) - present)
        if missing:
            said = f"{rule['alert']} ({', '.join(missing)})"
            if said not in unevaluated:  # an alert's warning and critical levels lack the same
                unevaluated.append(said)
            continue
        for_s = duration_seconds(rule.get("for", "0s"))
        labels_of_rule = {str(k): str(v) for k, v in (rule.get("labels") or {}).items()}
        for result in prometheus.query_range(rule["expr"], start_ms / 1000, end_ms / 1000, RESOLUTION_S):
            times = firing([t for t, v in result["values"] if not math.isnan(v)], for_s, RESOLUTION_S)
            if not times:
                continue
            labels = {**result["metric"], **labels_of_rule}
            fired = spans([(round(t * 1000), 1.0) for t in times], end_ms)
            out.setdefault(labels.get("instance", ""), []).append(AlertFired(
                rule["alert"], labels.get("severity", ""),
                {k: v for k, v in labels.items() if k not in ALERT_OWN_LABELS}, fired))
    if unevaluated:
        notes.append("alerting rules not evaluated, since the data lacks series they read: " + "; ".join(unevaluated))
    return out, notes


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
             "group_right", "inf", "nan", "atan2"}


def expression_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (what is neither a function, a label, a keyword nor a
    number)."""
    text = _STRINGS.sub(" ", expr)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    text = _GROUPING.sub(" ", text)
    text = re.sub(r"(?<![\w:])[0-9][\w.]*", " ", text)
    return {m.group() for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text)
            if m.group() not in _KEYWORDS and not text[m.end():].lstrip().startswith("(")}


def _changes(found: dict, start_ms: int, end_ms: int) -> list[SettingChange]:
    out = []
    for labels, samples in found.items():
        labels = dict(labels)
        for at in sorted({round(v * 1000) for _, v in samples if math.isfinite(v)}):
            if start_ms <= at <= end_ms:
                out.append(SettingChange(at, labels.get("setting", "?"), labels.get("from", "?"), labels.get("to", "?"),
                                         labels.get("restart", "")))
    return sorted(out, key=lambda c: c.at_ms)


def _legend(template: str, labels: dict) -> str:
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)


def _chart(prometheus, chart: Chart, instance: str, start_ms: int, end_ms: int, step: int) -> ChartData:
    data = ChartData(chart, step)
    for number, line in enumerate(chart.lines):
        try:
            results = prometheus.query_range(charts.query(line, instance, step), start_ms / 1000, end_ms / 1000, step)
        except Exception as exc:  # a query the Prometheus refuses costs its line, not the report
            data.errors.append(f"{line.legend}: {printable(exc, 300)}")
            continue
        drawn = []
        for result in results:
            points = [(t, v) for t, v in result["values"] if math.isfinite(v) and abs(v) < 1e300]  # a bundle's own
            if points:
                drawn.append(Drawn(_legend(line.legend, result["metric"]), number, points))
        drawn.sort(key=lambda d: -max(v for _, v in d.points))
        data.series += drawn[:MAX_SERIES]
    return data


def _peak(peak: Peak, drawn: list[ChartData]) -> PeakValue:
    data = next(d for d in drawn if d.chart.key == peak.chart)
    out = PeakValue(peak, data.chart.unit, thresholds=data.chart.thresholds)
    for d in data.series:
        if peak.line is not None and d.line != peak.line:
            continue
        at, value = max(d.points, key=lambda p: p[1])
        if out.value is None or value > out.value:
            out.value, out.at_s, out.legend = value, at, d.legend
    return out
