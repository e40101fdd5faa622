"""The exporter's own writer of the text formats gives the bytes prometheus_client's encoders give, in both
formats, for every recorded server and status text (it exists because it is several times faster)."""

from __future__ import annotations

import pytest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

from innodb_exporter import offline
from innodb_exporter.metrics.families import Family
from innodb_exporter.scraping import exposition
from innodb_exporter.scraping.scrape import ScrapeResult
from support import golden

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


class Static:
    def __init__(self, families):
        self.families = families

    def collect(self):
        return iter(self.families)


def reference(exposed, accept: str) -> bytes:
    """What prometheus_client writes for the same families."""
    families = []
    for item in exposed:
        cls = CounterMetricFamily if item.type == "counter" else GaugeMetricFamily
        family = cls(item.family.name, item.family.help, labels=item.family.labels)
        for labels, value in item.samples:
            family.add_metric(list(labels), value)
        families.append(family)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Static(families))
    return choose_encoder(accept)[0](registry)


def server_families(name):
    snapshot, results = golden.snapshot_from_capture(name)
    return exposition.families(ScrapeResult(True, snapshot.server, results, snapshot))


@pytest.mark.parametrize("accept", ["", OPENMETRICS], ids=["text", "openmetrics"])
@pytest.mark.parametrize("name", golden.server_captures())
def test_recorded_servers_are_written_as_prometheus_client_writes_them(name, accept):
    exposed = server_families(name)
    assert exposition.render(exposed, accept)[0] == reference(exposed, accept)


@pytest.mark.parametrize("accept", ["", OPENMETRICS], ids=["text", "openmetrics"])
@pytest.mark.parametrize("name", golden.status_fixtures())
def test_status_texts_are_written_as_prometheus_client_writes_them(name, accept):
    exposed = offline.parse_text(golden.read_status(name)).families
    assert exposition.render(exposed, accept)[0] == reference(exposed, accept)


def test_label_values_and_help_are_escaped_in_both_formats():
    family = Family("x_total", "counter", "", 'a "quoted"\\ help\nline', ("b", "a"))
    exposed = [family.build([(('va"l\\ue\n', "z"), 1.5), (("", "0"), 2e9)])]
    for accept in ("", OPENMETRICS):
        assert exposition.render(exposed, accept)[0] == reference(exposed, accept)


EDGE_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-7, 5e-324, 999999.5, 1e6, -1e6, 1234567.0, 2.0 ** 53 + 1, 1.8e19,
               -3e21, float("nan"), float("inf"), float("-inf"), 7, True]


def test_values_at_the_edges_are_written_as_prometheus_client_writes_them():
    family = Family("edge", "gauge", "", "Values at the edges.", ("i",))
    exposed = [family.build([((str(i),), value) for i, value in enumerate(EDGE_VALUES)])]
    for accept in ("", OPENMETRICS):
        assert exposition.render(exposed, accept)[0] == reference(exposed, accept)


def test_the_dml_delay_mysql_keeps_after_max_purge_lag_is_set_back_to_0_is_no_delay():
    """MySQL stops updating purge_dml_delay_usec once innodb_max_purge_lag is 0: the delay it kept is no
    longer applied, and InnoDBPurgeDMLDelay must end."""
    from innodb_exporter.metrics import model
    from innodb_exporter.metrics.snapshot import Snapshot
    from innodb_exporter.sources.innodb_metrics import Counter
    from innodb_exporter.sources.server import ServerInfo

    def delay(lag):
        snapshot = Snapshot(server=ServerInfo("mysql", (8, 4, 3)), variables={"innodb_max_purge_lag": lag},
                            counters={"purge_dml_delay_usec": Counter("purge_dml_delay_usec", "purge", 2500,
                                                                      "value", "", True)})
        values = {metric.name: samples for metric, samples in model.evaluate(snapshot)}
        return values["innodb_purge_dml_delay_seconds"]

    assert delay("100000") == [((), 0.0025)]
    assert delay("0") == [((), 0.0)]
