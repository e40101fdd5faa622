"""The settings a tuner changes: their values as numbers on every recorded server, and their changes as events
(a SET GLOBAL, a restart with another configuration, the exporter's own first reading), without servers."""

from __future__ import annotations

import subprocess

import pytest

from innodb_exporter.metrics import settings
from innodb_exporter.metrics.settings import History, Tunable
from innodb_exporter.scraping import exposition
from innodb_exporter.scraping.scrape import ScrapeResult
from support import golden
from support.exporter import parse_samples

NOW = 1_800_000_000.0


def test_the_list_holds_what_the_issue_asks_for_with_a_reason_each():
    wanted = {"innodb_io_capacity", "innodb_io_capacity_max", "innodb_flush_log_at_trx_commit", "sync_binlog",
              "innodb_log_file_size", "innodb_redo_log_capacity", "innodb_buffer_pool_size",
              "innodb_buffer_pool_instances", "innodb_max_dirty_pages_pct", "innodb_max_dirty_pages_pct_lwm",
              "innodb_adaptive_flushing", "innodb_adaptive_flushing_lwm", "innodb_flush_neighbors",
              "innodb_lru_scan_depth", "innodb_purge_threads", "innodb_max_purge_lag", "innodb_max_purge_lag_delay",
              "innodb_thread_concurrency", "innodb_spin_wait_delay", "innodb_flush_method", "innodb_doublewrite",
              "innodb_change_buffering", "innodb_read_io_threads", "innodb_write_io_threads",
              "innodb_adaptive_hash_index"}
    assert wanted <= set(settings.NAMES)
    assert len(settings.NAMES) == len(set(settings.NAMES))
    assert all(len(t.reason) > 20 for t in settings.TUNABLES)


@pytest.mark.parametrize("name", golden.server_captures())
def test_every_listed_setting_a_recorded_server_has_is_a_number(name):
    """Each flavour's verbatim SHOW GLOBAL VARIABLES rows: every value of the list has its number, so that
    no server's setting is left without a series (its enumerations are all declared)."""
    snapshot, _ = golden.snapshot_from_capture(name)
    have = {t.name for t in settings.TUNABLES if t.name in snapshot.variables}
    numbered = {labels[0] for labels, _ in settings.values(snapshot.variables)}
    assert len(have) >= 20 and numbered == have


def test_numbers_enumerations_and_switches():
    by_name = settings.BY_NAME
    assert by_name["innodb_max_dirty_pages_pct"].number("90.000000") == 90.0
    assert by_name["innodb_adaptive_hash_index"].number("ON") == 1.0
    assert by_name["innodb_adaptive_flushing"].number("OFF") == 0.0
    assert by_name["innodb_flush_method"].number("O_DIRECT") == 4.0
    assert by_name["innodb_flush_method"].number("o_direct") == 4.0  # as the server takes it
    assert by_name["innodb_flush_method"].number("") == 0.0  # MariaDB 10.1's fsync
    assert by_name["innodb_change_buffering"].number("all") == 5.0
    assert by_name["innodb_doublewrite"].number("DETECT_ONLY") == 3.0
    # What no declaration knows has no number: never a series per value.
    assert by_name["innodb_flush_method"].number("O_SOMETHING_NEW") is None
    assert Tunable("x", "a number").number("nan") is None
    assert Tunable("x", "a number").number("inf") is None
    assert Tunable("x", "a number").number("abc") is None


def test_labels_show_a_number_in_its_shortest_exact_form_and_bound_any_text():
    assert settings.label_text("90.000000") == "90"
    assert settings.label_text("0.001000") == "0.001"
    assert settings.label_text("134217728") == "134217728"
    assert settings.label_text("O_DIRECT") == "O_DIRECT"
    assert settings.label_text("") == ""
    hostile = "x\n" * 200
    text = settings.label_text(hostile)
    assert len(text) == settings.LABEL_MAX and "\n" not in text


def variables(**changed) -> dict[str, str]:
    base = {"innodb_flush_log_at_trx_commit": "1", "innodb_buffer_pool_size": "134217728",
            "innodb_io_capacity": "200", "innodb_flush_method": "O_DIRECT", "innodb_version": "10.11.19"}
    return {**base, **changed}


