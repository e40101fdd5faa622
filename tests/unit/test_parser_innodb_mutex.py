"""SHOW ENGINE INNODB MUTEX rows, recorded from MySQL 5.7 and 8.0, aggregated per latch."""

from __future__ import annotations

import os

import pytest

from innodb_exporter.parsers import innodb_mutex
from support.golden import FIXTURES
from support.tables import read_table


def rows(name):
    with open(os.path.join(FIXTURES, "innodb_mutex", name), encoding="utf-8") as f:
        header, data = read_table(f.read())
    assert header == ["Type", "Name", "Status"]
    return data


def test_mysql_57_rows_are_summed_per_name():
    reading = innodb_mutex.parse(rows("mysql-5.7.26.txt"))
    waits = {m.name: m.waits for m in reading.latches}
    assert reading.problems == []
    # 34 rows "rwlock: dict0dict.cc:2737" summing to 25453; one "sum rwlock: buf0buf.cc:1460 | waits=93844"
    assert waits["rwlock: dict0dict.cc:2737"] == 25453
    assert waits["sum rwlock: buf0buf.cc:1460"] == 93844
    assert waits["rwlock: hash0hash.cc:353"] == 2241
    assert len(waits) == 6  # 86 rows, 6 distinct names


def test_mysql_80_rows():
    waits = {m.name: m.waits for m in innodb_mutex.parse(rows("mysql-8.0.26.txt")).latches}
    assert waits["rwlock: fil0fil.cc:3333"] == 5845
    assert waits["sum rwlock: buf0buf.cc:788"] == 1018


def test_56_os_waits_and_latch_monitoring_counts():
    reading = innodb_mutex.parse([
        ("InnoDB", "&buf_pool->mutex", "os_waits=3"),
        ("InnoDB", "&buf_pool->mutex", "os_waits=4"),
        ("InnoDB", "LOG_SYS", "spins=0,waits=4,calls=103"),
    ])
    stats = {m.name: m for m in reading.latches}
    assert stats["&buf_pool->mutex"].waits == 7
    assert stats["LOG_SYS"].waits == 4
    assert stats["LOG_SYS"].counts["calls"] == 103


def test_bad_rows_are_problems_not_exceptions():
    reading = innodb_mutex.parse([("InnoDB",), ("InnoDB", "", "waits=1"), ("InnoDB", "x", "garbage")])
    assert reading.latches == []
    assert len(reading.problems) == 3


@pytest.mark.parametrize("status", [
    "waits=1e308", "waits=\u0661\u0662", "waits=12abc", "waits=1,234", "waits=" + "9" * 5000,
    "waits=18446744073709551616", "spins=0,waits=-4,calls=103", "wäits=3",
])
def test_a_status_that_is_not_all_key_number_pairs_is_a_problem_not_a_part(status):
    reading = innodb_mutex.parse([("InnoDB", "LOG_SYS", status)])
    assert reading.latches == [] and len(reading.problems) == 1


def test_counts_are_read_to_the_largest_the_server_prints():
    reading = innodb_mutex.parse([("InnoDB", "LOG_SYS", "spins=0, waits=18446744073709551615")])
    assert reading.latches[0].waits == 2**64 - 1 and reading.problems == []
