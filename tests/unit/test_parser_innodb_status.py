"""The SHOW ENGINE INNODB STATUS parser on verbatim outputs of many server versions, on hostile and on bad input.

Expected values are read off the fixture texts by eye (the lines are quoted in the comments). The attack
tests need no expected values: what the parser reads from a text with forged sections must equal what it
reads from the same text without them.
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
import signal
import sys

import pytest

from innodb_exporter import offline
from innodb_exporter.parsers import innodb_status
from support import golden
from support.hostile import FORGED

HOSTILE = os.path.join(golden.FIXTURES, "innodb_status_hostile")


def parse(name):
    return innodb_status.parse(golden.read_status(name))


# How long a parse may run before the test gives up on it: only so that a regression fails the test instead of
# hanging it, never a measure. Inputs meant to catch backtracking are sized so that it would take hours on them
# (the old aio expression took 10-27 s on 2,850 blanks, and about the cube of their number), a linear parse
# milliseconds.
HANG_GUARD = 60


class _Hung(BaseException):  # not an Exception, which parse() would turn into a problem of the result
    pass


def parsed(text: str) -> innodb_status.InnodbStatus:
    """innodb_status.parse(text); the test fails if it has not returned after HANG_GUARD seconds (SIGALRM
    interrupts Python code and the re module's matching alike)."""
    def give_up(signum, frame):
        raise _Hung
    previous = signal.signal(signal.SIGALRM, give_up)
    signal.setitimer(signal.ITIMER_REAL, HANG_GUARD)
    try:
        return innodb_status.parse(text)
    except _Hung:
        pytest.fail(f"the parse had not returned after {HANG_GUARD} s: it backtracks or loops", pytrace=False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def lines_run(text: str) -> int:
    """How many lines of the parser's code a parse of ``text`` runs: its work, counted rather than timed
    (what the re module does inside one call is not seen: see ``parsed`` for that)."""
    count = 0
    parser = innodb_status.__file__

    def line(frame, event, arg):
        nonlocal count
        count += event == "line"
        return line

    previous = sys.gettrace()
    sys.settrace(lambda frame, event, arg: line if frame.f_code.co_filename == parser else None)
    try:
        innodb_status.parse(text)
    finally:
        sys.settrace(previous)
    return count


def read_hostile(name: str) -> str:
    with open(os.path.join(HOSTILE, name), encoding="utf-8", newline="") as f:
        return f.read()


def view(status: innodb_status.InnodbStatus) -> dict:
    """Everything a parse says that the parser vouches for: all but problems, the transaction list and the
    deadlock section (statement text writes in both)."""
    out = dataclasses.asdict(status)
    out.pop("problems")
    out.pop("deadlock")
    if out["transactions"] is not None:
        for attacker_influenced in ("active", "lock_waits", "oldest_active_seconds", "longest"):
            out["transactions"].pop(attacker_influenced)
    return out


COMPLETE = [f for f in golden.status_fixtures() if "truncated" not in f]
WITH_DEADLOCK = [f for f in COMPLETE if "\nLATEST DETECTED DEADLOCK\n" in golden.read_status(f)]


# --- verbatim outputs -------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", golden.status_fixtures())
def test_every_fixture_parses_its_core_sections(fixture):
    status = parse(fixture)
    truncated = "truncated" in fixture
    assert status.complete is not truncated
    assert bool(status.problems) is truncated
    assert status.semaphores is not None
    if not truncated:
        assert None not in (status.log, status.buffer_pool, status.file_io, status.row_operations, status.transactions)


def test_mysql_57_semaphores_are_aggregated_by_latch_name_or_creation_site():
    status = parse("mysql-5.7.26-semaphores.txt")
    counts = {}
    for wait in status.semaphores.waits:
        counts[(wait.kind, wait.latch)] = counts.get((wait.kind, wait.latch), 0) + 1
    # "Mutex at 0x3c62d78, Mutex BUF_POOL created buf0buf.cc:1731, lock var 1" (20 of them)
    # "S-lock on RW-latch at 0x7f... created in file buf0buf.cc line 1460" (5), fil0fil.cc line 1383 (2)
    assert counts == {("mutex", "BUF_POOL"): 20, ("rwlock", "buf0buf.cc:1460"): 5,
                      ("rwlock", "fil0fil.cc:1383"): 2, ("mutex", "REDO_RSEG"): 1}
    # OS WAIT ARRAY INFO: reservation count 815823 / signal count 441290
    assert (status.semaphores.reservation_count, status.semaphores.signal_count) == (815823, 441290)
    # RW-sx spins 17217, rounds 499752, OS waits 10804
    sx = status.semaphores.spin["rw_sx"]
    assert (sx.spins, sx.rounds, sx.os_waits) == (17217, 499752, 10804)


def test_mysql_57_transactions_log_and_three_buffer_pools():
    status = parse("mysql-5.7.26-semaphores.txt")
    trx = status.transactions
    # Trx id counter 63293117 / Purge done for trx's n:o < 63293084 / History list length 201
    assert (trx.trx_id_counter, trx.purge_done_for, trx.history_list_length) == (63293117, 63293084, 201)
    assert trx.active == 32  # 34 entries, 2 of them "not started"
    log = status.log
    assert (log.lsn, log.flushed_lsn, log.pages_flushed_lsn, log.last_checkpoint_lsn) == (
        504758850518, 504758849125, 504241875560, 504218358171)
    bp = status.buffer_pool
    # Buffer pool size 786336, Free buffers 3065, Database pages 783271, Modified db pages 86408
    assert (bp.size, bp.free, bp.database_pages, bp.modified_pages) == (786336, 3065, 783271, 86408)
    # Pending writes: LRU 0, flush list 47, single page 0
    assert (bp.pending_writes_lru, bp.pending_writes_flush_list, bp.pending_writes_single_page) == (0, 47, 0)
    assert sorted(status.buffer_pool_instances) == [0, 1, 2]
    assert status.buffer_pool_instances[0].size == 262112
    assert sum(p.pending_writes_flush_list for p in status.buffer_pool_instances.values()) == 47
    # Pending flushes (fsync) log: 1; buffer pool: 1 / 398146 OS file reads, 1156227 OS file writes, 110741 OS fsyncs
    io = status.file_io
    assert (io.pending_fsyncs_log, io.pending_fsyncs_buffer_pool) == (1, 1)
    assert (io.os_reads, io.os_writes, io.os_fsyncs) == (398146, 1156227, 110741)
    # Ibuf: size 1, free list len 866, seg size 868, 1 merges
    ib = status.insert_buffer
    assert (ib.size, ib.free_list_len, ib.seg_size, ib.merges) == (1, 866, 868, 1)


def test_mysql_8026_truncated_text_keeps_what_it_has():
    status = parse("mysql-8.0.26-semaphores-truncated.txt")
    assert not status.complete
    assert status.transactions is None  # "FAIL TO OBTAIN LOCK MUTEX, SKIP LOCK INFO PRINTING"
    assert len(status.semaphores.waits) == 29
    assert max(w.seconds for w in status.semaphores.waits) == 261.0
    assert len(status.buffer_pool_instances) == 4
    # Pending flushes (fsync) log: 0; buffer pool: 7
    assert status.file_io.pending_fsyncs_buffer_pool == 7
    assert status.row_operations.queries_inside == 1  # "1 queries inside InnoDB, 0 queries in queue"
    # The text breaks off inside ROW OPERATIONS: its missing lines are the truncation, counted once.
    assert status.problems == ["text ends before END OF INNODB MONITOR OUTPUT (truncated)"]


def test_mysql_56_text_cut_after_the_transaction_list_keeps_only_the_front():
    status = parse("mysql-5.6.16-semaphores-truncated.txt")
    assert len(status.semaphores.waits) == 11
    assert {w.latch for w in status.semaphores.waits} == {"sync0sync.cc:1472", "dict0dict.cc:2420", "buf0buf.cc:996"}
    assert status.semaphores.spin["mutex"].spins == 5723675  # "Mutex spin waits 5723675, rounds 5019676, OS waits 27829"
    assert status.transactions.oldest_active_seconds == 300
    # Without the END marker the text may end inside user text: FILE I/O and later are not trusted.
    assert (status.file_io, status.insert_buffer, status.log) == (None, None, None)
    assert "the sections after the transaction list are not read" in status.problems[0]


def test_pending_aio_is_the_printed_total_or_the_sum_per_thread():
    # Pending normal aio reads: 100 [5, 0, 0, 0, 0, 0, 0, 7, 0, 3, 70, 0, 0, 4, 2, 0, ...] , aio writes: 0 [...] ,
    line = next(x for x in golden.read_status("mysql-5.6.16-semaphores-truncated.txt").split("\n")
                if x.startswith("Pending normal aio reads:"))
    per_thread = re.sub(r": [0-9]+ \[", ": [", line)  # 5.7+ prints only the list
    for aio in (line, per_thread):
        text = "--------\nFILE I/O\n--------\nI/O thread 0 state: waiting for i/o request (insert buffer thread)\n" + aio + "\n"
        io = innodb_status.parse(text).file_io
        assert (io.pending_normal_reads, io.pending_normal_writes) == (100, 0)


@pytest.mark.parametrize("fixture,lsn,checkpoint", [
    ("mysql-8.0.30-table.txt", 31603995, 31603995),  # the mysql client's table format
    ("mysql-8.4-or-9.x-log-capacity.txt", 12423264498, 12423264498),
    ("mariadb-10.11.19.txt", 71467515, 46186063),
    ("mariadb-10.2.11.txt", 45062728, 35673229),
])
def test_log_positions(fixture, lsn, checkpoint):
    log = parse(fixture).log
    assert (log.lsn, log.last_checkpoint_lsn) == (lsn, checkpoint)


def test_percona_and_xtradb_print_their_checkpoint_limits():
    log = parse("percona-8.0-ge30-unknown-minor-lockwait.txt").log
    assert (log.checkpoint_age, log.max_checkpoint_age) == (0, 87417344)
    log = parse("mariadb-10.1.23.txt").log  # XtraDB: Max checkpoint age 53647074 ... Checkpoint age 50584681
    assert (log.max_checkpoint_age, log.modified_age, log.checkpoint_age) == (53647074, 41218881, 50584681)


def test_xtradb_prints_latch_names():
    status = parse("mariadb-10.1.23.txt")
    # X-lock (wait_ex) on RW-latch at 0x7f96a37c1610 '&block->lock'
    assert {w.latch for w in status.semaphores.waits} == {"&block->lock"}
    assert len(status.buffer_pool_instances) == 4


def test_mariadb_10_11_format():
    status = parse("mariadb-10.11.19.txt")
    assert status.file_io.pending_fsyncs == 0  # "Pending flushes (fsync): 0"
    assert status.buffer_pool.pending_writes_single_page is None  # "Pending writes: LRU 0, flush list 0"
    assert status.row_operations.read_views == 8
    assert status.row_operations.queries_inside is None  # not printed since 10.5
    assert status.insert_buffer is None
    assert status.transactions.history_list_length == 90
    assert status.semaphores.waits == [] and status.semaphores.reservation_count is None  # an empty section


def test_lock_waits_are_counted():
    trx = parse("percona-8.0-ge30-unknown-minor-lockwait.txt").transactions
    assert trx.lock_waits == 2
    assert trx.oldest_active_seconds == 69


def test_two_part_lsn_of_mysql_50():
    text = "---\nLOG\n---\nLog sequence number 84 3000620880\nLast checkpoint at  84 3000000000\n"
    log = innodb_status.parse(text).log
    assert log.lsn == (84 << 32) + 3000620880
    assert log.lsn - log.last_checkpoint_lsn == 620880


# --- forged sections in user text ---------------------------------------------------------------

def _foreign_key_error_section() -> list[str]:
    """LATEST FOREIGN KEY ERROR as MariaDB 10.11 printed it (recorded), without its own payload."""
    text = re.sub(r"/\*.*?\*/", "", read_hostile("mariadb-10.11.19-forged-sections.txt"), flags=re.S)
    lines = text.split("\n")
    start = lines.index("LATEST FOREIGN KEY ERROR") - 1
    return lines[start:lines.index("LATEST DETECTED DEADLOCK") - 1]


def _after_query_line(lines: list[str], start: int) -> int:
    """Where query text goes: after the first "MySQL thread id" line from ``start``, or inside the first
    list entry when the transactions print none (MySQL lists idle ones as "not started", without)."""
    for i in range(start, len(lines)):
        if " thread id " in lines[i]:
            return i + 1
        if lines[i].startswith("---TRANSACTION ") and not any(" thread id " in x for x in lines[i + 1:i + 6]):
            return i + 1
    raise AssertionError("no place for query text")


def inject(text: str, place: str, payload: str) -> str:
    """The text as the server prints it when a user's query text holds ``payload``, at ``place``."""
    lines = text.split("\n")
    payload_lines = ("SELECT SLEEP(8) /*\n" + payload + "\n*/").split("\n")
    if place == "transaction list":
        at = _after_query_line(lines, lines.index("LIST OF TRANSACTIONS FOR EACH SESSION:"))
    elif place == "deadlock":
        at = _after_query_line(lines, lines.index("LATEST DETECTED DEADLOCK"))
    else:  # a foreign key error section, printed between SEMAPHORES and the lock sections
        first = min(lines.index(t) for t in ("LATEST DETECTED DEADLOCK", "TRANSACTIONS") if t in lines) - 1
        section = _foreign_key_error_section()
        at_query = _after_query_line(section, 0)
        lines[first:first] = section[:at_query] + payload_lines + section[at_query:]
        return "\n".join(lines)
    lines[at:at] = payload_lines
    return "\n".join(lines)


CASES = [(f, place, payload) for payload in FORGED for place, fixtures in (
    ("transaction list", COMPLETE), ("foreign key error", COMPLETE), ("deadlock", WITH_DEADLOCK)) for f in fixtures]


@pytest.mark.parametrize("fixture,place,payload", CASES)
def test_a_section_forged_in_user_text_changes_nothing(fixture, place, payload):
    real = golden.read_status(fixture)
    forged = inject(real, place, FORGED[payload])
    status = parsed(forged)  # the blanks that held the old aio expression: see the test below
    expected = parse(fixture)
    if payload == "transactions" and (place != "transaction list" or fixture in WITH_DEADLOCK):
        # After a deadlock or foreign key error the real header cannot be told from a forged one.
        assert status.transactions is None
        assert len(status.problems) == 1 and "user text forges them" in status.problems[0]
        expected.transactions = None
    else:
        assert status.problems == expected.problems
    assert view(status) == view(expected)


@pytest.mark.parametrize("place", ["transaction list", "foreign key error", "deadlock"])
def test_blanks_of_any_length_forged_in_user_text_are_not_read(place):
    """The forged FILE I/O line whose blanks held the old aio expression 10-27 s, with 35 times as many: hours
    for an expression that backtracks on them, nothing for a parser that leaves user text alone."""
    fixture = WITH_DEADLOCK[0]
    payload = FORGED["file i/o blanks"].replace(" " * 2850, " " * 100_000)
    status = parsed(inject(golden.read_status(fixture), place, payload))
    expected = parse(fixture)
    assert status.problems == expected.problems
    assert view(status) == view(expected)


@pytest.mark.parametrize("place,after,before", [
    ("transaction list", "LIST OF TRANSACTIONS FOR EACH SESSION:", "FILE I/O"),
    ("deadlock", "LATEST DETECTED DEADLOCK", "TRANSACTIONS"),
    ("foreign key error", "LATEST FOREIGN KEY ERROR", "LATEST DETECTED DEADLOCK"),
])
def test_forgeries_land_inside_user_text(place, after, before):
    lines = inject(golden.read_status(WITH_DEADLOCK[0]), place, FORGED["log"]).split("\n")
    assert lines.index(after) < lines.index("Log sequence number 1000") < lines.index(before)


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(HOSTILE) if f.endswith("-forged-sections.txt")))
def test_recorded_forgeries_are_not_read(name):
    # Live servers, an unprivileged user's sessions forging sections in a foreign key error (MariaDB), a
    # deadlock and running transactions: the parse equals that of the text without the user's comments.
    text = read_hostile(name)
    status = parsed(text)  # the old parser took 33-39 s on these texts: see the blanks tried at length above
    clean = innodb_status.parse(re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    assert status.problems == clean.problems == []
    assert view(status) == view(clean)
    assert "attacker_was_here" not in {w.latch for w in status.semaphores.waits}
    assert status.row_operations.read_views != 666 and status.buffer_pool.size != 1
    assert status.transactions.active == 6  # the sleeping sessions are real transactions


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(HOSTILE) if f.endswith("-forged-transactions.txt")))
def test_a_recorded_deadlock_forging_transactions_hides_the_summary_not_the_rest(name):
    # Recorded after the deadlocked sessions had left: their forgery stays in LATEST DETECTED DEADLOCK.
    text = read_hostile(name)
    status = innodb_status.parse(text)
    clean = innodb_status.parse(re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    assert clean.transactions is not None and clean.problems == []
    assert status.transactions is None and len(status.problems) == 1
    clean.transactions = None
    assert view(status) == view(clean)


def test_forged_values_reach_no_metric_and_no_error():
    # The 400-digit number took /metrics to HTTP 500 (int to float overflow), 599 s raised a false alarm.
    text = inject(golden.read_status("mariadb-10.11.19.txt"), "transaction list",
                  FORGED["400 digits"] + "\n" + FORGED["semaphores"])
    exposition = offline.render(offline.parse_text(text)).decode()
    assert "attacker_was_here" not in exposition and "9" * 25 not in exposition
    # MariaDB 10.6+ has no sync array: the forged wait is not read, and the longest wait is not measured.
    assert "innodb_semaphore_longest_wait_seconds " not in exposition


# --- bounded numbers and expressions that cannot backtrack -------------------------------------

SEMAPHORES_57 = "mysql-5.7.26-semaphores.txt"


@pytest.mark.parametrize("number,readable", [
    ("18446744073709551615", True), ("18446744073709551616", False), ("9" * 21, False), ("9" * 400, False),
    ("\u0661\u0662", False), ("\uff11", False), ("-1", False), ("", False),
])
def test_numbers_are_bounded_to_what_the_server_prints(number, readable):
    real = golden.read_status("mysql-8.0-ge30-unknown-minor.txt")
    assert "OS WAIT ARRAY INFO: reservation count 731\n" in real
    text = real.replace("OS WAIT ARRAY INFO: reservation count 731\n", f"OS WAIT ARRAY INFO: reservation count {number}\n")
    status = innodb_status.parse(text)
    assert (status.semaphores.reservation_count is not None) is readable
    assert bool(status.problems) is not readable
    offline.render(offline.parse_text(text))  # and the exposition is written


def test_semaphore_wait_seconds_are_bounded():
    text = "----------\nSEMAPHORES\n----------\n--Thread 7 has waited at a.cc line 3 for {} seconds the semaphore:\n" \
           "Mutex at 0x1, Mutex LOG created log0log.cc:1, lock var 1\n"
    for seconds, kept in (("599.00", True), ("100000000", True), ("100000001", False), ("9" * 400 + ".0", False)):
        status = innodb_status.parse(text.format(seconds))
        assert [w.seconds for w in status.semaphores.waits] == ([float(seconds)] if kept else []), seconds


FILE_IO, LOG, SEMAPHORES = ("-" * len(t) + "\n" + t + "\n" + "-" * len(t) + "\n" for t in ("FILE I/O", "LOG", "SEMAPHORES"))


@pytest.mark.parametrize("ending", ["\n", ""], ids=["whole line", "cut line"])
@pytest.mark.parametrize("line", [
    # The input that held the old expression 10-27 s had 2,850 blanks: 35 times as many would hold it for hours.
    FILE_IO + "Pending normal aio reads:" + " " * 100_000,
    FILE_IO + "Pending normal aio reads:" + " " * 100_000 + ",",
    FILE_IO + "Pending normal aio reads: 0" + " " * 100_000 + "[0, " + " " * 100_000 + ", aio writes:",
    LOG + "Log sequence number" + " " * 100_000 + "1",
    SEMAPHORES + "--Thread 1 has waited at" + " line 1 for" * 20_000 + " 1 seconds the semaphore:",
])
def test_hostile_lines_in_a_trusted_section_are_read_without_backtracking(line, ending):
    status = parsed(line + ending)
    assert status.problems  # and what cannot be read is said
    # A whole line reaches its section's reader (which must not backtrack on it); a cut one is not read.
    assert any("breaks off inside its last line" in p for p in status.problems) is (ending == "")


def test_a_megabyte_of_forged_headers_changes_nothing_and_costs_work_in_proportion():
    real = golden.read_status(SEMAPHORES_57)
    header = "---\nLOG\n---\nLog sequence number 1\n"
    status = parsed(inject(real, "transaction list", header * 40_000))
    assert view(status) == view(parse(SEMAPHORES_57)) and status.problems == []
    # Work in proportion to the forged headers: twice as many run at most about twice the parser's lines.
    base = lines_run(real)
    once, twice = (lines_run(inject(real, "transaction list", header * n)) - base for n in (2_000, 4_000))
    assert 0 < once and twice <= 2.2 * once, (once, twice)


# --- consistency: no field contradicts another -------------------------------------------------

@pytest.mark.parametrize("old,new,dropped", [
    # Last checkpoint at 46186063 beyond Log sequence number 71467515 and the others: only it goes.
    ("Last checkpoint at  46186063", "Last checkpoint at  99999999999", {"last_checkpoint_lsn"}),
    # Log flushed up to beyond Log sequence number: either may be wrong, both go.
    ("Log flushed up to   71462902", "Log flushed up to   71467516", {"flushed_lsn", "lsn"}),
    ("Pages flushed up to 46186063", "Pages flushed up to 71467516", {"pages_flushed_lsn", "lsn"}),
    # An LSN below every other position: only it goes.
    ("Log sequence number 71467515", "Log sequence number 1", {"lsn"}),
])
def test_log_positions_that_contradict_each_other_are_dropped(old, new, dropped):
    real = golden.read_status("mariadb-10.11.19.txt")
    status = innodb_status.parse(real.replace(old, new))
    fields = ("lsn", "flushed_lsn", "pages_flushed_lsn", "last_checkpoint_lsn")
    assert {f for f in fields if getattr(status.log, f) is None} == dropped
    assert len(status.problems) == 1 and status.problems[0].startswith("section LOG: ")
    kept = {f: getattr(status.log, f) for f in fields if f not in dropped}
    assert kept == {f: getattr(parse("mariadb-10.11.19.txt").log, f) for f in kept}


def test_flushed_may_trail_pages_flushed():
    # With no dirty page MariaDB prints the current LSN as "Pages flushed up to", beyond a lagging flush.
    text = "---\nLOG\n---\nLog sequence number 900\nLog flushed up to   800\nPages flushed up to 900\n" \
           "Last checkpoint at  700\n"
    status = innodb_status.parse(text)
    assert (status.log.flushed_lsn, status.log.pages_flushed_lsn) == (800, 900)
    assert not any(p.startswith("section LOG") for p in status.problems)


def test_free_and_data_pages_beyond_the_pool_size_are_dropped():
    # Buffer pool size 8191 / Free buffers 6983 / Database pages 1208
    real = golden.read_status("mysql-8.0-ge30-unknown-minor.txt")
    bp = innodb_status.parse(real.replace("Free buffers       6983", "Free buffers       6984")).buffer_pool
    assert (bp.size, bp.free, bp.database_pages) == (None, None, None)
    assert bp.modified_pages == 0  # "Modified db pages  0" contradicts nothing
    pools = innodb_status.parse(golden.read_status(SEMAPHORES_57).replace(
        "Free buffers       1023", "Free buffers       9023")).buffer_pool_instances
    assert pools[1].size is None and pools[0].size == pools[2].size == 262112


def test_purge_ahead_of_the_transaction_counter_is_dropped():
    # Trx id counter 6175 / Purge done for trx's n:o < 6158
    real = golden.read_status("mysql-9.2.0-probable.txt")
    trx = innodb_status.parse(real.replace("n:o < 6158 undo", "n:o < 6176 undo")).transactions
    assert (trx.trx_id_counter, trx.purge_done_for) == (None, None)
    assert trx.history_list_length == parse("mysql-9.2.0-probable.txt").transactions.history_list_length


def test_a_hit_rate_above_its_denominator_is_dropped():
    real = golden.read_status("mysql-9.2.0-probable.txt")
    assert "Buffer pool hit rate 1000 / 1000," in real
    for rate in ("1001 / 1000", "5 / 0"):
        status = innodb_status.parse(real.replace("Buffer pool hit rate 1000 / 1000", f"Buffer pool hit rate {rate}"))
        assert status.buffer_pool.hit_rate is None and len(status.problems) == 1


# --- a line that stops matching is a problem ----------------------------------------------------

RENAMED = [
    # (fixture, a line every server of its format family prints, its section; the families differ in
    # spacing and in the lines they print)
    ("mariadb-10.11.19.txt", "Log sequence number", "LOG"),  # 5.x and MariaDB: "Log sequence number 71467515"
    ("mariadb-10.11.19.txt", "Last checkpoint at", "LOG"),
    ("mysql-8.0-ge30-unknown-minor.txt", "Log flushed up to", "LOG"),  # 8.0: padded to a column
    ("mysql-8.0-ge30-unknown-minor.txt", "Pages flushed up to", "LOG"),
    ("mysql-8.4-or-9.x-log-capacity.txt", "Log sequence number", "LOG"),  # 8.4/9.x: "Log capacity" lines first
    ("mysql-8.4-or-9.x-log-capacity.txt", "Last checkpoint at", "LOG"),
    ("percona-8.0.32-24.txt", "Max checkpoint age", "LOG"),  # Percona Server
    ("mariadb-10.1.23.txt", "Max checkpoint age", "LOG"),  # XtraDB
    ("mysql-8.0-ge30-unknown-minor.txt", "OS WAIT ARRAY INFO: signal count", "SEMAPHORES"),
    ("mysql-5.7.7.txt", "RW-excl spins", "SEMAPHORES"),
    ("mariadb-11.4.5.txt", "History list length", "TRANSACTIONS"),
    ("mysql-9.2.0-probable.txt", "Trx id counter", "TRANSACTIONS"),
    ("mysql-8.0.30-table.txt", "Pending normal aio reads:", "FILE I/O"),
    ("mariadb-10.11.19.txt", "Pending flushes (fsync)", "FILE I/O"),  # MariaDB 10.8+: one total
    ("percona-8.0.29-table.txt", "OS file reads", "FILE I/O"),
    ("mysql-5.7.7.txt", "Ibuf: size", "INSERT BUFFER AND ADAPTIVE HASH INDEX"),
    ("mysql-5.7.7.txt", "discarded operations:", "INSERT BUFFER AND ADAPTIVE HASH INDEX"),
    ("percona-8.0.29-table.txt", "Database pages", "BUFFER POOL AND MEMORY"),
    ("mariadb-11.4.5.txt", "Pending writes", "BUFFER POOL AND MEMORY"),
    ("mysql-8.4-or-9.x-log-capacity.txt", "queries inside InnoDB", "ROW OPERATIONS"),
    ("mariadb-10.11.19.txt", "read views open inside InnoDB", "ROW OPERATIONS"),
]


@pytest.mark.parametrize("fixture,line,section", RENAMED)
def test_a_renamed_line_counts_a_problem(fixture, line, section):
    real = golden.read_status(fixture)
    assert line in real
    status = innodb_status.parse(real.replace(line, line.replace(" ", "  ", 1) + "_renamed", 1))
    assert status.problems == [f"section {section}: no '{line}' line"]


def test_a_renamed_line_of_one_buffer_pool_instance_counts_a_problem():
    real = golden.read_status(SEMAPHORES_57)
    at = real.index("---BUFFER POOL 2")
    status = innodb_status.parse(real[:at] + real[at:].replace("Free buffers", "Free buffer", 1))
    assert status.problems == ["section INDIVIDUAL BUFFER POOL INFO 2: no 'Free buffers' line"]
    assert status.buffer_pool_instances[2].free is None and status.buffer_pool_instances[1].free == 1023


def test_sections_the_server_prints_only_sometimes_may_be_absent():
    real = golden.read_status(SEMAPHORES_57)
    lines = real.split("\n")
    start = lines.index("INDIVIDUAL BUFFER POOL INFO") - 1
    end = lines.index("ROW OPERATIONS") - 1
    status = innodb_status.parse("\n".join(lines[:start] + lines[end:]))
    assert status.problems == [] and status.buffer_pool_instances == {}


def test_a_section_every_server_prints_is_a_problem_when_absent():
    lines = golden.read_status("mysql-9.2.0-probable.txt").split("\n")
    start = lines.index("LOG") - 1
    end = lines.index("BUFFER POOL AND MEMORY") - 1
    status = innodb_status.parse("\n".join(lines[:start] + lines[end:]))
    assert status.problems == ["no LOG section"] and status.log is None and status.buffer_pool is not None


# --- the server's 1 MiB cut -----------------------------------------------------------------------

LIMIT = 1_048_575  # MAX_STATUS_SIZE - 1 bytes: what SHOW ENGINE INNODB STATUS returns at most


def _grown(text: str) -> tuple[str, int]:
    """The output with its transaction list repeated past 1 MiB, and where the list starts."""
    start = text.index("LIST OF TRANSACTIONS FOR EACH SESSION:\n")
    end = text.index("--------\nFILE I/O")
    entries = text[start + len("LIST OF TRANSACTIONS FOR EACH SESSION:\n"):end]
    return text[:end] + entries * (LIMIT // len(entries) + 1) + text[end:], start


def test_a_list_the_server_cut_in_the_middle_keeps_the_later_sections():
    # ha_innodb.cc innodb_show_status: the front up to the list, "... truncated...", then the last bytes.
    real = golden.read_status(SEMAPHORES_57)
    grown, list_start = _grown(real)
    front = grown[:list_start] + "... truncated...\n"
    cut = front + grown[len(grown) - (LIMIT - len(front)):]
    assert len(cut.encode()) == LIMIT
    status = innodb_status.parse(cut)
    assert status.complete and status.problems == []
    assert view(status) == view(parse(SEMAPHORES_57))


def test_an_output_the_server_cut_at_its_end_shows_no_forged_end():
    # When the front alone passes 1 MiB the server keeps the first bytes; a forged end placed at the cut
    # would end the text like the real one.
    real = golden.read_status(SEMAPHORES_57)
    forged_end = "SELECT SLEEP(8) /*\n" + FORGED["log"] + "\n" + FORGED["end"] + "\n"
    grown, _ = _grown(real)
    cut = grown[:LIMIT - len(forged_end) - 1] + "\n" + forged_end
    assert len(cut.encode()) == LIMIT and cut.endswith("============================\n")
    status = innodb_status.parse(cut)
    assert not status.complete
    assert (status.log, status.buffer_pool, status.row_operations) == (None, None, None)
    assert any("the server cut the end" in p for p in status.problems)
    assert status.transactions.trx_id_counter == 63293117  # the front is intact


# --- garbage --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "", "garbage", "\x00\xff" * 100, "-----\nLOG\n-----\n", "-----\nLOG\n-----\nLog sequence number abc\n",
    "----------\nSEMAPHORES\n----------\n--Thread 1 has waited at x.cc line 1 for 1.0 seconds the semaphore:\n",
    "------------\nTRANSACTIONS\n------------\nTrx id counter zz\n---TRANSACTION 1, ACTIVE 5 sec\n",
    "----------------------------\nEND OF INNODB MONITOR OUTPUT\n", "\r\n" * 50, "\u2028---\nLOG\n---\u2028",
])
def test_garbage_never_raises(text):
    status = innodb_status.parse(text)
    assert isinstance(status, innodb_status.InnodbStatus)
    assert not any(p.startswith("internal parser error") for p in status.problems)


