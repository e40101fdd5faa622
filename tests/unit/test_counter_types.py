"""Every INNODB_METRICS counter of every recorded server is typed by meaning, and the exposition follows it."""

from __future__ import annotations

import csv
import glob
import json
import os

from innodb_exporter.metrics import counters
from innodb_exporter.metrics.counter_types import COUNTERS, GAUGES, TYPES
from innodb_exporter.metrics.snapshot import Snapshot
from innodb_exporter.sources.innodb_metrics import Counter
from support.golden import FIXTURES


def recorded_counters() -> dict[str, str]:
    """Name -> TYPE column of every counter in the fixtures (INNODB_METRICS dumps and server recordings)."""
    found = {}
    for path in glob.glob(os.path.join(FIXTURES, "innodb_metrics", "*.tsv")):
        with open(path, encoding="utf-8") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                found[row["NAME"]] = row["TYPE"]
    for path in glob.glob(os.path.join(FIXTURES, "servers", "*.json")):
        with open(path, encoding="utf-8") as f:
            for row in json.load(f)["sources"].get("innodb_metrics", []):
                found[row[0]] = row[3]
    return found


def test_every_recorded_counter_is_in_the_table_once():
    assert not GAUGES & COUNTERS
    assert sorted(set(recorded_counters()) - set(TYPES)) == []


def test_current_values_the_server_types_as_counters_are_gauges():
    # Seen going down between scrapes on live servers (issue 8): pending operations, current waits, sizes.
    for name in ("os_log_pending_fsyncs", "os_log_pending_writes", "lock_row_lock_current_waits", "ibuf_size",
                 "os_pending_reads", "os_pending_writes", "lock_rec_locks", "buffer_flush_n_to_flush_requested"):
        assert TYPES[name] == "gauge", name


def test_running_totals_the_server_types_as_values_are_counters():
    for name in ("lock_deadlocks", "lock_timeouts", "log_checkpoints", "purge_stop_count"):
        assert TYPES[name] == "counter", name


def test_the_exposition_follows_the_table_and_names_gauges_and_counters_apart():
    rows = {n: Counter(n, "sub", 3, t, "c.", True) for n, t in
            (("os_pending_reads", "counter"), ("lock_deadlocks", "value"), ("not_in_any_table", "value"))}
    names = {f.name: f.type for f in counters.families(Snapshot(counters=rows))}
    assert names == {"innodb_metrics_os_pending_reads": "gauge", "innodb_metrics_lock_deadlocks": "counter",
                     "innodb_metrics_not_in_any_table": "gauge"}
