"""Files generated from the metric contract, so that none of them is kept by hand: docs/metrics.md
(``metrics_reference``) and provisioning/mysql/monitoring.cnf (``monitoring_cnf``), written by
``./innodb-stack generate`` (tools/generate.py).
"""

from __future__ import annotations


from .capture import service as capture
from .metrics import availability, model, settings
from .scraping import health
from .sources import CATALOGUE
from .sources.perf_schema_latches import LATCH_INSTRUMENTS

HEADER = """# Metrics reference

Generated from `exporters/innodb_exporter/metrics/model.py`, `settings.py`, `scraping/health.py` and `capture/service.py` by
`./innodb-stack generate`; do not edit. Every metric the exporter emits is listed here
(tests/unit/test_metrics_reference.py checks it). Where a metric has several sources, the first that has
a value in a scrape wins; "off by default" marks INNODB_METRICS counters that need `innodb_monitor_enable`
(or `--innodb_metrics.enable`). Headline metrics (**bold**) are the contract the alerts and dashboards use.
A metric with fixed series that has no value in a scrape is named by `innodb_exporter_metric_absent`, with
the reason.

"""

COUNTERS = """
## Every INNODB_METRICS counter

| metric | type | source |
|---|---|---|
| `innodb_metrics_<counter>` (`_total` for counters) | counter or gauge | each enabled row of `information_schema.INNODB_METRICS`, help from its `COMMENT`. Typed by meaning from the table in `exporters/innodb_exporter/metrics/counter_types.py` (a current value is a gauge whatever its TYPE says); a counter the table does not know falls back to its TYPE (`value` rows are gauges). A gauge whose name would end in `_total`, `_count`, `_sum` or `_bucket` gets `_value` appended, and the name parts `s` and `sec` are spelled out (`shared`, `secondary`) so that they do not read as units. |
"""

PROCESS = f"""
## The exporter process (on `/metrics` only)

| metric | type | source |
|---|---|---|
| `{health.BUILD_INFO.name}{{version}}` | gauge | {health.BUILD_INFO.help} |
| `process_*`, `python_*` | | prometheus_client's process, platform and GC collectors |
"""

SWITCHED_OFF = """
## Turning on what stock servers leave off

* **INNODB_METRICS counters**: most are disabled by default. Enable the ones the metrics read in the
  server's configuration (`provisioning/mysql/monitoring.cnf`, generated from this table, holds the
  `innodb_monitor_enable` line), at run time with `SET GLOBAL innodb_monitor_enable = 'name'`, or let the
  exporter do it with `--innodb_metrics.enable` (its user then needs `SUPER` on MariaDB and MySQL 5.7,
  `SYSTEM_VARIABLES_ADMIN` on MySQL 8+). `innodb_exporter_monitor_disabled{counter}` lists those still off.
* **Latch instruments** (`innodb_latch_*`): performance_schema must be ON (MariaDB's default is OFF: set
  `performance_schema = ON`, which needs a restart) and the `wait/synch/%/innodb/%` instruments enabled and
  timed: in the configuration `performance-schema-instrument = 'wait/synch/%/innodb/%=ON'`, or at run time
  `UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES' WHERE NAME LIKE
  'wait/synch/%/innodb/%'`. The exporter does not switch them on itself: an opt-in flag for that would need
  `UPDATE` on `performance_schema.setup_instruments`, which the documented grants do not give.
  `innodb_exporter_latch_instruments_disabled{kind}` counts those not enabled and timed. The exporter reads
  the instruments' states once a minute, with the summary of all of them, and on each scrape the summary
  of the enabled ones only (a disabled instrument counts nothing): one switched on at run time shows its
  waits from the first scrape a minute or more after the last reading.
"""


SETTINGS_SOURCE = {
    settings.SETTING.name: "`SHOW GLOBAL VARIABLES`: the settings of the list below that the server has (all flavours)",
    settings.LAST_CHANGE.name: "a reading of the settings against the one before of the same server (all flavours; "
                               "none until a change is seen)",
    settings.START_TIME.name: "the scrape's time − `Uptime` (all flavours)",
}