@pytest.mark.parametrize("value", [None, b"---\nLOG\n---\n", 42, ["text"]])
def test_what_is_not_a_string_is_a_problem(value):
    assert innodb_status.parse(value).problems == ["status text is not a string"]


def test_no_header_is_a_problem_not_an_exception():
    status = innodb_status.parse("this is not an InnoDB monitor output")
    assert status.sections_found == 0
    assert status.problems == ["no InnoDB monitor section header found"]


def test_a_semaphore_wait_without_a_latch_is_reported():
    text = "----------\nSEMAPHORES\n----------\n--Thread 7 has waited at a.cc line 3 for 2.00 seconds the semaphore:\n"
    status = innodb_status.parse(text)
    assert [(w.latch, w.seconds) for w in status.semaphores.waits] == [("unknown", 2.0)]
    assert any("names no latch" in p for p in status.problems)


@pytest.mark.parametrize("fixture", [SEMAPHORES_57, "mariadb-10.2.11.txt", "percona-8.0.32-24.txt"])
def test_every_cut_of_a_real_text_parses_without_exception(fixture):
    text = golden.read_status(fixture)
    rng = random.Random(fixture)
    for cut in sorted(rng.sample(range(len(text)), 200)):
        status = innodb_status.parse(text[:cut])
        assert status.complete is False or cut > text.index("END OF INNODB MONITOR OUTPUT")


