"""The exporter's own metrics: whether it could read the server, each source, and what is switched off.

Declared here, where they are built (mysqld_exporter's ``exporter.go`` does the same), each family once.
"""

from __future__ import annotations

from .. import __version__
from ..metrics import model
from ..metrics.families import Family
from ..sources.perf_schema_latches import untimed_by_kind
from .monitors import disabled
from .scrape import ScrapeResult

UP = Family("innodb_up", "gauge", "", "1 when the server answered the core source (SHOW GLOBAL STATUS) in this scrape.")
SOURCE_UP = Family("innodb_exporter_source_up", "gauge", "",
                   "1 when the source was read in this scrape, 0 when it failed or the server cannot answer it.",
                   ("source",))
SOURCE_DURATION = Family("innodb_exporter_source_duration_seconds", "gauge", "seconds",
                         "Time this scrape spent on the source: from the answer before its own (the sources' "
                         "statements go in one query) to its value; absent when its read did not end (no "
                         "connection, connection lost, scrape deadline passed).", ("source",))
SOURCE_ERRORS = Family("innodb_exporter_source_errors_total", "counter", "",
                       "Failed reads of the source since the exporter started (missing privilege, lost connection, "
                       "timeout).", ("source",))
PARSE_ERRORS = Family("innodb_exporter_parse_errors_total", "counter", "",
                      "Problems met parsing the source's output since the exporter started (garbled or truncated text, "
                      "lines that no longer match).", ("source",))
MONITOR_DISABLED = Family("innodb_exporter_monitor_disabled", "gauge", "",
                          "1 for each INNODB_METRICS counter this exporter reads that is disabled on the server "
                          "(enable with innodb_monitor_enable, or the --innodb_metrics.enable flag).", ("counter",))
LATCHES_DISABLED = Family("innodb_exporter_latch_instruments_disabled", "gauge", "",
                          "InnoDB latch instruments of this kind that performance_schema does not both count and time "
                          "(their waits are missing from innodb_latch_*).", ("kind",))
METRIC_ABSENT = Family("innodb_exporter_metric_absent", "gauge", "",
                       "1 for each metric of the reference that has no value in this scrape, with the reason: "
                       "monitor_disabled, source_failed, source_disabled, source_unsupported or not_provided "
                       "(this server does not have it).", ("metric", "reason"))
SERVER_INFO = Family("innodb_server_info", "gauge", "", "1, labelled with the server's flavour and version.",
                     ("flavor", "version"))
BUILD_INFO = Family("innodb_exporter_build_info", "gauge", "", "1, labelled with the exporter's version.", ("version",))

# Those of the metric contract (docs/design.md) (the reference prints them in bold).
HEADLINE = (UP, SOURCE_UP, SOURCE_DURATION, SERVER_INFO)
FAMILIES = (UP, SOURCE_UP, SOURCE_DURATION, SOURCE_ERRORS, PARSE_ERRORS, MONITOR_DISABLED, LATCHES_DISABLED,
            METRIC_ABSENT, SERVER_INFO, BUILD_INFO)


def families(result: ScrapeResult, present: set[str]) -> list:
    """The health of one scrape; ``present`` names the model metrics that have a value in it."""
    sources = result.sources
    out = [
        UP.build([((), 1.0 if result.up else 0.0)]),
        SOURCE_UP.build(((name,), 1.0 if r.up else 0.0) for name, r in sources.items()),
        SOURCE_DURATION.build(((name,), r.duration) for name, r in sources.items() if r.duration is not None),
        SOURCE_ERRORS.build(((name,), float(result.errors_total.get(name, 0))) for name in sources),
        PARSE_ERRORS.build(((name,), float(result.parse_errors_total.get(name, 0))) for name in sources),
    ]
    snapshot = result.snapshot
    if result.server is not None:
        out.append(SERVER_INFO.build([((result.server.flavor, result.server.version_text), 1.0)]))
    if snapshot.counters is not None:
        out.append(MONITOR_DISABLED.build(((name,), 1.0) for name in disabled(snapshot, model.NEEDED_COUNTERS)))
    if snapshot.latches is not None:
        out.append(LATCHES_DISABLED.build(((kind,), float(n)) for kind, n in sorted(untimed_by_kind(snapshot.latches).items())))
    if result.up:
        states = {name: r.state for name, r in sources.items()}
        out.append(METRIC_ABSENT.build(((name, reason), 1.0) for name, reason in model.absent(snapshot, states, present)))
    return out


def build_info():
    return BUILD_INFO.build([((__version__,), 1.0)])
