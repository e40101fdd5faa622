"""Generate docs/metrics.md from the catalogue: ``python -m innodb_exporter.reference > docs/metrics.md``.

A test regenerates it and fails on any difference, so the reference always matches the code.
"""

from __future__ import annotations

import sys

from . import model, sources

HEADER = """# Metrics reference

Generated from `exporters/innodb_exporter/model.py` by `python -m innodb_exporter.reference`; do not edit.
Every metric the exporter emits is listed here (tests/unit/test_metrics_reference.py checks it).
Where a metric has several sources, the first that has a value in a scrape wins; "off by default"
marks INNODB_METRICS counters that need `SET GLOBAL innodb_monitor_enable` (or `--innodb_metrics.enable`).
Headline metrics (**bold**) are the contract the alerts and dashboards use.

"""

COUNTERS = """
## Every INNODB_METRICS counter

| metric | type | source |
|---|---|---|
| `innodb_metrics_<counter>` (`_total` for counters) | counter or gauge | each enabled row of `information_schema.INNODB_METRICS`, help from its `COMMENT`. Rows of TYPE `counter`, `status_counter` and `set_owner` are counters, `value` rows gauges; set members holding the last batch (`*_pages`, `*_per_call`) and the flush averages InnoDB overwrites (`buffer_flush_pct_for_lsn`, `log_flush_avg_time`, …) are gauges too. A gauge whose name would end in `_total`, `_count`, `_sum` or `_bucket` gets `_value` appended, and the name parts `s` and `sec` are spelled out (`shared`, `secondary`) so that they do not read as units. |
"""

PROCESS = """
## The exporter process (on `/metrics` only)

| metric | type | source |
|---|---|---|
| `innodb_exporter_build_info{version}` | gauge | the exporter's version |
| `process_*`, `python_*` | | prometheus_client's process, platform and GC collectors |
"""


def _sources(metric: model.Metric) -> str:
    if metric.produced_by == "exporter":
        return "the exporter itself"
    if metric.build is not None:
        return metric.build_doc
    parts = []
    for labels, providers in metric.series:
        chain = "; else ".join(f"{p.what} ({p.flavors})" for p in providers)
        parts.append((f"`{','.join(labels)}`: " if labels else "") + chain)
    return "<br>".join(parts)


def render() -> str:
    lines = [HEADER, "| metric | type | unit | help | source (per flavour, in order of preference) |",
             "|---|---|---|---|---|"]
    for metric in model.CATALOGUE:
        labels = "{" + ",".join(metric.labels) + "}" if metric.labels else ""
        name = f"`{metric.name}{labels}`"
        if metric.headline:
            name = f"**{name}**"
        help_text = metric.help.replace("|", "\\|")
        lines.append(f"| {name} | {metric.type} | {metric.unit or '-'} | {help_text} | {_sources(metric)} |")
    out = "\n".join(lines) + "\n" + COUNTERS + PROCESS
    out += "\n## Sources\n\n| source | reads | privilege |\n|---|---|---|\n"
    for source in sources.ALL:
        summary = (source.__doc__ or "").strip().splitlines()[0]
        out += f"| `{source.NAME}` | {summary} | {source.PRIVILEGE} |\n"
    return out


if __name__ == "__main__":
    sys.stdout.write(render())