# --- texts cut inside a line or a section -------------------------------------------------------

def _scalars(obj, path=()):
    """(path, value) of every number the parser vouches for; lists (the waits) and flags left out."""
    if dataclasses.is_dataclass(obj):
        obj = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _scalars(value, (*path, key))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, obj


@pytest.mark.parametrize("fixture", ["mysql-9.7.4-stock.txt", "mysql-8.0.26-semaphores-truncated.txt",
                                     "mariadb-10.2.11.txt"])
@pytest.mark.slow
def test_a_text_cut_inside_a_number_gives_no_part_of_it(fixture):
    # "History list length 15" cut from "... 154" is a number the server never printed.
    text = golden.read_status(fixture)
    whole = dict(_scalars(view(innodb_status.parse(text))))
    cuts = [i for i in range(1, len(text)) if text[i - 1].isdigit() and text[i].isdigit()]
    for cut in cuts:
        status = innodb_status.parse(text[:cut])
        wrong = {path: value for path, value in _scalars(view(status)) if whole.get(path) != value}
        assert not wrong, (cut, text[text.rfind("\n", 0, cut) + 1:cut], wrong)
        if status.sections_found:
            assert any(p.endswith("text breaks off inside its last line, which is not read") for p in status.problems)


def test_a_cut_at_a_line_end_reads_that_line():
    text = golden.read_status("mysql-9.7.4-stock.txt")
    cut = text[:text.index("History list length 154\n") + len("History list length 154\n")]
    status = innodb_status.parse(cut)
    assert status.transactions.history_list_length == 154 and not any("breaks off" in p for p in status.problems)