def _row(family, headline: bool, sources: str) -> str:
    labels = "{" + ",".join(family.labels) + "}" if family.labels else ""
    name = f"`{family.name}{labels}`"
    if headline:
        name = f"**{name}**"
    help_text = family.help.replace("|", "\\|")
    return f"| {name} | {family.type} | {family.unit or '-'} | {help_text} | {sources} |"


def availability_table() -> str:
    """The headline metrics each tested server lacks, stock and tuned (metrics/availability.py; the live tests hold it)."""
    columns = [f"{server}/{config}" for server in availability.SERVERS for config in availability.CONFIGS]
    titles = [f"{availability.SERVERS[c.split('/')[0]]} {c.split('/')[1]}" for c in columns]
    lines = ["\n## What each server gives\n",
             "Headline metrics that some server the tests run does not give, with its defaults (stock) and configured as",
             "below (tuned); every other headline metric is there on all of them. Seen on live servers by",
             "tests/integration/test_exporter_live.py, which fails when the exporter disagrees with this table. A cell",
             "names the reason: for a metric with fixed series, as `innodb_exporter_metric_absent{reason}` does; for",
             "the latch metrics, whose series are the instruments, `instruments_disabled` where",
             "`innodb_exporter_latch_instruments_disabled` counts them all off; \"when waited\" marks series that exist",
             "only once threads have waited.\n",
             "| metric | " + " | ".join(titles) + " |", "|---|" + "---|" * len(columns)]
    for metric in model.METRICS:
        if not metric.headline:
            continue
        cells = []
        for column in columns:
            if column in availability.DATA_DEPENDENT.get(metric.name, ()):
                cells.append("when waited")
            else:
                cells.append(availability.ABSENT.get(metric.name, {}).get(column, "✓"))
        if set(cells) != {"✓"}:
            lines.append(f"| `{metric.name}` | " + " | ".join(cells) + " |")
    down = [f"{key}: {', '.join(sorted(names))}" for key, names in availability.SOURCES_DOWN.items()]
    lines.append(f"\nSources a server does not answer: {'; '.join(down)} (MariaDB 10.6+ keeps nothing in SHOW "
                 "ENGINE INNODB MUTEX; performance_schema is OFF by default on MariaDB).")
    return "\n".join(lines) + "\n"


def metrics_reference() -> str:
    lines = [HEADER, "| metric | type | unit | help | source (per flavour, in order of preference) |",
             "|---|---|---|---|---|"]
    lines += [_row(f, f in health.HEADLINE, "the exporter itself") for f in health.FAMILIES if f is not health.BUILD_INFO]
    lines += [_row(f, False, "the exporter itself, per server, with `--capture.dir`") for f in capture.FAMILIES]
    lines += [_row(m.family, m.headline, m.builder.doc()) for m in model.METRICS]
    lines += [_row(f, True, SETTINGS_SOURCE[f.name]) for f in settings.FAMILIES]
    out = "\n".join(lines) + "\n" + COUNTERS + PROCESS + availability_table() + settings.reference() + SWITCHED_OFF
    out += "\n## Sources\n\n| source | reads | privilege |\n|---|---|---|\n"
    for source in CATALOGUE:
        out += f"| `{source.name}` | {source.summary} | {source.privilege} |\n"
    return out


def monitoring_cnf() -> str:
    return (
        "# Generated by `./innodb-stack generate` (innodb_exporter/reference.py); do not edit.\n"
        "# A server configured for monitoring: the INNODB_METRICS counters the exporter reads, performance_schema\n"
        "# with the InnoDB latch and file instruments, and (for the demo) a REDO log small enough that checkpoint\n"
        "# age moves.\n"
        "[mysqld]\n"
        f"innodb_monitor_enable = {','.join(model.NEEDED_COUNTERS)}\n"
        "performance_schema = ON\n"
        f"performance-schema-instrument = '{LATCH_INSTRUMENTS}=ON'\n"
        "performance-schema-instrument = 'wait/io/file/innodb/%=ON'\n"
        "innodb_redo_log_capacity = 128M\n"
        "innodb_buffer_pool_size = 256M\n"
    )

