"""The exporter against every flavour (MariaDB 10.11 and 11.8, MySQL 9.x), stock and tuned, under sysbench
oltp_read_write load: what it exposes is what the server says at the same moment, what it cannot expose is
what docs/metrics.md says (innodb_exporter.availability) and is named in its own metrics, counters never
go down and no series flaps, promtool is clean."""

from __future__ import annotations

import subprocess
import time

import pytest

from innodb_exporter.metrics import availability, model, redo, settings
from innodb_exporter.metrics.counter_types import TYPES
from innodb_exporter.parsers import innodb_status
from innodb_exporter.scraping import health
from innodb_exporter.scraping.scrape import build_sources
from innodb_exporter.scraping.session import probe_server
from innodb_exporter.sources import NAMES
from support.exporter import Exporter, Samples
from support.servers import EXPORTER_PASSWORD, EXPORTER_USER

pytestmark = pytest.mark.integration


SCRAPES = 20  # a second apart, under sysbench at full speed: enough for a value typed wrong to go down


@pytest.fixture(scope="module")
def live(loaded_flavor_server):
    """(server, exporter, SCRAPES scrapes a second apart) for one flavour and configuration."""
    db = loaded_flavor_server
    with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exporter:
        scrapes = []
        for _ in range(SCRAPES):
            scrapes.append(exporter.scrape()[0])
            time.sleep(1.0)
        yield db, exporter, scrapes


def key(db) -> str:
    return f"{db.flavor}/{db.config}"


def text_lsns(db) -> dict[str, float]:
    """The LSNs of SHOW ENGINE INNODB STATUS, which the server prints as they are when it prints them."""
    log = innodb_status.parse(db.sql("SHOW ENGINE INNODB STATUS")[0][2]).log
    return {"text.lsn": log.lsn, "text.flushed_lsn": log.flushed_lsn,
            "text.last_checkpoint_lsn": log.last_checkpoint_lsn,
            "text.checkpoint_age": log.lsn - log.last_checkpoint_lsn}


def server_state(db) -> dict[str, float]:
    """The server's own numbers: SHOW GLOBAL STATUS and VARIABLES, every INNODB_METRICS counter (those off
    too), and the status text's LSNs."""
    state = {}
    for what in ("STATUS", "VARIABLES"):
        for name, value in db.sql(f"SHOW GLOBAL {what}"):
            try:
                state[name.lower()] = float(value)
            except (TypeError, ValueError):
                pass
    for name, count in db.sql("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS"):
        state[f"metrics.{name}"] = float(count)
    state.update(text_lsns(db))
    return state


# Each headline metric beside the server's own number for it. MariaDB and MySQL name them differently.
SAME_NUMBER = {
    "mariadb": {
        "innodb_redo_lsn_bytes": "innodb_lsn_current",
        "innodb_redo_flushed_lsn_bytes": "innodb_lsn_flushed",
        "innodb_redo_checkpoint_lsn_bytes": "innodb_lsn_last_checkpoint",
        "innodb_checkpoint_age_bytes": "innodb_checkpoint_age",
        "innodb_checkpoint_age_max_bytes": "innodb_checkpoint_max_age",
        "innodb_redo_capacity_bytes": "innodb_log_file_size",
        "innodb_history_list_length": "innodb_history_list_length",
    },
    # MySQL's Innodb_redo_log_*_lsn trail the log (refreshed in the background): the status text does not.
    "mysql": {
        "innodb_redo_lsn_bytes": "text.lsn",
        "innodb_redo_flushed_lsn_bytes": "text.flushed_lsn",
        "innodb_redo_checkpoint_lsn_bytes": "text.last_checkpoint_lsn",
        "innodb_checkpoint_age_bytes": "text.checkpoint_age",
        "innodb_redo_capacity_bytes": "innodb_redo_log_capacity",
        "innodb_history_list_length": "metrics.trx_rseg_history_len",
    },
}
# Cumulative numbers: the exporter's value lies between the server's before and after the scrape.
SAME_COUNTER = {
    "innodb_redo_written_bytes_total": "innodb_os_log_written",
    "innodb_redo_writes_total": "innodb_log_writes",
    "innodb_buffer_pool_pages_flushed_total": "innodb_buffer_pool_pages_flushed",
    "innodb_free_page_waits_total": "innodb_buffer_pool_wait_free",
    "innodb_redo_log_waits_total": "innodb_log_waits",
}