def _longest_wait(text: str):
    """The metrics' view of one text's semaphore waits: (longest wait, waiting threads per latch)."""
    exposition = offline.render(offline.parse_texts([text])).decode()
    longest = re.search(r"^innodb_semaphore_longest_wait_seconds (\S+)$", exposition, re.M)
    return (float(longest.group(1)) if longest else None,
            re.findall(r"^innodb_semaphore_waiting_threads\{[^}]*\} \S+$", exposition, re.M))


def test_waits_of_a_text_cut_inside_semaphores_are_unknown():
    text = golden.read_status("mysql-5.6.16-semaphores-truncated.txt")
    assert _longest_wait(text)[0] == 251.0  # "--Thread 139611514595072 has waited ... for 251.00 seconds"
    first_wait = text.index("--Thread ")
    second_wait = text.index("--Thread ", first_wait + 1)
    # Cut after the section's first line, and after its first waiting thread: more may wait, and longer.
    for cut in (text.index("\n", text.index("OS WAIT ARRAY INFO")) + 1, second_wait):
        status = innodb_status.parse(text[:cut])
        assert status.semaphores.whole is False
        assert _longest_wait(text[:cut]) == (None, [])
    assert innodb_status.parse(text).semaphores.whole


def test_the_old_layout_reads_transaction_ids_in_hexadecimal():
    # MySQL 5.5 (innotop's t/innodb-status-006): "Trx id counter 38F90", "Purge done for trx's n:o < 38F6C".
    text = read_hostile("mysql-5.5-unknown-minor.txt")
    status = innodb_status.parse(text)
    assert (status.transactions.trx_id_counter, status.transactions.purge_done_for) == (0x38F90, 0x38F6C)
    assert status.problems == []  # 5.5 prints no "Pages flushed up to"
    # A hexadecimal id without letters is hexadecimal too: the layout says so, not the token.
    digits_only = innodb_status.parse(text.replace("n:o < 38F6C undo", "n:o < 38900 undo"))
    assert digits_only.transactions.purge_done_for == 0x38900 and digits_only.problems == []


