"""The SHOW ENGINE INNODB STATUS parser on verbatim outputs of many server versions, and on bad input.

Expected values are read off the fixture texts by eye (the lines are quoted in the comments).
"""

from __future__ import annotations

import random

import pytest

from innodb_exporter.parsers import innodb_status
from support import golden


def parse(name):
    return innodb_status.parse(golden.read_status(name))


@pytest.mark.parametrize("fixture", golden.status_fixtures())
def test_every_fixture_parses_its_core_sections(fixture):
    status = parse(fixture)
    assert status.log is not None or "8.0.26" in fixture or "5.6.16" in fixture
    assert status.buffer_pool is not None or "5.6.16" in fixture  # truncated before BUFFER POOL
    assert status.semaphores is not None
    truncated = "truncated" in fixture
    assert status.complete is not truncated
    assert bool(status.problems) is truncated


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
    assert (trx.listed, trx.active) == (34, 32)
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


def test_mysql_56_long_semaphore_waits_and_pending_aio_totals():
    status = parse("mysql-5.6.16-semaphores-truncated.txt")
    assert len(status.semaphores.waits) == 11
    assert {w.latch for w in status.semaphores.waits} == {"sync0sync.cc:1472", "dict0dict.cc:2420", "buf0buf.cc:996"}
    assert status.semaphores.spin["mutex"].spins == 5723675  # "Mutex spin waits 5723675, rounds 5019676, OS waits 27829"
    assert status.transactions.oldest_active_seconds == 300
    assert status.file_io.pending_normal_reads == 100  # "Pending normal aio reads: 100 [...]"
    assert status.log is None  # the text stops after the INSERT BUFFER header


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
    log = parse("mariadb-10.1.23.txt").log  # XtraDB: all four lines
    assert (log.max_checkpoint_age, log.checkpoint_age_target, log.modified_age, log.checkpoint_age) == (
        53647074, 51970603, 41218881, 50584681)


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
    assert status.row_operations.queries_inside is None  # not printed since 10.6
    assert status.insert_buffer is None
    assert status.transactions.history_list_length == 90


def test_lock_waits_are_counted():
    trx = parse("percona-8.0-ge30-unknown-minor-lockwait.txt").transactions
    assert trx.lock_waits == 2
    assert trx.oldest_active_seconds == 69


@pytest.mark.parametrize("text", [
    "", "garbage", "\x00\xff" * 100, "-----\nLOG\n-----\n", "-----\nLOG\n-----\nLog sequence number abc\n",
    "----------\nSEMAPHORES\n----------\n--Thread 1 has waited at x.cc line 1 for 1.0 seconds the semaphore:\n",
    "------------\nTRANSACTIONS\n------------\nTrx id counter zz\n---TRANSACTION 1, ACTIVE 5 sec\n",
])
def test_garbage_never_raises(text):
    status = innodb_status.parse(text)
    assert isinstance(status, innodb_status.InnodbStatus)


def test_no_header_is_a_problem_not_an_exception():
    status = innodb_status.parse("this is not an InnoDB monitor output")
    assert status.sections_found == 0
    assert status.problems == ["no InnoDB monitor section header found"]


def test_a_semaphore_wait_without_a_latch_is_reported():
    text = "----------\nSEMAPHORES\n----------\n--Thread 7 has waited at a.cc line 3 for 2.00 seconds the semaphore:\n"
    status = innodb_status.parse(text)
    assert [(w.latch, w.seconds) for w in status.semaphores.waits] == [("unknown", 2.0)]
    assert any("names no latch" in p for p in status.problems)


@pytest.mark.parametrize("fixture", ["mysql-5.7.26-semaphores.txt", "mariadb-10.2.11.txt", "percona-8.0.32-24.txt"])
def test_every_cut_of_a_real_text_parses_without_exception(fixture):
    text = golden.read_status(fixture)
    rng = random.Random(fixture)
    for cut in sorted(rng.sample(range(len(text)), 200)):
        status = innodb_status.parse(text[:cut])
        assert status.complete is False or cut > text.index("END OF INNODB MONITOR OUTPUT")


def test_two_part_lsn_of_mysql_50():
    text = "---\nLOG\n---\nLog sequence number 84 3000620880\nLast checkpoint at  84 3000000000\n"
    log = innodb_status.parse(text).log
    assert log.lsn == (84 << 32) + 3000620880
    assert log.lsn - log.last_checkpoint_lsn == 620880
