"""Everything the exporter emits is in docs/metrics.md (tests/unit/test_generated.py holds the file equal to
the code), and the contract's names are headline metrics."""

from __future__ import annotations

import os
import re

from innodb_exporter.capture import service as capture
from innodb_exporter.metrics import model, settings
from innodb_exporter.scraping import health
from support import golden

ROOT = os.path.dirname(golden.TESTS)

# The metric contract's headline names (docs/design.md): the names the alerts and dashboards use.
# Changing one is a breaking change.
CONTRACT = """
innodb_up innodb_exporter_source_up innodb_exporter_source_duration_seconds innodb_server_info
innodb_checkpoint_age_bytes innodb_checkpoint_age_max_bytes innodb_checkpoint_age_async_bytes
innodb_checkpoint_age_sync_bytes innodb_redo_capacity_bytes innodb_redo_lsn_bytes innodb_redo_flushed_lsn_bytes
innodb_redo_checkpoint_lsn_bytes innodb_redo_written_bytes_total innodb_redo_writes_total innodb_redo_fsyncs_total
innodb_redo_file_misc_operations_total innodb_redo_file_misc_seconds_total innodb_redo_fsync_latency_seconds innodb_redo_log_waits_total
innodb_buffer_pool_pages_flushed_total innodb_flush_pages_total innodb_flush_target_pages
innodb_free_page_waits_total innodb_lru_get_free_search_total innodb_lru_get_free_loops_total
innodb_lru_get_free_waits_total innodb_buffer_pool_pages innodb_buffer_pool_pending_reads
innodb_buffer_pool_pending_writes innodb_history_list_length innodb_purge_lag_transactions
innodb_purge_dml_delay_seconds innodb_purge_undo_log_pages_total innodb_active_transactions
innodb_oldest_transaction_seconds innodb_semaphore_waiting_threads innodb_semaphore_longest_wait_seconds
innodb_latch_waits_total innodb_latch_wait_seconds_total innodb_mutex_waits_total innodb_queries_inside
innodb_queries_queued innodb_read_views_open innodb_change_buffer_size_pages
innodb_setting innodb_setting_last_change_timestamp_seconds innodb_server_start_time_seconds
""".split()


FAMILIES = [m.family for m in model.METRICS] + list(health.FAMILIES) + list(capture.FAMILIES) + list(settings.FAMILIES)


def test_the_contract_is_in_the_catalogue_as_headline_metrics():
    headline = {m.name for m in model.METRICS if m.headline} | {f.name for f in health.HEADLINE} | \
        {f.name for f in settings.FAMILIES}
    assert set(CONTRACT) <= headline, sorted(set(CONTRACT) - headline)


def test_every_family_is_declared_once():
    names = [f.name for f in FAMILIES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_contract_labels_are_those_of_the_spec():
    labels = {f.name: f.labels for f in FAMILIES}
    assert labels["innodb_exporter_source_up"] == ("source",)
    assert labels["innodb_server_info"] == ("flavor", "version")
    assert labels["innodb_redo_fsync_latency_seconds"] == ("stat",)
    assert labels["innodb_flush_pages_total"] == ("kind",)
    assert labels["innodb_buffer_pool_pages"] == ("state",)
    assert labels["innodb_buffer_pool_pending_writes"] == ("kind",)
    assert labels["innodb_semaphore_waiting_threads"] == ("latch",)
    assert labels["innodb_latch_waits_total"] == ("kind", "name")
    assert labels["innodb_mutex_waits_total"] == ("name",)
    # What the incident report's timeline and the dashboards' annotations read (issue 29's contract).
    assert labels["innodb_setting_last_change_timestamp_seconds"] == ("setting", "from", "to", "restart")
    assert labels["innodb_setting"] == ("setting",)


def families_in(text: str) -> set[str]:
    """Family names, without the _total that the text format puts on counters."""
    return {n.removesuffix("_total") for n in re.findall(r"^# TYPE (\S+) ", text, re.M)}


def documented(name: str) -> bool:
    return name in {f.name.removesuffix("_total") for f in FAMILIES} or name.startswith("innodb_metrics_")


def test_every_family_in_every_golden_file_is_documented():
    for kind, fixtures in (("parse", golden.status_fixtures()), ("servers", golden.server_captures())):
        for fixture in fixtures:
            with open(golden.golden_path(kind, fixture), encoding="utf-8") as f:
                undocumented = sorted(n for n in families_in(f.read()) if not documented(n))
            assert undocumented == [], f"{fixture}: {undocumented}"


def test_every_catalogued_metric_appears_in_some_golden_file():
    seen = set()
    for kind, fixtures in (("parse", golden.status_fixtures()), ("servers", golden.server_captures())):
        for fixture in fixtures:
            with open(golden.golden_path(kind, fixture), encoding="utf-8") as f:
                seen |= families_in(f.read())
    # Those only a MySQL server has live (no fixture records their sources) are named here.
    mysql_only_live = {"innodb_redo_fsyncs", "innodb_redo_file_misc_operations", "innodb_redo_file_misc_seconds",
                       "innodb_redo_fsync_latency_seconds",
                       "innodb_mutex_waits", "innodb_lru_get_free_waits"}
    missing = sorted(m.name for m in model.METRICS if m.name.removesuffix("_total") not in seen | mysql_only_live)
    assert missing == []


def test_the_counters_to_enable_are_listed_once():
    """The INNODB_METRICS counters a server should enable come from the metric table (model.NEEDED_COUNTERS):
    no file lists them by hand, but the one generated from it (provisioning/mysql/monitoring.cnf)."""
    listed = re.compile(r"innodb[_-]monitor[_-]enable\s*=\s*['\"]?[A-Za-z_]+\s*,")
    generated = os.path.join("provisioning", "mysql", "monitoring.cnf")
    by_hand = []
    for folder, _, files in os.walk(ROOT):
        if any(part in folder for part in (".git", ".venv", "fixtures", ".stack", "__pycache__")):
            continue
        for name in files:
            path = os.path.join(folder, name)
            if not name.endswith((".py", ".md", ".cnf", ".yml", ".sh")) or path.endswith(generated):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                if listed.search(f.read()):
                    by_hand.append(os.path.relpath(path, ROOT))
    assert by_hand == []
    with open(os.path.join(ROOT, generated), encoding="utf-8") as f:
        assert f"innodb_monitor_enable = {','.join(model.NEEDED_COUNTERS)}" in f.read()
