"""Values in Grafana's units, as the previews and the incident report write them."""

from __future__ import annotations

import pytest

from signals.units import format_value


@pytest.mark.parametrize("unit, value, text", [
    ("percentunit", 0.373, "37.3%"),
    ("s", 0.00025, "250 µs"), ("s", 90, "1.5 min"), ("s", 2 * 86400, "2 d"), ("s", 0, "0 s"), ("s", 5e-9, "5 ns"),
    ("bytes", 3 * 1024 ** 2, "3 MiB"), ("bytes", 512, "512 B"), ("Bps", 1500, "1.5 kB/s"),
    ("ops", 12, "12 ops/s"), ("ops", 2500, "2.5 Kops/s"), ("iops", 3e6, "3 Mio/s"),
    ("short", 4.2e6, "4.2 Mil"), ("count:pages", 1200, "1.2K pages"), ("suffix:× io_capacity", 13.13, "13.1× io_capacity"),
    ("none", 0.5, "0.5"),
])
def test_a_value_is_written_as_a_grafana_panel_writes_it(unit, value, text):
    assert format_value(unit, value) == text


@pytest.mark.parametrize("value", [None, float("nan"), float("inf")])
def test_no_value_is_a_dash(value):
    assert format_value("ops", value) == "–"