def scrape_between(db, exporter) -> tuple[dict, Samples, dict]:
    before = server_state(db)
    samples, _ = exporter.scrape()
    return before, samples, server_state(db)


def test_every_source_is_read_or_unsupported_as_the_flavour_says(live):
    db, _, scrapes = live
    samples = scrapes[-1]
    assert samples.value("innodb_up") == 1
    up = {dict(labels)["source"]: v for labels, v in samples.series("innodb_exporter_source_up").items()}
    assert set(up) == set(NAMES)
    expected_down = availability.SOURCES_DOWN.get(key(db), set())
    assert {s for s, v in up.items() if v == 0} == expected_down
    [info] = samples.series("innodb_server_info")
    assert dict(info)["flavor"] == db.flavor.split("-")[0]
    assert db.version.startswith(dict(info)["version"]), (db.version, dict(info))


def test_headline_metrics_are_present_or_named_absent_as_documented(live):
    db, _, scrapes = live
    samples = scrapes[-1]
    present = {name for name, _ in samples}
    absent = {dict(labels)["metric"]: dict(labels)["reason"]
              for labels in samples.series(health.METRIC_ABSENT.name)}
    documented = availability.absent(key(db))
    for metric in model.METRICS:
        if not metric.headline or key(db) in availability.DATA_DEPENDENT.get(metric.name, ()):
            continue
        shown = metric.name in present
        if metric.name in documented:
            assert not shown, f"{metric.name} is shown on {key(db)}, but docs/metrics.md says it is not"
            reason = documented[metric.name]
            if isinstance(metric.builder, model.Series):
                assert absent.get(metric.name) == reason, (metric.name, absent.get(metric.name), reason)
        else:
            assert shown, f"{metric.name} is missing on {key(db)} ({absent.get(metric.name)})"


def test_latch_metrics_are_explained_when_instruments_are_off(live):
    db, _, scrapes = live
    samples = scrapes[-1]
    off = samples.series(health.LATCHES_DISABLED.name)
    if "perf_schema_latches" in availability.SOURCES_DOWN.get(key(db), set()):
        assert off == {}  # performance_schema is OFF: source_up says so
    elif db.config == "stock" and db.flavor == "mysql-9":
        assert off and all(v > 0 for v in off.values()), off
    else:
        assert off and all(v == 0 for v in off.values()), off
        assert samples.series("innodb_latch_wait_seconds_total")


def test_values_agree_with_the_server_at_the_same_moment(live):
    db, exporter, _ = live
    family = "mariadb" if db.flavor.startswith("mariadb") else "mysql"
    disagreements = []
    for attempt in range(5):
        before, samples, after = scrape_between(db, exporter)
        failed = []
        for metric, variable in SAME_NUMBER[family].items():
            if variable not in before:
                continue
            low, high = sorted((before[variable], after[variable]))
            slack = 0.02 * samples.value("innodb_checkpoint_age_max_bytes") if "age" in metric else (
                200 if "history" in metric else 0)
            value = samples.value(metric)
            if value is None or not low - slack <= value <= high + slack:
                failed.append(f"{metric}={value} but {variable} went {before[variable]}..{after[variable]}")
        for metric, variable in SAME_COUNTER.items():
            if variable in before and samples.value(metric) is not None:
                if not before[variable] <= samples.value(metric) <= after[variable]:
                    failed.append(f"{metric}={samples.value(metric)} outside {before[variable]}..{after[variable]}")
        pages = {dict(labels)["state"]: v for labels, v in samples.series("innodb_buffer_pool_pages").items()}
        if pages.get("total") != before.get("innodb_buffer_pool_pages_total"):
            failed.append(f"pages total {pages.get('total')} != {before.get('innodb_buffer_pool_pages_total')}")
        if not failed:
            break
        disagreements.append(failed)
    assert len(disagreements) <= 1, disagreements


