"""What ``innodb-replay impact`` measures on each side of a settings change: the headline figures of a tuning
experiment (Zaitsev: "the numerical value of each performance improvement"), built from the signals the
dashboards draw, and the bottleneck classes.

``innodb-replay`` is installed with the exporter, without this package: ``./innodb-stack generate`` renders
these into ``exporters/innodb_replay/figures.json`` (``document``), which it reads. Every figure is an
average over ``$window`` ending at the time it is evaluated, for the server ``$instance``: a rate over the
window for a counter, ``avg_over_time`` for a gauge, so that one expression gives both a window's value
and each of its sub-windows' (the noise band, docs/runbooks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import bottleneck as b
from . import innodb as s
from . import panel_context, rule_context
from .config import CONFIG
from .promql import Context, Expr, avg_over_time, innodb, max_without, mysqld, rate, total

WINDOW = "$window"  # a window's length, or a sub-window's
HIGHER, LOWER, UP_TO_ONE = "higher", "lower", "higher up to 1"  # which way is better


@dataclass(frozen=True)
class Figure:
    key: str
    title: str
    expr: Expr
    unit: str  # "/s", "ratio" (shown in %), "s", or "" (a count)
    better: str


FIGURES = (
    # The transactions the engines committed or rolled back (Handler_commit, Handler_rollback): autocommit
    # statements too, which COMMIT statements (Com_commit) leave out.
    Figure("transactions", "transactions per second",
           total(rate(mysqld("mysql_global_status_handlers_total", 'handler=~"commit|rollback"'))), "/s", HIGHER),
    Figure("queries", "queries per second", s.QUERIES.expr, "/s", HIGHER),
    # InnoDB's row counts (Innodb_rows_*) where the server keeps them (MySQL, Percona Server); MariaDB 10.5+
    # does not, and there the handlers' (Handler_read_*, Handler_write/update/delete) count them, every engine's.
    Figure("rows_read", "rows read per second",
           total(rate(mysqld("mysql_global_status_innodb_row_ops_total", 'operation="read"')))
           | total(rate(mysqld("mysql_global_status_handlers_total", 'handler=~"read_.*"'))), "/s", HIGHER),
    Figure("rows_changed", "rows changed per second",
           total(rate(mysqld("mysql_global_status_innodb_row_ops_total", 'operation=~"inserted|updated|deleted"')))
           | total(rate(mysqld("mysql_global_status_handlers_total", 'handler=~"write|update|delete"'))),
           "/s", HIGHER),
    Figure("checkpoint_age", "checkpoint age, share of its max",
           avg_over_time(s.CHECKPOINT_AGE.series) / avg_over_time(s.CHECKPOINT_MAX.series), "ratio", LOWER),
    Figure("flush_rate", "flush rate against its target",
           rate(s.PAGES_FLUSHED.series)
           / max_without(("reason",), avg_over_time(innodb("innodb_flush_target_pages", 'reason="requested"'))),
           "ratio", UP_TO_ONE),
    Figure("free_page_waits", "free page waits per second", s.FREE_PAGE_WAITS.expr, "/s", LOWER),
    Figure("redo_fsync_latency", "REDO fsync latency", s.REDO_FSYNC_LATENCY.expr, "s", LOWER),
    Figure("history_length", "history list length", avg_over_time(s.HISTORY_LENGTH.series), "", LOWER),
)

# The exporter's series that place a change and a restart in time, and say when the server was read.
CHANGES = innodb("innodb_setting_last_change_timestamp_seconds")
STARTS = innodb("innodb_server_start_time_seconds")
UP = s.SERVER_UP.expr


def context(window: str = WINDOW) -> Context:
    """A panel's selectors (``instance="$instance"``, which impact fills in), with the given window."""
    return panel_context(CONFIG).with_window(window)


def document() -> dict:
    """figures.json: every query innodb-replay impact sends, with ``$window`` and ``$instance`` to fill in."""
    ctx = context()
    classes = b.states(CONFIG)
    rule_window = context(CONFIG["bottleneck_window"])
    return {
        "figures": [{"key": f.key, "title": f.title, "unit": f.unit, "better": f.better, "expr": f.expr.render(ctx)}
                    for f in FIGURES],
        # Each class's state as the recording rules compute it (signals/bottleneck.py), evaluated afresh from the
        # exported series: an export and its import then give the same classes, whenever rules were evaluated.
        "bottleneck": {
            "classes": [{"key": c.key, "name": c.name, "code": c.code, "expr": classes[c.key].render(rule_window)}
                        for c in b.CLASSES],
            "healthy": {"name": b.HEALTHY_CLASS.name, "code": b.HEALTHY},
            "unknown": {"name": b.UNKNOWN_CLASS.name, "code": b.UNKNOWN},
        },
        "changes": CHANGES.render(ctx),
        "starts": STARTS.render(ctx),
        "up": UP.render(ctx),
        "instances": UP.render(rule_context(CONFIG)),
    }
