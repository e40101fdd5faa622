"""From a scrape's result to Prometheus metric families, and from families to the text format."""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

from . import model
from .sources import innodb_metrics
from .target import ScrapeResult


def new_family(metric: model.Metric):
    cls = CounterMetricFamily if metric.type == "counter" else GaugeMetricFamily
    return cls(metric.name, metric.help, labels=metric.labels, unit="")


def exporter_families(result: ScrapeResult) -> list:
    """The exporter's own metrics: up, per-source health, errors, disabled counters, server info."""
    m = model.BY_NAME
    up = new_family(m["innodb_up"])
    up.add_metric([], 1.0 if result.up else 0.0)
    source_up = new_family(m["innodb_exporter_source_up"])
    duration = new_family(m["innodb_exporter_source_duration_seconds"])
    errors = new_family(m["innodb_exporter_source_errors_total"])
    parse_errors = new_family(m["innodb_exporter_parse_errors_total"])
    for name, r in result.sources.items():
        source_up.add_metric([name], 1.0 if r.up else 0.0)
        duration.add_metric([name], r.duration)
        errors.add_metric([name], float(result.errors_total.get(name, 0)))
        parse_errors.add_metric([name], float(result.parse_errors_total.get(name, 0)))
    families = [up, source_up, duration, errors, parse_errors]
    if result.server is not None:
        info = new_family(m["innodb_server_info"])
        info.add_metric([result.server.flavor, result.server.version_text], 1.0)
        families.append(info)
    if result.snapshot.counters is not None:
        disabled = new_family(m["innodb_exporter_counter_disabled"])
        for name in result.disabled_counters:
            disabled.add_metric([name], 1.0)
        families.append(disabled)
    return families


def model_families(snapshot: model.Snapshot, top: int) -> list:
    families = []
    for metric, samples in model.evaluate(snapshot, top):
        family = new_family(metric)
        for labels, value in samples:
            family.add_metric(list(labels), value)
        families.append(family)
    return families


def counter_families(snapshot: model.Snapshot) -> list:
    """Every enabled INNODB_METRICS counter as ``innodb_metrics_<name>``, typed by what it really is."""
    if not snapshot.counters:
        return []
    families = []
    for row in sorted(snapshot.counters.values(), key=lambda r: r.name):
        if not row.enabled:
            continue
        kind = innodb_metrics.prometheus_type(row)
        if kind == "counter" and row.count < 0:  # some MySQL builds report negative totals (bug 75966)
            continue
        name = counter_metric_name(row.name, kind)
        help_text = f"{row.comment.rstrip('.')} (INNODB_METRICS {row.name}, subsystem {row.subsystem})."
        cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        family = cls(name, help_text)
        family.add_metric([], float(row.count))
        families.append(family)
    return families


# Name parts that Prometheus reads as abbreviated units, spelled out as InnoDB means them
# (innodb_rwlock_s_spin_waits: shared; buffer_index_sec_rec_cluster_reads: secondary).
_SPELLED_OUT = {"s": "shared", "sec": "secondary"}


def counter_metric_name(counter: str, kind: str) -> str:
    """``innodb_metrics_<counter>``; a gauge whose name ends like a counter or histogram part gets ``_value``."""
    parts = [_SPELLED_OUT.get(part, part) for part in counter.lower().split("_")]
    name = "innodb_metrics_" + "_".join(parts)
    if kind == "gauge" and name.endswith(("_total", "_count", "_sum", "_bucket")):
        name += "_value"
    return name


def families(result: ScrapeResult, top: int) -> list:
    return (exporter_families(result) + model_families(result.snapshot, top)
            + counter_families(result.snapshot))


class _Static:
    """A collector that yields families already built for this request."""

    def __init__(self, fams):
        self._families = fams

    def collect(self):
        return iter(self._families)


def render(fams, accept_header: str = "") -> tuple[bytes, str]:
    """Encode families as the text format, or OpenMetrics when the scraper asks for it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Static(fams))
    encoder, content_type = choose_encoder(accept_header or "")
    return encoder(registry), content_type