@pytest.mark.parametrize("fixture", golden.status_fixtures())
def test_every_newer_layout_reads_transaction_ids_in_decimal(fixture):
    text = golden.read_status(fixture)
    printed = re.search(r"^Trx id counter ([0-9A-F]+)$", text, re.M)
    status = innodb_status.parse(text)
    if printed:
        assert status.transactions.trx_id_counter == int(printed.group(1))
    assert not any("'Pages flushed up to'" in p for p in status.problems)


@pytest.mark.parametrize("counter", ["1e308", "86F0", "0x10", "-5"])
def test_a_transaction_id_that_is_no_number_of_the_layout_is_a_problem(counter):
    text = golden.read_status("mysql-9.7.4-stock.txt").replace("Trx id counter 34391\n", f"Trx id counter {counter}\n")
    status = innodb_status.parse(text)
    assert status.transactions.trx_id_counter is None
    assert status.problems == ["section TRANSACTIONS: unreadable 'Trx id counter' line"]


def test_an_aio_list_item_that_is_no_number_is_a_problem():
    # The server separates the items with ", ": "[0, 1,234, 0, 0]" is no list of 5 numbers, nor a total of 235.
    real = golden.read_status("mysql-9.7.4-stock.txt")
    line = "Pending normal aio reads: [0, 0, 0, 0] , aio writes: [0, 0, 0, 0] ,"
    assert line in real
    status = innodb_status.parse(real.replace(line, line.replace("[0, 0, 0, 0]", "[0, 1,234, 0, 0]", 1)))
    assert status.file_io.pending_normal_reads is None
    assert status.problems == ["section FILE I/O: unreadable 'Pending normal aio reads:' line"]


