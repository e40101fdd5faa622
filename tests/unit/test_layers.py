"""Imports run one way: no loops, and no room imports from its own floor or above (tools/layers.py)."""

from __future__ import annotations

from tools import layers


def test_every_module_is_in_a_room():
    assert {layers.room(module) for module in layers.modules()} == set(layers.ROOMS)


def test_no_module_loops_and_no_import_runs_back_up():
    edges = layers.imports(layers.modules())
    assert len(edges) > 300
    assert layers.loops(edges) == []
    assert [edge.describe() for edge in layers.breaks(edges)] == []


def test_a_loop_and_an_import_back_up_are_found():
    edges = [layers.Import("innodb_exporter.metrics.model", "innodb_exporter.scraping.scrape", 1),
             layers.Import("innodb_exporter.scraping.scrape", "innodb_exporter.metrics.model", 2),
             layers.Import("signals.config", "innodb_exporter.moment", 3)]
    assert layers.loops(edges) == [["innodb_exporter.metrics.model", "innodb_exporter.scraping.scrape"]]
    assert [e.line for e in layers.breaks(edges)] == [1, 3]  # metrics below scraping; signals beside the exporter
