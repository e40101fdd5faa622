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


def test_mysql_8030_points_are_the_ages_it_acts_at_the_raw_ones_plus_its_margin():
    """mysql-9.7.4-tuned (32 MiB): the server's log_max_modified_age_async/_sync are the raw points; it flushes
    when the age plus its free-check margin passes them (log_sync_flush_lsn, limit_for_dirty_page_age)."""
    server, rows = golden.load_capture("mysql-9.7.4-tuned.json")
    counters = {r[0]: r[2] for r in rows["innodb_metrics"]}
    variables = {k.lower(): v for k, v in rows["global_variables"]}
    limits = redo.limits(server.flavor, server.version, redo.Settings.from_variables(variables))
    assert limits.async_age + limits.margin == counters["log_max_modified_age_async"] == 25899520
    assert limits.sync_age + limits.margin == counters["log_max_modified_age_sync"] == 27749376
    assert limits.async_age < limits.sync_age < limits.max_checkpoint_age


def test_at_64_mib_the_raw_sync_point_is_past_the_max_but_the_age_mysql_acts_at_is_below_it():
    """The field check on MySQL 9.7: max 55,638,528 was drawn under the server's sync point 55,672,320."""
    limits = redo.limits("mysql", (9, 7, 4), redo.Settings(redo_log_capacity=64 * MiB))
    assert limits.max_checkpoint_age == 55638528
    assert limits.sync_age + limits.margin == 55672320 > limits.max_checkpoint_age
    assert limits.sync_age < limits.max_checkpoint_age


@pytest.mark.parametrize("version,settings", [
    ((9, 7, 4), {"redo_log_capacity": mib * MiB}) for mib in (8, 32, 64, 100, 1024, 16384)] + [
    ((8, 0, 28), {"log_file_size": mib * MiB, "log_files_in_group": 2}) for mib in (8, 48, 1024)] + [
    ((5, 7, 44), {"log_file_size": mib * MiB, "log_files_in_group": 2}) for mib in (8, 48, 1024)] + [
    ((10, 11, 9), {"log_file_size": mib * MiB}) for mib in (32, 1024)])
@pytest.mark.parametrize("threads", [0, 64])
def test_the_points_come_in_the_order_the_server_acts(version, settings, threads):
    flavor = "mariadb" if version[0] == 10 else "mysql"
    limits = redo.limits(flavor, version, redo.Settings(thread_concurrency=threads, **settings))
    assert 0 < limits.async_age < limits.sync_age <= limits.max_checkpoint_age < limits.capacity
    assert (limits.sync_age == limits.max_checkpoint_age) == (flavor == "mariadb")


def test_a_raw_point_becomes_the_age_of_action_with_the_margin_the_server_reports():
    limits = redo.limits("mysql", (9, 7, 4), redo.Settings(redo_log_capacity=32 * MiB))
    assert redo.point_to_age(27749376, None, "mysql", (9, 7, 4), limits) == limits.sync_age  # computed margin
    assert redo.point_to_age(27749376, 496, "mysql", (9, 7, 4), limits) == 27749376 - redo.sn_to_lsn(496)
    assert redo.point_to_age(27749376, None, "mysql", (9, 7, 4), redo.Limits()) is None  # margin unknown
    assert redo.point_to_age(23153681, None, "mariadb", (11, 8, 9), redo.Limits()) == 23153681  # no margin


def test_redo_fsync_latency_divides_a_time_by_the_count_of_the_same_operations():
    """mysql-9.7.4-tuned: performance_schema timed 12,265 operations on the REDO files (COUNT_MISC) in 17.13 s
    (SUM_TIMER_MISC), 1.397 ms each; the server counted 11,509 fsyncs (Innodb_os_log_fsyncs). The latency the
    rules and panels draw is the time over the count of the same operations, not over the fsync count
    (1.489 ms, 6 % too slow)."""
    from innodb_exporter.metrics import model
    from signals import innodb as s, rule_context, CONFIG

    snapshot, _ = golden.snapshot_from_capture("mysql-9.7.4-tuned.json")
    values = {metric.name: samples[0][1] for metric, samples in model.evaluate(snapshot) if len(samples) == 1}
    assert values["innodb_redo_file_misc_operations_total"] == 12265
    assert values["innodb_redo_file_misc_seconds_total"] == pytest.approx(17.134330943558)
    assert values["innodb_redo_fsyncs_total"] == 11509  # fsyncs alone: counted apart, and not the denominator
    latency = s.REDO_FSYNC_LATENCY.render(rule_context(CONFIG))
    assert latency.startswith('rate(innodb_redo_file_misc_seconds_total{job="innodb"}[5m]) / '
                              'rate(innodb_redo_file_misc_operations_total{job="innodb"}[5m])')
    per_operation = values["innodb_redo_file_misc_seconds_total"] / values["innodb_redo_file_misc_operations_total"]
    assert round(per_operation * 1e6) == 1397  # µs