@pytest.mark.parametrize("flavor_server", [("mysql-9", "tuned")], indirect=True, ids=["mysql-9-tuned"])
def test_mysql_redo_limits_are_where_the_server_acts_and_in_that_order(flavor_server, loaded_flavor_server):
    """MySQL 8.0.30+ prints none of its limits; with the counters on (tuned) it says its raw async and sync
    points and its free-check margin. It acts when an age plus the margin passes a point, and stalls writers
    when checkpoint age passes the soft capacity less the margin: the exporter's limits are those ages, read at
    the same moment as the counters, and come in the order the server acts."""
    db = loaded_flavor_server
    with Exporter(db.address, EXPORTER_USER, EXPORTER_PASSWORD) as exporter:
        for _ in range(5):
            before, samples, after = scrape_between(db, exporter)
            if all(before[f"metrics.{n}"] == after[f"metrics.{n}"] for n in (
                    "log_max_modified_age_async", "log_max_modified_age_sync", "log_concurrency_margin")):
                break  # the margin did not move during the scrape
    state = before
    version = tuple(int(p) for p in db.version.split("-")[0].split("."))
    variables = {k: str(int(v)) for k, v in state.items() if k.startswith("innodb_")}
    limits = redo.limits("mysql", version, redo.Settings.from_variables(variables, variables))
    margin = redo.sn_to_lsn(int(state["metrics.log_concurrency_margin"]))
    assert state["metrics.log_concurrency_margin"] > 0  # on: the tuned server enables what the exporter reads
    # The formula's raw points are the server's own.
    assert limits.async_age + limits.margin == state["metrics.log_max_modified_age_async"]
    assert limits.sync_age + limits.margin == state["metrics.log_max_modified_age_sync"]
    # What the exporter exposes is where the server acts, with the margin the server reported.
    exposed = {name: samples.value(f"innodb_checkpoint_age_{name}_bytes") for name in ("async", "sync", "max")}
    assert exposed["async"] == state["metrics.log_max_modified_age_async"] - margin
    assert exposed["sync"] == state["metrics.log_max_modified_age_sync"] - margin
    assert exposed["max"] == limits.max_checkpoint_age
    assert exposed["async"] < exposed["sync"] < exposed["max"] < samples.value("innodb_redo_capacity_bytes")


def test_the_exporter_s_lsn_never_trails_a_status_text_read_before_it(live):
    """Under sysbench at full speed: MySQL's Innodb_redo_log_current_lsn trailed the status text's 'Log
    sequence number' read just before it, and checkpoint age came out 12,826 bytes short."""
    db, exporter, _ = live
    trailing = []
    for _ in range(SCRAPES):
        text = text_lsns(db)
        samples, _ = exporter.scrape()
        for metric, field in (("innodb_redo_lsn_bytes", "text.lsn"),
                              ("innodb_redo_checkpoint_lsn_bytes", "text.last_checkpoint_lsn")):
            if samples.value(metric) < text[field]:
                trailing.append(f"{metric} {samples.value(metric):.0f} < {field} {text[field]:.0f} read before")
    assert trailing == []


def test_lsns_never_go_back_and_counters_never_decrease(live):
    _, _, scrapes = live
    for name in ("innodb_redo_lsn_bytes", "innodb_redo_flushed_lsn_bytes", "innodb_redo_checkpoint_lsn_bytes"):
        values = [s.value(name) for s in scrapes]
        assert values == sorted(values), f"{name} went backwards: {values}"
    decreased = []
    for name in {n for n, _ in scrapes[0] if n.endswith("_total")}:
        for labels in scrapes[0].series(name):
            values = [s.series(name).get(labels) for s in scrapes]
            values = [v for v in values if v is not None]
            if values != sorted(values):
                decreased.append(f"{name}{dict(labels)}: {values}")
    assert decreased == [], "counters that went down (typed wrong?):\n" + "\n".join(decreased)


def test_no_counter_series_flaps_between_scrapes(live):
    _, _, scrapes = live
    for family in ("innodb_latch_waits_total", "innodb_latch_wait_seconds_total", "innodb_mutex_waits_total"):
        sets = [frozenset(s.series(family)) for s in scrapes]
        assert all(a <= b for a, b in zip(sets, sets[1:])), f"{family}: series came and went"