GARBLED = [
    # (fixture, the key of a line read by a full match, its section)
    ("mysql-5.7.7.txt", "Mutex spin waits", "SEMAPHORES"),
    ("mysql-9.7.4-stock.txt", "RW-shared spins", "SEMAPHORES"),
    ("mysql-9.7.4-stock.txt", "RW-excl spins", "SEMAPHORES"),
    ("mysql-9.7.4-stock.txt", "RW-sx spins", "SEMAPHORES"),
    ("mysql-9.7.4-stock.txt", "OS WAIT ARRAY INFO: reservation count", "SEMAPHORES"),
    ("mysql-9.7.4-stock.txt", "OS WAIT ARRAY INFO: signal count", "SEMAPHORES"),
    ("mysql-5.7.7.txt", "Pending flushes (fsync)", "FILE I/O"),
    ("mysql-5.7.7.txt", "OS file reads", "FILE I/O"),
    ("mysql-5.7.7.txt", "Ibuf: size", "INSERT BUFFER AND ADAPTIVE HASH INDEX"),
    ("mysql-5.7.7.txt", "Pending writes", "BUFFER POOL AND MEMORY"),
    ("mysql-5.7.7.txt", "Buffer pool hit rate", "BUFFER POOL AND MEMORY"),
    ("mysql-5.7.7.txt", "queries inside InnoDB", "ROW OPERATIONS"),
    ("mysql-5.7.7.txt", "read views open inside InnoDB", "ROW OPERATIONS"),
]


