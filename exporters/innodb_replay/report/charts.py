"""The charts of the report: the key panels of the dashboards, declared from the same signals (signals/) with
the alerts' thresholds (signals/config.py) as lines, and the headline peaks read off them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from signals import CONFIG, Signal, host as h, innodb as s, panel_context
from signals.promql import Context, Expr, Range, Record, Series, deriv, sum_by

RESOLUTION_S = 15  # the stack's rule evaluation interval and its slowest scrape: the finest grid worth drawing
POINTS = 800  # about one point per pixel of a chart


@dataclass(frozen=True)
class Line:
    expr: Signal | Expr
    legend: str  # {{label}} takes the series' label, as in Grafana


@dataclass(frozen=True)
class Threshold:
    value: float
    level: str  # warning, critical
    alert: str


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    unit: str  # as the dashboards name units: percentunit, s, bytes, Bps, ops, short, count:…
    lines: tuple[Line, ...]
    about: str  # what healthy looks like, and the alert that watches it
    thresholds: tuple[Threshold, ...] = ()


def _threshold(key: str, level: str, alert: str) -> Threshold:
    return Threshold(CONFIG[key], level, alert)


CHARTS = (
    Chart("checkpoint", "Checkpoint age, share of the max checkpoint age", "percentunit",
          (Line(s.CHECKPOINT_AGE_RATIO, "checkpoint age / max"),),
          "Writers stall at 100 %. Healthy: under the warning line.",
          (_threshold("checkpoint_age_warning_ratio", "warning", "InnoDBCheckpointAgeHigh"),
           _threshold("checkpoint_age_critical_ratio", "critical", "InnoDBCheckpointAgeHigh"))),
    Chart("history", "History list length", "short", (Line(s.HISTORY_LENGTH, "history list length"),),
          "Undo records not yet purged. Healthy: under the line and not growing.",
          (_threshold("history_high", "warning", "InnoDBHistoryListGrowing"),)),
    Chart("purge", "Purge progress", "short",
          (Line(s.PURGE_PAGES, "undo log pages purged/s"), Line(deriv(s.HISTORY_LENGTH.series), "history change/s")),
          "Healthy: purge always progresses and the history change hovers around zero (InnoDBPurgeStalled)."),
    Chart("oldest", "Oldest transaction", "s", (Line(s.OLDEST_TRANSACTION, "oldest transaction"),),
          "Age of the oldest open transaction, which holds purge back. Healthy: under the line.",
          (_threshold("long_transaction_seconds", "warning", "InnoDBLongTransaction"),)),
    Chart("free_pages", "Free page waits and loops", "ops",
          (Line(s.FREE_PAGE_WAITS, "free page waits (user threads)"), Line(s.LRU_GET_FREE_LOOPS, "loops (free list empty)")),
          "Healthy: zero; a wait stalls a transaction (InnoDBFreePageWaits fires on any, InnoDBLRUGetFreeLoops on loops)."),
    Chart("pending_io", "Pending reads and writes", "short",
          (Line(s.PENDING_READS, "reads"), Line(s.PENDING_WRITES, "writes: {{kind}}")),
          "IO requests waiting for storage. Healthy: under the line on average (Kinoshita 2010).",
          (_threshold("pending_io_high", "warning", "InnoDBPendingReadsHigh, InnoDBPendingWritesHigh"),)),
    Chart("redo_fsync", "REDO fsync latency: the server's, or the host's device", "s",
          (Line(s.REDO_FSYNC_LATENCY, "server: REDO fsync average"),
           Line(h.on_data_device(h.FLUSH_LATENCY.expr), "host {{device}}: flush")),
          "Every commit waits at least this long (Kravtchuk). MariaDB 10.8+ does not time its REDO fsyncs: the "
          "host's flushes of the data device stand in.",
          (_threshold("redo_fsync_seconds", "warning", "InnoDBRedoFsyncSlow"),)),
    Chart("redo_written", "REDO written per second", "Bps", (Line(s.REDO_WRITTEN, "REDO bytes/s"),),
          "The write load on the REDO log (Kravtchuk: the max REDO write rate is your max transaction rate)."),
    Chart("flushing", "Pages flushed per second, by kind", s.PAGES_PER_SECOND,
          (Line(sum_by(("kind",), s.FLUSH_PAGES.expr), "{{kind}}"),),
          "Healthy: adaptive flushing carries the load; sync flushing should not appear (InnoDBSyncFlushWaits)."),
    Chart("semaphore", "Longest semaphore wait", "s", (Line(s.SEMAPHORE_LONGEST_WAIT, "longest wait"),),
          "InnoDB aborts the server at a 600 s wait. No data on MariaDB 10.6+: it has no sync array.",
          (_threshold("semaphore_wait_warning_seconds", "warning", "InnoDBSemaphoreWaitLong"),
           _threshold("semaphore_wait_critical_seconds", "critical", "InnoDBSemaphoreWaitLong"))),
    Chart("queries", "Queries per second", s.QUERIES.unit, (Line(s.QUERIES, "queries/s"),),
          "The load the other charts respond to (mysqld_exporter); a drop with the others red is the stall they explain."),
)
BY_KEY = {c.key: c for c in CHARTS}


@dataclass(frozen=True)
class Peak:
    """A headline of the summary: the highest value of a chart's line (or of all its lines) over the window."""

    title: str
    chart: str
    line: int | None = None  # None: the highest of every line
    per_hour: bool = False  # a rate per second also said per hour


