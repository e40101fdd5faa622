"""The exporter against a real MariaDB under sysbench oltp_read_write load."""

from __future__ import annotations

import subprocess
import time

import pytest

from support.exporter import Exporter
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def exporter(loaded_db):
    with Exporter(loaded_db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        yield exp


def test_every_source_is_read_and_the_server_identified(exporter):
    samples, _ = exporter.scrape()
    assert samples.value("innodb_up") == 1
    up = {dict(labels)["source"]: v for labels, v in samples.series("innodb_exporter_source_up").items()}
    # MariaDB does not instrument its REDO file, so that source answers with no row but is read fine.
    assert up == {s: 1.0 for s in up} and len(up) == 8, up
    info = samples.series("innodb_server_info")
    assert [dict(labels)["flavor"] for labels in info] == ["mariadb"]


def test_checkpoint_age_lsns_and_counters_move_as_they_should(exporter):
    scrapes = []
    for _ in range(8):
        samples, _ = exporter.scrape()
        scrapes.append(samples)
        time.sleep(1.5)
    for s in scrapes:
        age, limit = s.value("innodb_checkpoint_age_bytes"), s.value("innodb_checkpoint_age_max_bytes")
        assert 0 < age < limit, (age, limit)
        assert s.value("innodb_checkpoint_age_async_bytes") < limit <= s.value("innodb_redo_capacity_bytes")
        assert s.value("innodb_redo_checkpoint_lsn_bytes") <= s.value("innodb_redo_flushed_lsn_bytes") \
            <= s.value("innodb_redo_lsn_bytes")
    for name in ("innodb_redo_lsn_bytes", "innodb_redo_flushed_lsn_bytes", "innodb_redo_checkpoint_lsn_bytes"):
        values = [s.value(name) for s in scrapes]
        assert values == sorted(values), f"{name} went backwards: {values}"
    first, last = scrapes[0], scrapes[-1]
    for name, labels in (("innodb_redo_written_bytes_total", {}), ("innodb_redo_writes_total", {}),
                         ("innodb_buffer_pool_pages_flushed_total", {}),
                         ("innodb_lru_get_free_search_total", {}), ("innodb_purge_undo_log_pages_total", {})):
        assert last.value(name, **labels) > first.value(name, **labels), name
    flushed = sum(last.series("innodb_flush_pages_total").values()) - sum(first.series("innodb_flush_pages_total").values())
    assert flushed > 0
    latch_waits = last.series("innodb_latch_waits_total")
    assert latch_waits and sum(latch_waits.values()) > 0
    assert all(v >= 0 for v in last.series("innodb_latch_wait_seconds_total").values())


def _server_now(db) -> dict[str, int]:
    rows = db.sql("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_history_list_length', 'Innodb_checkpoint_age')")
    return {name: int(value) for name, value in rows}


def test_history_and_checkpoint_age_agree_with_the_server_at_the_same_moment(loaded_db, exporter):
    agreed = 0
    for _ in range(5):
        before = _server_now(loaded_db)
        samples, _ = exporter.scrape()
        after = _server_now(loaded_db)
        limit = samples.value("innodb_checkpoint_age_max_bytes")
        ok = True
        for metric, variable, slack in (("innodb_history_list_length", "Innodb_history_list_length", 200),
                                        ("innodb_checkpoint_age_bytes", "Innodb_checkpoint_age", 0.02 * limit)):
            low, high = sorted((before[variable], after[variable]))
            ok &= low - slack <= samples.value(metric) <= high + slack
        agreed += ok
    assert agreed >= 4, "the exporter disagreed with the server more than once in five scrapes"


def test_output_passes_promtool_check_metrics(exporter, promtool):
    status, body = exporter.get("/metrics")
    out = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_landing_page_and_health(exporter):
    status, body = exporter.get("/")
    assert status == 200 and "/metrics" in body and "/probe" in body
    assert exporter.get("/-/healthy")[0] == 200
    assert exporter.get("/nope")[0] == 404


def test_probe_serves_another_target_through_the_same_exporter(loaded_db, exporter):
    status, body = exporter.get(f"/probe?target={loaded_db.address}")
    assert status == 200 and "innodb_up 1.0" in body
    assert "process_resident_memory_bytes" not in body  # a probe carries the target's metrics only
    assert exporter.get("/probe")[0] == 400