@pytest.mark.parametrize("fixture,key,section", GARBLED)
@pytest.mark.parametrize("garble", [lambda n: "-" + n, lambda n: "NaN", lambda n: n + "e308"],
                         ids=["negative", "nan", "exponent"])
def test_a_garbled_known_line_is_a_problem(fixture, key, section, garble):
    real = golden.read_status(fixture)
    line = next(x for x in real.split("\n") if key in x)
    number = re.search(r"[0-9]+", line)
    garbled = line[:number.start()] + garble(number.group()) + line[number.end():]
    status = innodb_status.parse(real.replace(line, garbled, 1))
    assert status.problems == [f"section {section}: unreadable '{key}' line"]


def test_a_garbled_buffer_pool_instance_line_ends_the_instance_before_it():
    real = golden.read_status(SEMAPHORES_57)
    status = innodb_status.parse(real.replace("---BUFFER POOL 1\n", "---BUFFER POOL 1x\n", 1))
    assert status.problems == ["section INDIVIDUAL BUFFER POOL INFO: unreadable '---BUFFER POOL' line"]
    whole = parse(SEMAPHORES_57).buffer_pool_instances
    assert status.buffer_pool_instances == {0: whole[0], 2: whole[2]}


@pytest.mark.parametrize("fixture", golden.status_fixtures())
def test_trailing_blanks_and_crlf_change_nothing(fixture):
    text = golden.read_status(fixture)
    status = innodb_status.parse(text)
    for padded in (text.replace("\n", " \t \n"), text.replace("\n", "\r\n")):
        again = innodb_status.parse(padded)
        assert (view(again), again.problems) == (view(status), status.problems)


