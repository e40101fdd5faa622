"""Faults against a real MariaDB: killed, hung, missing privilege, wrong password, bad status text,
a burst of concurrent scrapes, disabled counters."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from innodb_exporter import sources
from innodb_exporter.connection import ConnectionSettings
from innodb_exporter.parsers import innodb_status
from innodb_exporter.target import ScrapeOptions, Target
from support.exporter import Exporter, parse_samples
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER, wait_for

pytestmark = pytest.mark.integration

PROCESS_SOURCES = {"engine_innodb_status", "engine_innodb_mutex", "innodb_metrics", "innodb_trx"}


def source_up(samples) -> dict[str, float]:
    return {dict(labels)["source"]: v for labels, v in samples.series("innodb_exporter_source_up").items()}


def test_server_killed_then_restarted_without_restarting_the_exporter(fresh_db):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        assert exp.scrape(timeout_header=3)[0].value("innodb_up") == 1
        fresh_db.kill()
        samples, elapsed = exp.scrape(timeout_header=3)
        assert samples.value("innodb_up") == 0
        assert elapsed < 3, f"answered after {elapsed:.2f}s, past the 3 s scrape timeout"
        assert set(source_up(samples).values()) == {0.0}
        fresh_db.start()
        wait_for(lambda: exp.scrape(timeout_header=3)[0].value("innodb_up") == 1, 60, what="innodb_up back to 1")
        assert exp.proc.poll() is None
        log = exp.log()
        assert "cannot reach" in log and "connected to" in log


def test_hung_server_gets_innodb_up_0_within_the_deadline(fresh_db):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        assert exp.scrape(timeout_header=2)[0].value("innodb_up") == 1
        os.kill(fresh_db.proc.pid, signal.SIGSTOP)
        try:
            for _ in range(3):  # the first times out mid-query, the next ones find the target busy
                samples, elapsed = exp.scrape(timeout_header=2)
                assert samples.value("innodb_up") == 0
                assert elapsed < 2, f"answered after {elapsed:.2f}s, past the 2 s scrape timeout"
        finally:
            os.kill(fresh_db.proc.pid, signal.SIGCONT)
        wait_for(lambda: exp.scrape(timeout_header=2)[0].value("innodb_up") == 1, 60, what="recovery")
        assert "did not finish within" in exp.log() or "no answer within" in exp.log()


def test_user_without_process_privilege_keeps_the_rest_working(fresh_db):
    fresh_db.create_user("noprocess", "np-Secret-99", grants=("REPLICATION CLIENT ON *.*", "SELECT ON performance_schema.*"))
    with Exporter(fresh_db.address, "noprocess", "np-Secret-99") as exp:
        for _ in range(3):
            samples, _ = exp.scrape()
        assert samples.value("innodb_up") == 1
        up = source_up(samples)
        assert {s for s, v in up.items() if v == 0} == PROCESS_SOURCES
        assert samples.value("innodb_checkpoint_age_bytes") > 0  # from SHOW GLOBAL STATUS
        assert samples.value("innodb_history_list_length") is not None
        errors = {dict(l)["source"]: v for l, v in samples.series("innodb_exporter_source_errors_total").items()}
        assert all(errors[s] == 3 for s in PROCESS_SOURCES)
        privilege_lines = [line for line in exp.log().splitlines() if "PROCESS" in line]
        assert len(privilege_lines) == 1, privilege_lines
        assert all(s in privilege_lines[0] for s in PROCESS_SOURCES)


def test_wrong_password_is_a_clear_error_that_never_shows_the_password(fresh_db):
    wrong = "Wr0ng-Pa55word-zz"
    with Exporter(fresh_db.address, EXPORTER_USER, wrong) as exp:
        samples, _ = exp.scrape()
        assert samples.value("innodb_up") == 0
        bodies = [exp.get(path)[1] for path in ("/metrics", "/", "/-/healthy", f"/probe?target={fresh_db.address}")]
        log = exp.log()
        assert "access denied" in log.lower() and EXPORTER_USER in log
        for text in bodies + [log]:
            assert wrong not in text


def test_right_password_never_shows_either(fresh_db):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, "--log.level=debug") as exp:
        exp.scrape()
        texts = [exp.get(p)[1] for p in ("/metrics", "/", "/-/healthy")] + [exp.log()]
        assert not any(EXPORTER_PASSWORD in t for t in texts)


@pytest.mark.parametrize("mangle,source_ok", [
    (lambda text: "\x00\x17 not a monitor output at all \xff" * 50, False),
    (lambda text: text[: len(text) // 2], True),  # cut in the middle: what it has still counts
])
def test_garbled_or_truncated_status_text_is_counted_not_raised(fresh_db, monkeypatch, mangle, source_ok):
    real_fetch = sources.engine_innodb_status.fetch

    def fetch(cursor, server, names=None):
        cursor.execute("SHOW ENGINE INNODB STATUS")
        return innodb_status.parse(mangle(cursor.fetchall()[0][2]))

    monkeypatch.setattr(sources.engine_innodb_status, "fetch", fetch)
    target = Target(ConnectionSettings(host="127.0.0.1", port=fresh_db.port, user=EXPORTER_USER,
                                       password=EXPORTER_PASSWORD), ScrapeOptions())
    try:
        result = target.scrape(5)
        assert result.up
        assert result.sources["engine_innodb_status"].up is source_ok
        assert result.parse_errors_total["engine_innodb_status"] >= 1
        assert all(r.up for name, r in result.sources.items() if name != "engine_innodb_status")
    finally:
        target.close()
        monkeypatch.setattr(sources.engine_innodb_status, "fetch", real_fetch)


def test_fifty_concurrent_scrapes_send_one_set_of_queries_at_a_time(fresh_db):
    def show_engine_status_count() -> int:
        return int(fresh_db.sql("SHOW GLOBAL STATUS LIKE 'Com_show_engine_status'")[0][1])

    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        exp.scrape()
        before = show_engine_status_count()
        barrier = threading.Barrier(51)
        responses, sessions = [], []
        done = threading.Event()

        def scrape():
            barrier.wait()
            responses.append(exp.get("/metrics", timeout_header=10))

        def watch():  # the exporter's sessions on the server while the burst lasts
            with fresh_db.connect() as conn, conn.cursor() as cur:
                barrier.wait()
                while not done.is_set():
                    cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                                (EXPORTER_USER,))
                    sessions.append(cur.fetchone()[0])

        threads = [threading.Thread(target=scrape) for _ in range(50)]
        watcher = threading.Thread(target=watch)
        for t in threads + [watcher]:
            t.start()
        for t in threads:
            t.join(60)
        done.set()
        watcher.join(10)
        delta = show_engine_status_count() - before
        assert len(responses) == 50 and all(status == 200 for status, _ in responses)
        samples = [parse_samples(body) for _, body in responses]
        assert all(s.value("innodb_up") == 1 for s in samples)
        # One session on the server, so one query at a time; requests that arrive while a scrape runs
        # share it (they carry the same timings), and each scrape sent one SHOW ENGINE INNODB STATUS.
        assert sessions and max(sessions) == 1, sessions
        scrapes = {tuple(sorted(s.series("innodb_exporter_source_duration_seconds").items())) for s in samples}
        assert delta == len(scrapes), (delta, len(scrapes))
        assert delta < 25, f"{delta} scrapes for 50 concurrent requests: they were not shared"


def test_disabled_counters_are_reported_and_enabled_only_on_request(fresh_db):
    with Exporter(fresh_db.address, EXPORTER_USER, EXPORTER_PASSWORD, "--innodb_metrics.enable") as exp:
        samples, _ = exp.scrape()
        disabled = {dict(l)["counter"] for l in samples.series("innodb_exporter_counter_disabled")}
        assert {"buffer_LRU_get_free_search", "buffer_flush_adaptive_total_pages"} <= disabled
        assert samples.value("innodb_lru_get_free_search_total") is None
        exp.scrape()
        assert "cannot enable INNODB_METRICS counters" in exp.log()  # this user may not SET GLOBAL
    # root may only log in over the socket: this also runs the unix:// address form.
    with Exporter(f"unix://{fresh_db.socket}", "root", fresh_db.root_password, "--innodb_metrics.enable") as exp:
        exp.scrape()
        samples, _ = exp.scrape()
        assert samples.series("innodb_exporter_counter_disabled") == {}
        assert samples.value("innodb_lru_get_free_search_total") is not None
        assert "enabled INNODB_METRICS counters" in exp.log()