def test_the_first_reading_is_the_baseline_and_the_same_reading_again_is_no_change():
    history = History()
    assert history.observe(variables(), "100", NOW) == []
    assert history.observe(variables(), "105", NOW + 5) == []
    assert history.seen().changes == () and history.seen().started_at == NOW - 100


def test_a_set_global_is_a_change_stamped_when_it_was_read():
    history = History()
    history.observe(variables(), "100", NOW)
    [change] = history.observe(variables(innodb_flush_log_at_trx_commit="2"), "160", NOW + 60)
    assert change == settings.Change("innodb_flush_log_at_trx_commit", "1", "2", NOW + 60, False)
    assert history.observe(variables(innodb_flush_log_at_trx_commit="2"), "165", NOW + 65) == []
    # A second change of the same setting replaces the first: one series per setting.
    history.observe(variables(innodb_flush_log_at_trx_commit="1"), "220", NOW + 120)
    [latest] = history.seen().changes
    assert (latest.before, latest.after, latest.at) == ("2", "1", NOW + 120)


def test_a_setting_outside_the_list_is_not_watched():
    history = History()
    history.observe(variables(), "100", NOW)
    assert history.observe(variables(innodb_version="10.11.20"), "160", NOW + 60) == []


def test_a_restart_with_another_configuration_is_a_change_stamped_with_the_servers_start():
    history = History()
    history.observe(variables(), "1000", NOW)
    # The server went away and came back 20 s ago (a fresh connection reads both again).
    changes = history.observe(variables(innodb_buffer_pool_size="268435456"), "20", NOW + 300.4)
    # In whole seconds, as Uptime counts: the mark and the start time gauge are the same number.
    assert changes == [settings.Change("innodb_buffer_pool_size", "134217728", "268435456", NOW + 280, True)]
    assert history.seen().started_at == NOW + 280


def test_a_restart_seen_while_the_settings_could_not_be_read_marks_the_next_reading():
    history = History()
    history.observe(variables(), "1000", NOW)
    assert history.observe(None, "20", NOW + 300) == []
    [change] = history.observe(variables(innodb_io_capacity="400"), "25", NOW + 305)
    assert change.restart and change.at == NOW + 280


def test_uptime_read_a_second_apart_is_no_restart_and_a_set_global_after_a_restart_is_not_one():
    history = History()
    history.observe(variables(), "1000", NOW)
    history.observe(variables(), "1061", NOW + 60.4)  # the estimate wanders by whole seconds
    history.observe(variables(), "30", NOW + 2000)  # restarted, the same settings
    [change] = history.observe(variables(innodb_io_capacity="400"), "90", NOW + 2060)
    assert not change.restart and change.at == NOW + 2060


def test_a_start_time_that_cannot_be_read_leaves_the_last():
    history = History()
    history.observe(variables(), "1000", NOW)
    for garbled in (None, "", "-5", "nan", "soon"):
        history.observe(variables(), garbled, NOW + 10)
    assert history.seen().started_at == NOW - 1000


def exposition_of(result: ScrapeResult) -> str:
    return exposition.render(exposition.families(result))[0].decode()


def test_the_exposition_holds_the_values_the_changes_and_the_start(promtool):
    snapshot, results = golden.snapshot_from_capture("mariadb-10.11.19.json")
    history = History()
    history.observe(snapshot.variables, "3600", NOW)
    snapshot.variables = {**snapshot.variables, "innodb_flush_log_at_trx_commit": "2",
                          "innodb_flush_method": "fsync"}
    history.observe(snapshot.variables, "3660", NOW + 60)
    text = exposition_of(ScrapeResult(True, snapshot.server, results, snapshot, settings=history.seen()))
    samples = parse_samples(text)
    assert samples.value("innodb_setting", setting="innodb_flush_log_at_trx_commit") == 2.0
    assert samples.value("innodb_setting", setting="innodb_flush_method") == 0.0
    assert samples.series("innodb_setting_last_change_timestamp_seconds") == {
        frozenset({"setting": "innodb_flush_log_at_trx_commit", "from": "1", "to": "2", "restart": "0"}.items()):
            NOW + 60,
        frozenset({"setting": "innodb_flush_method", "from": "O_DIRECT", "to": "fsync", "restart": "0"}.items()):
            NOW + 60}
    assert samples.value("innodb_server_start_time_seconds") == NOW - 3600
    out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