PEAKS = (
    Peak("Checkpoint age, share of the max", "checkpoint"),
    Peak("History list length", "history", 0),
    Peak("History list growth", "purge", 1, per_hour=True),
    Peak("Free page waits", "free_pages", 0),
    Peak("REDO fsync latency", "redo_fsync"),
    Peak("Oldest transaction", "oldest"),
    Peak("Pending IO", "pending_io"),
    Peak("Longest semaphore wait", "semaphore"),
)


def step_seconds(span_s: float) -> int:
    """The charts' step for a window: about POINTS points, on a round number of seconds."""
    wanted = span_s / POINTS
    for step in (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400):
        if step >= wanted:
            return step
    return 86400


def context(instance: str, step_s: int) -> Context:
    """The dashboards' panel context for one server and this step: the rate window is Grafana's
    $__rate_interval at the resolution the points are computed at (four scrapes of 15 s at least)."""
    resolution = min(step_s, RESOLUTION_S)
    return dataclasses.replace(panel_context(CONFIG), instance=f'instance="{quoted(instance)}"',
                               window=f"{max(resolution + RESOLUTION_S, 4 * RESOLUTION_S)}s")


def query(line: Line, instance: str, step_s: int) -> str:
    """The PromQL of a line for one server. A point stands for its whole step: past the resolution it is the
    highest value in the step, so that no spike falls between two points."""
    expr = line.expr.render(context(instance, step_s))
    if step_s <= RESOLUTION_S:
        return expr
    return f"max_over_time(({expr})[{step_s}s:{RESOLUTION_S}s])"


def quoted(value: str) -> str:
    """A label value inside PromQL's double quotes (Go's escapes), whatever characters it holds."""
    return "".join("\\" + ch if ch in '\\"' else f"\\u{ord(ch):04x}" if ord(ch) < 32 or ord(ch) == 127 else ch
                   for ch in value)


def names() -> set[str]:
    """The metric names the charts read."""
    found: set[str] = set()
    for chart in CHARTS:
        for line in chart.lines:
            found |= series_names(line.expr.expr if isinstance(line.expr, Signal) else line.expr)
    return found


def series_names(expr) -> set[str]:
    """The names of the series an expression of the query helper selects, found in its tree."""
    if isinstance(expr, (Series, Record)):
        return {expr.name}
    if isinstance(expr, Range):
        return {expr.series.name}
    found: set[str] = set()
    for value in vars(expr).values() if dataclasses.is_dataclass(expr) else ():
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, Expr):
                found |= series_names(item)
    return found
