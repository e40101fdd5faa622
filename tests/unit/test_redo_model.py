"""The REDO limits computed per flavour agree with what real servers print."""

from __future__ import annotations

import pytest

from innodb_exporter.metrics import redo
from support import golden

MiB = 1024 * 1024


def test_mysql_8030_default_capacity_gives_the_max_age_percona_prints():
    # percona-8.0-ge30-unknown-minor-lockwait.txt: "Max checkpoint age           87417344"
    # with the default innodb_redo_log_capacity of 100 MiB.
    printed = golden.read_status("percona-8.0-ge30-unknown-minor-lockwait.txt")
    assert "Max checkpoint age           87417344" in printed
    limits = redo.limits("percona", (8, 0, 33), redo.Settings(redo_log_capacity=100 * MiB))
    assert limits.max_checkpoint_age == 87417344
    assert limits.capacity == 100 * MiB
    assert limits.async_age < limits.sync_age < limits.capacity


@pytest.mark.parametrize("capture", ["mariadb-10.11.19.json", "mariadb-11.4.5.json"])
def test_mariadb_formula_matches_the_servers_own_numbers(capture):
    server, rows = golden.load_capture(capture)
    status = dict(rows["global_status"])
    variables = dict(rows["global_variables"])
    counters = {r[0]: r[2] for r in rows["innodb_metrics"]}
    limits = redo.limits(server.flavor, server.version, redo.Settings.from_variables(
        {k.lower(): v for k, v in variables.items()}))
    assert limits.max_checkpoint_age == int(status["Innodb_checkpoint_max_age"])
    assert limits.async_age == counters["log_max_modified_age_async"]
    assert limits.sync_age == limits.max_checkpoint_age  # MariaDB 10.5+: the max is where it flushes synchronously


def test_xtradb_prints_the_57_formula_values():
    # mariadb-10.1.23 (XtraDB), 2 x 32 MiB: "Max checkpoint age 53647074", "Checkpoint age target 51970603"
    server, rows = golden.load_capture("mariadb-10.1.23.json")
    variables = {k.lower(): v for k, v in rows["global_variables"]}
    limits = redo.limits(server.flavor, server.version, redo.Settings.from_variables(variables))
    assert limits.max_checkpoint_age == 53647074
    margin = limits.max_checkpoint_age
    assert margin - margin // 32 == 51970603  # XtraDB's "Checkpoint age target" (max_checkpoint_age_async)


def test_mysql_80_before_8030_uses_the_log_files():
    limits = redo.limits("mysql", (8, 0, 28), redo.Settings(log_file_size=48 * MiB, log_files_in_group=2))
    assert limits.capacity == 96 * MiB
    assert limits.async_age < limits.sync_age
    assert limits.max_checkpoint_age < limits.capacity


def test_thread_concurrency_widens_the_margin():
    base = redo.limits("mysql", (5, 7, 44), redo.Settings(log_file_size=48 * MiB, log_files_in_group=2))
    busy = redo.limits("mysql", (5, 7, 44), redo.Settings(log_file_size=48 * MiB, log_files_in_group=2,
                                                         thread_concurrency=64))
    assert busy.max_checkpoint_age < base.max_checkpoint_age


def test_resizing_uses_the_capacity_in_use():
    settings = redo.Settings.from_variables({"innodb_redo_log_capacity": str(100 * MiB)},
                                            {"innodb_redo_log_capacity_resized": str(200 * MiB)})
    assert settings.redo_log_capacity == 200 * MiB


def test_unknown_flavour_or_missing_settings_give_no_limits():
    assert redo.limits("mysql", (5, 6, 0), redo.Settings()).max_checkpoint_age is None
    assert redo.limits("mariadb", (10, 11, 0), redo.Settings()).max_checkpoint_age is None
