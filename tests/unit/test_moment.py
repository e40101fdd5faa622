"""innodb_exporter.moment: what one status text says about the next bottleneck, on the verbatim fixtures.

Expected values are read off the fixture texts (the lines are quoted). Where no fixture sits just below
or just above a threshold, the case is a fixture with that one line changed, and says so.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from innodb_exporter import moment, offline
from innodb_tuning import THRESHOLDS
from innodb_exporter.parsers import innodb_status
from support.exporter import exporter_command
from support.golden import FIXTURES, read_status

T = THRESHOLDS


def findings(text: str) -> dict[str, moment.Finding]:
    return {f.klass: f for f in moment.assess(offline.parse_text(text).status)}


def verdicts(text: str) -> dict[str, bool | None]:
    return {k: f.holds for k, f in findings(text).items()}


def test_a_busy_mysql_57_is_write_io_bound_and_its_top_latch_is_named():
    # "Pending writes: LRU 0, flush list 47, single page 0"; 20 of the --Thread entries wait for BUF_POOL.
    found = findings(read_status("mysql-5.7.26-semaphores.txt"))
    assert {k: f.holds for k, f in found.items()} == \
        {"write_io": True, "read_io": False, "latch": True, "transactions": False, "purge": False}
    assert "flush list 47" in found["write_io"].evidence
    assert "BUF_POOL 20" in found["latch"].evidence and "the top one here: BUF_POOL" in found["latch"].evidence


def test_mariadb_106_and_later_cannot_show_latch_waits_in_a_text():
    # MariaDB 10.11 prints no sync array: no "OS WAIT ARRAY INFO" line, no "--Thread" entries.
    found = findings(read_status("mariadb-10.11.19.txt"))
    assert found["latch"].holds is None and "no sync array" in found["latch"].evidence
    assert [found[k].holds for k in ("write_io", "read_io", "transactions", "purge")] == [False] * 4


def test_row_lock_waits_make_transaction_bound():
    # Percona 8.0: 3 ACTIVE transactions, 2 of them in LOCK WAIT (2/3 >= 25%).
    found = findings(read_status("percona-8.0-ge30-unknown-minor-lockwait.txt"))
    assert found["transactions"].holds is True and "2 of 3 active" in found["transactions"].evidence


def test_a_text_cut_before_the_buffer_pool_cannot_tell_io_but_still_shows_latches():
    found = findings(read_status("mysql-5.6.16-semaphores-truncated.txt"))
    assert found["read_io"].holds is None and found["write_io"].holds is None
    assert found["latch"].holds is True and "the top one here: dict0dict.cc:2420" in found["latch"].evidence
    assert found["transactions"].holds is False  # "ACTIVE 300 sec" at most: under 600


def test_a_text_cut_inside_semaphores_cannot_say_no_latch_waits():
    # Cut after "OS WAIT ARRAY INFO: reservation count 815823", before the 28 "--Thread" entries.
    text = read_status("mysql-5.7.26-semaphores.txt")
    cut = text[:text.index("--Thread")]
    found = findings(cut)
    assert found["latch"].holds is None and "breaks off in SEMAPHORES" in found["latch"].evidence
    # Cut after the first entry: one thread waits, which the threshold counts whatever the cut hides.
    one = text[:text.index("--Thread", text.index("--Thread") + 1)]
    assert T.latch_waiting_threads <= 1 and findings(one)["latch"].holds is True


@pytest.mark.parametrize("line, changed, holds", [
    ("Pending reads      0", f"Pending reads      {T.pending_io}", False),
    ("Pending reads      0", f"Pending reads      {T.pending_io + 1}", True),
    ("Pending writes: LRU 0, flush list 47, single page 0",
     f"Pending writes: LRU 0, flush list {T.pending_io}, single page 0", False),
    ("Pending writes: LRU 0, flush list 47, single page 0",
     f"Pending writes: LRU {T.pending_io + 1}, flush list 0, single page 0", True),
])
def test_pending_io_just_below_and_just_above_the_threshold(line, changed, holds):
    # The first occurrence is the BUFFER POOL AND MEMORY section's (the instances' follow it).
    text = read_status("mysql-5.7.26-semaphores.txt").replace(line, changed, 1)
    key = "read_io" if "reads" in line else "write_io"
    assert verdicts(text)[key] is holds


@pytest.mark.parametrize("seconds, holds", [(T.long_transaction_seconds, False), (T.long_transaction_seconds + 1, True)])
def test_a_long_transaction_just_below_and_just_above(seconds, holds):
    text = read_status("mysql-5.6.16-semaphores-truncated.txt").replace("ACTIVE 300 sec", f"ACTIVE {seconds} sec")
    assert verdicts(text)["transactions"] is holds


@pytest.mark.parametrize("length, holds", [(T.history, False), (T.history + 1, None)])
def test_a_long_history_is_not_decided_by_one_text(length, holds):
    text = read_status("mysql-5.7.26-semaphores.txt").replace("History list length 201", f"History list length {length}")
    found = findings(text)["purge"]
    assert found.holds is holds and str(length) in found.evidence


def test_a_sync_array_without_waits_is_clear_and_no_semaphores_cannot_tell():
    # MySQL 9.7 prints "OS WAIT ARRAY INFO: reservation count 988" and no --Thread entry.
    assert verdicts(read_status("mysql-9.7.4-stock.txt"))["latch"] is False
    assert moment.assess(innodb_status.InnodbStatus())[2].holds is None


def test_a_text_speaks_to_every_class_of_the_rules_but_those_it_says_it_cannot():
    from signals import bottleneck

    said = [finding.klass for finding in moment.assess(innodb_status.InnodbStatus())]
    rules = [c.key for c in bottleneck.CLASSES]
    assert said == [key for key in rules if key not in moment.NOT_FROM_ONE_TEXT]  # in the rules' order


def test_parse_prints_the_moment_on_standard_error_and_keeps_standard_output_exposition(tmp_path, promtool):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(FIXTURES), "..", "exporters"))
    out = subprocess.run([*exporter_command(), "parse", os.path.join(FIXTURES, "innodb_status",
                                                                      "mysql-5.7.26-semaphores.txt")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "One moment" in out.stderr and "One moment" not in out.stdout
    rows = dict(re.findall(r"^  (\S.*?)\s{2,}(yes|no|cannot tell)\s{2,}", out.stderr, re.M))
    assert rows == {"IO bound on writes": "yes", "IO bound on reads": "no", "Latch contention": "yes",
                    "Transaction bound": "no", "Purge bound": "no"}
    metrics = tmp_path / "metrics.prom"
    metrics.write_text(out.stdout)
    check = subprocess.run([promtool, "check", "metrics"], stdin=metrics.open(), capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