# --- for a person to read: the oldest transactions, the latest deadlock -------------------------

def test_the_oldest_transactions_of_the_list_with_their_thread():
    # MySQL 5.7.26: 32 ACTIVE entries, the oldest first
    trx = parse("mysql-5.7.26-semaphores.txt").transactions
    ages = sorted((int(m) for m in re.findall(r"\n---TRANSACTION [^\n]*?, ACTIVE (\d+) sec",
                                               golden.read_status("mysql-5.7.26-semaphores.txt"))), reverse=True)
    assert [t.seconds for t in trx.longest] == ages[:innodb_status.LONGEST]
    assert all(t.thread_id is not None and t.trx_id for t in trx.longest)


def test_a_read_only_transaction_of_mariadb_106_is_named_by_its_address():
    text = golden.read_status("mariadb-10.11.19.txt")
    # ---TRANSACTION (0x7fe48c909a80), ACTIVE 0 sec          then: MariaDB thread id 14, ...
    entry = next(t for t in parse("mariadb-10.11.19.txt").transactions.longest if t.trx_id == "(0x7fe48c909a80)")
    assert entry.thread_id == 14 and "---TRANSACTION (0x7fe48c909a80), ACTIVE 0 sec\n" in text


def test_mysql_deadlock_of_two_transactions():
    # MariaDB 10.2 prints MySQL's layout: (1) waits, (2) holds and waits, WE ROLL BACK TRANSACTION (1)
    deadlock = parse("mariadb-10.2.11.txt").deadlock
    assert deadlock.when == "2026-11-21 06:58:47" and deadlock.rolled_back == 1
    first, second = deadlock.transactions
    assert (first.number, first.trx_id, first.seconds, first.state, first.thread_id) == (
        1, "36258", 0, "starting index read", 13)
    assert first.statement == "UPDATE sbtest3 SET k=k+1 WHERE id=10057" and first.holds == []
    assert first.waits_for == ["lock_mode X locks rec but not gap waiting on `sbtest`.`sbtest3` index PRIMARY"]
    assert (second.trx_id, second.thread_id, second.state) == ("36232", 15, "inserting")
    assert second.holds == ["lock_mode X locks rec but not gap on `sbtest`.`sbtest3` index PRIMARY"]
    assert second.waits_for == ["lock mode S waiting on `sbtest`.`sbtest3` index PRIMARY"]


def test_mariadb_106_deadlock_prints_what_each_waits_behind():
    # *** WAITING FOR THIS LOCK TO BE GRANTED: and *** CONFLICTING WITH: belong to the transaction printed last
    deadlock = parse("mariadb-11.4.5.txt").deadlock
    assert [t.trx_id for t in deadlock.transactions] == ["31908", "31912"] and deadlock.rolled_back == 2
    for t in deadlock.transactions:
        assert t.waits_for == ["lock_mode X locks rec but not gap waiting on `sbtest`.`sbtest4` index PRIMARY"]
        assert t.conflicts_with == ["lock_mode X locks rec but not gap on `sbtest`.`sbtest4` index PRIMARY"]


def test_no_deadlock_section_no_deadlock():
    assert parse("mysql-9.7.4-tuned.txt").deadlock is None


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(HOSTILE) if f.startswith(("mariadb", "mysql-9"))))
def test_sections_forged_in_a_deadlocked_statement_change_only_its_first_line(name):
    # Recorded: the deadlocked UPDATEs carry fake FILE I/O, SEMAPHORES, ... and TRANSACTIONS headers in comments.
    text = read_hostile(name)
    clean = innodb_status.parse(re.sub(r"/\*.*?\*/", "", text, flags=re.S)).deadlock
    forged = innodb_status.parse(text).deadlock
    assert clean is not None and len(clean.transactions) == 2
    if forged is None:  # after a foreign key error, a forged TRANSACTIONS header leaves the real one unknown
        assert "\nLATEST FOREIGN KEY ERROR\n" in text and name.endswith("-forged-transactions.txt")
        return
    for t in clean.transactions + forged.transactions:
        t.statement = t.statement.replace(" /*", "")
    assert forged == clean


def test_a_deadlock_forged_in_the_transaction_list_is_not_read():
    forged = inject(golden.read_status("mysql-9.7.4-tuned.txt"), "transaction list",
                    "------------------------\nLATEST DETECTED DEADLOCK\n------------------------\n"
                    "2026-01-01 00:00:00 0x1\n*** (1) TRANSACTION:\nTRANSACTION 666, ACTIVE 999 sec\n"
                    "*** WE ROLL BACK TRANSACTION (1)")
    assert "\nLATEST DETECTED DEADLOCK\n" in forged and innodb_status.parse(forged).deadlock is None


def test_a_second_deadlock_header_after_a_foreign_key_error_hides_the_deadlock():
    # After LATEST FOREIGN KEY ERROR the real deadlock header is the only one before TRANSACTIONS.
    text = read_hostile("mariadb-10.11.19-forged-sections.txt")
    assert innodb_status.parse(text).deadlock is not None
    forged = inject(text, "foreign key error", "------------------------\nLATEST DETECTED DEADLOCK\n"
                                               "------------------------\n*** WE ROLL BACK TRANSACTION (2)")
    assert innodb_status.parse(forged).deadlock is None