def test_every_innodb_metrics_counter_is_typed_by_the_table(live):
    db, _, _ = live
    rows = db.sql("SELECT NAME, TYPE FROM information_schema.INNODB_METRICS")
    unknown = sorted(name for name, _ in rows if name not in TYPES)
    assert unknown == [], f"counters of {db.version} missing from counter_types.TYPES: {unknown}"


def test_settings_are_the_servers_values_as_numbers_and_the_start_is_now_minus_uptime(live):
    """Every setting of the list that this server has, and none it lacks, with its number: on stock servers
    too, where nothing is enabled (the settings need no privilege and no instrument)."""
    db, _, scrapes = live
    samples = scrapes[-1]
    server = {name.lower(): value for name, value in db.sql("SHOW GLOBAL VARIABLES")}
    exposed = {dict(labels)["setting"]: v for labels, v in samples.series(settings.SETTING.name).items()}
    assert exposed == {t.name: t.number(server[t.name]) for t in settings.TUNABLES if t.name in server}
    assert len(exposed) >= 20
    assert samples.series(settings.LAST_CHANGE.name) == {}  # nothing changed while it watched
    uptime = float(db.sql("SHOW GLOBAL STATUS LIKE 'Uptime'")[0][1])
    assert abs(time.time() - uptime - samples.value(settings.START_TIME.name)) < 10
    starts = {s.value(settings.START_TIME.name) for s in scrapes}
    assert len(starts) == 1, f"the start time wanders between scrapes: {starts}"


def test_output_passes_promtool_check_metrics(live, promtool):
    _, exporter, _ = live
    status, body = exporter.get("/metrics")
    out = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_landing_page_health_and_probe(live):
    db, exporter, _ = live
    status, body = exporter.get("/")
    assert status == 200 and "/metrics" in body and "/probe" in body
    assert exporter.get("/-/healthy")[0] == 200
    assert exporter.get("/nope")[0] == 404
    status, body = exporter.get(f"/probe?target={db.address}")
    assert status == 200 and "innodb_up 1.0" in body
    assert "process_resident_memory_bytes" not in body  # a probe carries the target's metrics only
    assert exporter.get("/probe")[0] == 400
    assert exporter.get("/probe?target=127.0.0.2:3306")[0] == 403  # not a server the configuration names


class Recording:
    """A real cursor that keeps the statements it ran."""

    def __init__(self, cursor):
        self.cursor, self.ran = cursor, []

    def execute(self, sql, params=None):
        self.ran.append(sql)
        return self.cursor.execute(sql, params)

    def __getattr__(self, name):
        return getattr(self.cursor, name)


def test_counters_and_latches_are_read_packed_into_one_row(live):
    """After a connection's first scrape, INNODB_METRICS and the latch summary come as one packed row each
    (sources.base.read_packed), never falling back to their rows: on MySQL that needs the session's
    group_concat_max_len raised, which the probe does. Where no InnoDB latch instrument is enabled (stock
    MySQL), the summary read with the instruments' states stands and the scrapes ask for none."""
    db, _, _ = live
    enabled = db.sql("SELECT COUNT(*) FROM performance_schema.setup_instruments"
                     " WHERE NAME LIKE 'wait/synch/%/innodb/%' AND ENABLED = 'YES'")[0][0]
    with db.connect_tcp() as conn:
        server = probe_server(conn)
        for source in build_sources(NAMES):
            if source.name not in ("innodb_metrics", "perf_schema_latches") or source.unsupported(server):
                continue
            with conn.cursor() as cursor:
                first = source.fetch(cursor, server)
                recording = Recording(cursor)
                again = source.fetch(recording, server)
            packed = [sql.startswith("SELECT COUNT(*), GROUP_CONCAT(") for sql in recording.ran]
            assert packed == ([] if source.name == "perf_schema_latches" and not enabled else [True]), recording.ran
            assert len(again) == len(first) > 20, (source.name, len(first), len(again))
            if source.name == "innodb_metrics":  # first described row by row, then counted packed
                assert {name: (c.subsystem, c.enabled) for name, c in again.items()} == \
                       {name: (c.subsystem, c.enabled) for name, c in first.items()}
            else:  # the same instruments, none of whose waits went back
                assert [(l.kind, l.name) for l in again] == [(l.kind, l.name) for l in first]
                assert all(b.waits >= a.waits and b.seconds >= a.seconds for a, b in zip(first, again))
