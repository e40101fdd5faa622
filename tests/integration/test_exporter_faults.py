"""Faults against every flavour, stock and tuned: killed, hung, missing privilege, wrong password, bad status
text, a burst of concurrent scrapes, counters off and switched on, and a clean shutdown.

The tests of one flavour and configuration share a server of this module's own (``fresh_flavor_server``,
not the loaded one of the live tests): a test that kills or pauses it starts or resumes it again, and
one that switches a setting off switches it back."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from innodb_exporter.metrics import availability
from innodb_exporter.parsers import innodb_status
from innodb_exporter.scraping import health
from innodb_exporter.scraping.connection import ConnectionSettings
from innodb_exporter.scraping.target import ScrapeOptions, Target
from innodb_exporter.sources import EngineInnodbStatus
from support.exporter import Exporter, parse_samples
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER, wait_for

pytestmark = pytest.mark.integration

PROCESS_SOURCES = {"engine_innodb_status", "engine_innodb_mutex", "innodb_metrics", "innodb_trx"}


def source_up(samples) -> dict[str, float]:
    return {dict(labels)["source"]: v for labels, v in samples.series("innodb_exporter_source_up").items()}


def test_server_killed_then_restarted_without_restarting_the_exporter(fresh_flavor_server):
    db = fresh_flavor_server
    with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        assert exp.scrape(timeout_header=3)[0].value("innodb_up") == 1
        db.kill()
        samples, _ = exp.scrape(timeout_header=3)  # the client's 30 s timeout only guards against a hang
        assert samples.value("innodb_up") == 0
        assert set(source_up(samples).values()) == {0.0}
        # Down because the connection was refused, said then: not by waiting for the scrape deadline.
        log = exp.log()
        assert "cannot reach" in log and "did not finish within" not in log and "no answer within" not in log, log
        db.start()
        wait_for(lambda: exp.scrape(timeout_header=3)[0].value("innodb_up") == 1, 90, what="innodb_up back to 1")
        assert exp.proc.poll() is None
        log = exp.log()
        assert "cannot reach" in log and "connected to" in log


def test_hung_server_gets_innodb_up_0_within_the_deadline(fresh_flavor_server):
    db = fresh_flavor_server
    with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        assert exp.scrape(timeout_header=2)[0].value("innodb_up") == 1
        db.pause()
        try:
            for _ in range(3):  # the first times out mid-query, the next ones find the target busy
                # Answered while the server is still paused (it is resumed only below), so by the scrape
                # deadline and not by the server; the client's 30 s timeout only guards against a hang.
                samples, _ = exp.scrape(timeout_header=2)
                assert samples.value("innodb_up") == 0
                # No read was seen to end: no duration rather than a false 0 (one the server is not asked takes 0).
                timed = {dict(labels)["source"] for labels in samples.series("innodb_exporter_source_duration_seconds")}
                assert not timed - availability.SOURCES_DOWN.get(f"{db.flavor}/{db.config}", set())
            time.sleep(3)  # the scrape left behind fails at its own deadline, on a server still hung
            assert "did not finish within" in exp.log() or "no answer within" in exp.log()
            assert "answers again" not in exp.log()
        finally:
            db.resume()
        wait_for(lambda: exp.scrape(timeout_header=2)[0].value("innodb_up") == 1, 60, what="recovery")
        assert "answers again" in exp.log()


def test_user_without_process_privilege_keeps_the_rest_working(fresh_flavor_server):
    db = fresh_flavor_server
    db.create_user("noprocess", "np-Secret-99", grants=("REPLICATION CLIENT ON *.*", "SELECT ON performance_schema.*"))
    with Exporter(db.address, "noprocess", "np-Secret-99") as exp:
        for _ in range(3):
            samples, _ = exp.scrape()
        assert samples.value("innodb_up") == 1
        assert {s for s, v in source_up(samples).items() if v == 0} & PROCESS_SOURCES == PROCESS_SOURCES
        assert samples.value("innodb_checkpoint_age_bytes") > 0  # from SHOW GLOBAL STATUS
        # Those the server is asked for fail on every scrape; one it cannot answer is not asked (MariaDB 10.6+'s
        # empty SHOW ENGINE INNODB MUTEX) and fails on none.
        asked = PROCESS_SOURCES - availability.SOURCES_DOWN.get(f"{db.flavor}/{db.config}", set())
        errors = {dict(l)["source"]: v for l, v in samples.series("innodb_exporter_source_errors_total").items()}
        assert {s: errors[s] for s in PROCESS_SOURCES} == {s: 3 if s in asked else 0 for s in PROCESS_SOURCES}
        privilege_lines = [line for line in exp.log().splitlines() if "PROCESS" in line]
        assert len(privilege_lines) == 1, privilege_lines
        assert all(s in privilege_lines[0] for s in asked)


def test_wrong_password_is_a_clear_error_that_never_shows_the_password(fresh_flavor_server):
    db = fresh_flavor_server
    wrong = "Wr0ng-Pa55word-€-zz"  # beyond Latin-1 too: sent as UTF-8, never the cause of an error
    with Exporter(db.address, EXPORTER_USER, wrong) as exp:
        samples, _ = exp.scrape()
        assert samples.value("innodb_up") == 0
        bodies = [exp.get(path)[1] for path in ("/metrics", "/", "/-/healthy", f"/probe?target={db.address}")]
        log = exp.log()
        assert "access denied" in log.lower() and EXPORTER_USER in log
        assert "codec" not in log and "encode" not in log
        for text in bodies + [log]:
            assert wrong not in text


def test_a_password_beyond_latin_1_logs_in(fresh_flavor_server):
    db = fresh_flavor_server
    password = "pässwörd-€-Ω"
    db.create_user("unicode", password)
    with Exporter(db.address, "unicode", password) as exp:
        assert exp.scrape()[0].value("innodb_up") == 1
        assert password not in exp.log()


@pytest.mark.parametrize("mangle,source_ok", [
    (lambda text: "\x00\x17 not a monitor output at all \xff" * 50, False),
    (lambda text: text[: len(text) // 2], True),  # cut in the middle: what it has still counts
])
def test_garbled_or_truncated_status_text_is_counted_not_raised(fresh_flavor_server, monkeypatch, mangle, source_ok):
    db = fresh_flavor_server
    monkeypatch.setattr(EngineInnodbStatus, "from_rows", lambda self, rows: innodb_status.parse(mangle(rows[0][2])))
    target = Target(ConnectionSettings(host="127.0.0.1", port=db.port, user=EXPORTER_USER, password=EXPORTER_PASSWORD),
                    ScrapeOptions())
    try:
        result = target.scrape(10)
        assert result.up
        assert result.sources["engine_innodb_status"].up is source_ok
        assert result.parse_errors_total["engine_innodb_status"] >= 1
        assert all(r.up or r.state == "unsupported" for name, r in result.sources.items()
                   if name != "engine_innodb_status")
    finally:
        target.close()


def test_fifty_concurrent_scrapes_send_one_set_of_queries_at_a_time(fresh_flavor_server):
    db = fresh_flavor_server

    def show_engine_status_count() -> int:
        return int(db.sql("SHOW GLOBAL STATUS LIKE 'Com_show_engine_status'")[0][1])

    with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        exp.scrape()
        before = show_engine_status_count()
        barrier = threading.Barrier(51)
        responses, sessions = [], []
        done = threading.Event()

        def scrape():
            barrier.wait()
            responses.append(exp.get("/metrics", timeout_header=10))

        def watch():  # the exporter's sessions on the server while the burst lasts
            with db.connect() as conn, conn.cursor() as cur:
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


def counter_on(db, name: str) -> bool:
    column = "STATUS = 'enabled'" if db.flavor.startswith("mysql") else "ENABLED = 1"
    return db.sql(f"SELECT COUNT(*) FROM information_schema.INNODB_METRICS WHERE NAME = %s AND {column}", (name,))[0][0] == 1


def disabled_counters(samples) -> set[str]:
    return {dict(labels)["counter"] for labels in samples.series(health.MONITOR_DISABLED.name)}


def test_counters_that_are_off_are_named_and_enabled_only_on_request(fresh_flavor_server):
    db = fresh_flavor_server
    was_on = counter_on(db, "buffer_LRU_get_free_search")
    db.sql("SET GLOBAL innodb_monitor_disable = 'buffer_LRU_get_free_search'")
    with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD, "--innodb_metrics.enable") as exp:
        samples, _ = exp.scrape()
        assert "buffer_LRU_get_free_search" in disabled_counters(samples)
        assert samples.value("innodb_lru_get_free_search_total") is None
        absent = {dict(l)["metric"]: dict(l)["reason"] for l in samples.series(health.METRIC_ABSENT.name)}
        assert absent["innodb_lru_get_free_search_total"] == "monitor_disabled"
        exp.scrape()
        refusals = [line for line in exp.log().splitlines() if "cannot enable INNODB_METRICS counters" in line]
        assert len(refusals) == 1  # this user may not SET GLOBAL: said once, not tried on every scrape
    db.create_user("admin", "adm-Secret-5", grants=("PROCESS, REPLICATION CLIENT, SUPER ON *.*",
                                                     "SELECT ON performance_schema.*"))
    with Exporter(db.address, "admin", "adm-Secret-5", "--innodb_metrics.enable") as exp:
        samples, _ = exp.scrape()  # the first scrape after connecting already reads them on
        assert disabled_counters(samples) == set()
        assert samples.value("innodb_lru_get_free_search_total") is not None
        assert "enabled INNODB_METRICS counters" in exp.log()
        db.sql("SET GLOBAL innodb_monitor_disable = 'buffer_LRU_get_free_search'")  # switched off later
        exp.scrape()
        wait_for(lambda: exp.scrape()[0].value("innodb_lru_get_free_search_total") is not None, 10,
                 what="the counter switched on again")
    if not was_on:
        db.sql("SET GLOBAL innodb_monitor_disable = 'buffer_LRU_get_free_search'")


def test_sigterm_closes_connections_and_exits_0(fresh_flavor_server):
    db = fresh_flavor_server
    exp = Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD)
    try:
        exp.scrape()
        assert db.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s", (EXPORTER_USER,))[0][0] == 1
        exp.proc.send_signal(signal.SIGTERM)
        assert exp.proc.wait(10) == 0
        wait_for(lambda: db.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                                (EXPORTER_USER,))[0][0] == 0, 10, what="the exporter's session closed")
        assert "Traceback" not in exp.log()
    finally:
        exp.stop()


# What an application user with no privilege beyond its own tables can put into SHOW ENGINE INNODB STATUS:
# the statements of its transactions and deadlocks, printed verbatim. Each payload is a section as the
# server prints it, with values no real server has.
FORGED_SEMAPHORES = ("\n----------\nSEMAPHORES\n----------\nOS WAIT ARRAY INFO: reservation count " + "9" * 400 + "\n"
                     "--Thread 1 has waited at attacker.cc line 1 for 599.00 seconds the semaphore:\n"
                     "Mutex at 0x1, Mutex attacker_was_here created attacker.cc:1, lock var 1\n")
FORGED_REST = ("\n---\nLOG\n---\nLog sequence number 1000\nLog flushed up to 1000\nPages flushed up to 5000000000000\n"
               "Last checkpoint at 5000000000000\n\n--------------\nROW OPERATIONS\n--------------\n"
               "666 queries inside InnoDB, 666 queries in queue\n666 read views open inside InnoDB\n"
               "----------------------------\nEND OF INNODB MONITOR OUTPUT\n============================\n")
FORGED_BACKTRACKING = "\n--------\nFILE I/O\n--------\nPending normal aio reads:" + " " * 2850 + "\n"
FORGED_TRANSACTIONS = ("\n------------\nTRANSACTIONS\n------------\nTrx id counter 1\nHistory list length 99999999\n"
                       "LIST OF TRANSACTIONS FOR EACH SESSION:\n---TRANSACTION 1, ACTIVE 99999 sec\n")


def _deadlock(db, first: str, second: str) -> None:
    """Two sessions of the application user deadlock; the statements that wait carry the payloads."""
    a, b = (db.connect("app", "App-pw-1", database="app") for _ in range(2))
    errors = []

    def wait_on(conn, statement):
        try:
            with conn.cursor() as cur:
                cur.execute(statement)
        except Exception as exc:  # one of the two is chosen as the deadlock's victim
            errors.append(exc)

    try:
        for conn, row in ((a, 1), (b, 2)):
            with conn.cursor() as cur:
                cur.execute("BEGIN")
                cur.execute(f"UPDATE t SET v = v + 1 WHERE id = {row}")
        waiter = threading.Thread(target=wait_on, args=(a, f"UPDATE t SET v = v + 1 WHERE id = 2 /*{first}*/"))
        waiter.start()
        time.sleep(1)
        wait_on(b, f"UPDATE t SET v = v + 1 WHERE id = 1 /*{second}*/")
        waiter.join()
    finally:
        a.close()
        b.close()
    assert any(exc.args[0] == 1213 for exc in errors), errors


FORGED_VALUES = {"innodb_semaphore_longest_wait_seconds": 599, "innodb_queries_inside": 666,
                 "innodb_queries_queued": 666, "innodb_read_views_open": 666, "innodb_redo_lsn_bytes": 1000,
                 "innodb_redo_checkpoint_lsn_bytes": 5000000000000, "innodb_history_list_length": 99999999,
                 "innodb_oldest_transaction_seconds": 99999}


def _forged_values(samples) -> list[str]:
    """What a forged section would have put into the metrics."""
    found = [f"{name}{dict(labels)}" for (name, labels) in samples if any("attacker" in v for _, v in labels)]
    found += [f"{name} {samples.value(name)}" for name, forged in FORGED_VALUES.items()
              if samples.value(name) == forged]
    found += [f"{name} {value}" for (name, _), value in samples.items()
              if name in ("innodb_checkpoint_age_bytes", "innodb_redo_modified_age_bytes") and value < 0]
    found += [f"{name} {value}" for (name, _), value in samples.items()
              if name.startswith("innodb_semaphore_os_wait") and value > 1e18]
    return found


def test_an_application_user_cannot_forge_the_status_text(fresh_flavor_server):
    """Statements of open transactions and of a deadlock that stays in LATEST DETECTED DEADLOCK carry forged
    sections: nothing of them reaches a metric, the backtracking blanks cost no time, the scrape stays up."""
    db = fresh_flavor_server
    db.sql("CREATE DATABASE IF NOT EXISTS app")
    db.sql("CREATE TABLE IF NOT EXISTS app.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
    db.sql("INSERT IGNORE INTO app.t VALUES (1, 0), (2, 0)")
    db.create_user("app", "App-pw-1", grants=("SELECT, INSERT, UPDATE ON app.*",))
    with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exp:
        _deadlock(db, FORGED_BACKTRACKING, FORGED_SEMAPHORES + FORGED_REST)
        sleepers = []
        for payload in (FORGED_SEMAPHORES, FORGED_REST, FORGED_BACKTRACKING):
            conn = db.connect("app", "App-pw-1", database="app")
            cur = conn.cursor()
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("UPDATE t SET v = v WHERE id = 1")  # MySQL lists a read-only transaction without its query
            cur.execute("COMMIT")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            thread = threading.Thread(target=cur.execute, args=(f"SELECT SLEEP(6) /*{payload}*/",))
            thread.start()
            sleepers.append((conn, thread))
        time.sleep(1)
        try:
            text = db.sql("SHOW ENGINE INNODB STATUS")[0][2]
            assert "attacker_was_here" in text and "Pending normal aio reads:" + " " * 2850 in text
            # Up, with the status text read: its parse ended within the exporter's own 4.75 s deadline, past
            # which the scrape answers innodb_up 0 (the backtracking blanks held the old parser 10-27 s).
            samples, _ = exp.scrape(timeout_header=5)
            assert samples.value("innodb_up") == 1
            assert source_up(samples)["engine_innodb_status"] == 1
            assert _forged_values(samples) == []
        finally:
            for conn, thread in sleepers:
                thread.join()
                conn.close()
        # A later deadlock forging a TRANSACTIONS header stays in the text after its sessions have gone.
        _deadlock(db, FORGED_TRANSACTIONS, FORGED_TRANSACTIONS)
        assert "History list length 99999999" in db.sql("SHOW ENGINE INNODB STATUS")[0][2]
        samples, _ = exp.scrape(timeout_header=5)
        assert samples.value("innodb_up") == 1  # within the deadline, as above
        assert _forged_values(samples) == []
        assert samples.value("innodb_history_list_length") is not None  # from INNODB_METRICS, which no user writes
        assert "Traceback" not in exp.log()
