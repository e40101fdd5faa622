"""The source contract: every source keeps its value in a Snapshot field of its own, and the sources that
read part of their answer once per connection read it again on a new connection."""

from __future__ import annotations

import dataclasses
import re

import pytest

from innodb_exporter import sources
from innodb_exporter.metrics.snapshot import Snapshot
from innodb_exporter.sources import GlobalVariables, InnodbMetrics, PerfSchemaLatches, PerfSchemaRedoFile, base
from innodb_exporter.sources.server import ServerInfo


def test_every_source_has_a_field_of_its_own_in_the_snapshot():
    fields = {f.name for f in dataclasses.fields(Snapshot)}
    assert all(source.field in fields for source in sources.CATALOGUE)
    assert len({source.field for source in sources.CATALOGUE}) == len(sources.CATALOGUE)
    assert len({source.name for source in sources.CATALOGUE}) == len(sources.CATALOGUE)


# sources.base.packed_query's statement: the columns, and the rest of the SELECT they come from.
PACKED = re.compile(r"SELECT COUNT\(\*\), GROUP_CONCAT\((.+) ORDER BY \S+ SEPARATOR ','\),"
                    r" @@SESSION.group_concat_max_len (FROM .*)", re.S)


class Cursor:
    """Answers each statement from a table of (start of the SQL -> rows), and keeps what it ran. A packed
    read is answered as a server answers it: the rows of the same columns packed into one text, those with
    a NULL left out, cut at ``group_concat_max_len`` bytes."""

    def __init__(self, answers, group_concat_max_len: int = 1_048_576):
        self.answers, self.ran, self._rows = answers, [], []
        self.group_concat_max_len = group_concat_max_len

    def execute(self, sql, params=None):
        self.ran.append(sql)
        self._rows = self._answer(sql)
        if self._rows is None and (packed := PACKED.fullmatch(sql)):
            columns = packed.group(1).split(", ' ', ")
            rows = self._answer(f"SELECT {', '.join(columns)} {packed.group(2)}")
            entries = [" ".join(str(v) for v in row) for row in sorted(rows, key=lambda row: str(row[0]))
                       if None not in row]
            text = ",".join(entries)[:self.group_concat_max_len] if entries else None
            self._rows = [(len(rows), text, self.group_concat_max_len)]
        assert self._rows is not None, f"no answer for {sql}"

    def _answer(self, sql):
        return next((rows for start, rows in self.answers.items() if sql.startswith(start)), None)

    def fetchall(self):
        return tuple(self._rows)  # as PyMySQL's cursor answers


def server() -> ServerInfo:
    return ServerInfo("mysql", (9, 7, 4), True, "STATUS")


def test_counter_descriptions_are_read_once_per_connection():
    source = InnodbMetrics(("log_writes",))
    cursor = Cursor({"SELECT NAME, SUBSYSTEM": [("log_writes", "log", 5, "status_counter", "Writes.", 1)],
                     "SELECT NAME, COUNT": [("log_writes", 7, 1)]})
    first = server()
    assert source.fetch(cursor, first)["log_writes"].count == 5
    second = source.fetch(cursor, first)["log_writes"]
    assert (second.count, second.comment, second.subsystem, second.enabled) == (7, "Writes.", "log", True)
    source.fetch(cursor, server())  # a new connection: described again
    assert [described(sql) for sql in cursor.ran] == ["described", "packed counts", "described"]


def described(sql: str) -> str:
    if "SUBSYSTEM" in sql:
        return "described"
    return "packed counts" if PACKED.fullmatch(sql) else "counts" if sql.startswith("SELECT NAME, COUNT") else sql


def test_a_counter_enabled_since_the_last_description_is_described():
    source = InnodbMetrics()
    cursor = Cursor({"SELECT NAME, SUBSYSTEM": [("log_writes", "log", 5, "status_counter", "Writes.", 1)],
                     "SELECT NAME, COUNT": [("log_writes", 7, 1), ("log_waits", 1, 1)]})
    connection = server()
    source.fetch(cursor, connection)
    source.fetch(cursor, connection)
    assert [described(sql) for sql in cursor.ran] == ["described", "packed counts", "described"]


@pytest.mark.parametrize("limit, waits, count", [
    (22, "log_waits", 1),  # cut inside the last entry: "log_waits 1 1,log_writ"
    (27, "log_waits", 1),  # cut before its last field, three fields still: "log_waits 1 1,log_writes 7 "
    (1_048_576, "log waits", 1),  # a value holding a separator
    (1_048_576, "log_waits", None)])  # a NULL, which GROUP_CONCAT leaves out
def test_counts_that_do_not_unpack_are_read_as_rows_on_that_connection_from_then_on(limit, waits, count):
    source = InnodbMetrics()
    rows = [("log_writes", "log", 7, "status_counter", "Writes.", 1), (waits, "log", count, "counter", "", 1)]
    cursor = Cursor({"SELECT NAME, SUBSYSTEM": rows, "SELECT NAME, COUNT": [(r[0], r[2], r[5]) for r in rows]}, limit)
    connection = server()
    source.fetch(cursor, connection)
    source.fetch(cursor, connection)
    source.fetch(cursor, connection)
    assert [described(sql) for sql in cursor.ran] == ["described", "packed counts", "counts", "counts"]
    assert cursor.ran[-1].endswith(" ORDER BY NAME")
    again = server()  # a new connection tries packing again
    source.fetch(cursor, again)
    source.fetch(cursor, again)
    assert [described(sql) for sql in cursor.ran[4:]] == ["described", "packed counts", "counts"]


def test_packed_counts_read_as_the_rows_do():
    rows = [("log_writes", "log", 7, "status_counter", "Writes.", 1), ("buffer_pool_size", "server", -3, "value", "", 0)]
    cursor = Cursor({"SELECT NAME, SUBSYSTEM": rows, "SELECT NAME, COUNT": [(r[0], r[2], r[5]) for r in rows]})
    source, connection = InnodbMetrics(("buffer_pool_size",)), server()
    assert source.fetch(cursor, connection) == source.fetch(cursor, connection) == source.from_rows(rows)
    assert [described(sql) for sql in cursor.ran] == ["described", "packed counts"]


@pytest.mark.parametrize("enabled", ["YES", "NO"])
def test_latch_states_are_read_on_a_new_connection_and_joined_to_every_summary(enabled):
    source = PerfSchemaLatches()
    # The server answers a row it was not asked for: left out, on the scrape that reads the states and on
    # those between alike, so that no series comes and goes.
    cursor = Cursor({"SELECT NAME, ENABLED": [("wait/synch/mutex/innodb/log_mutex", enabled, "NO")],
                             "SELECT EVENT_NAME": [("wait/synch/mutex/innodb/log_mutex", 3, 0),
                                                   ("wait/synch/rwlock/innodb/new_one", 1, 5)]})
    connection = server()
    first = source.fetch(cursor, connection)
    latches = source.fetch(cursor, connection)
    assert [(l.name, l.enabled, l.timed) for l in latches] == [(l.name, l.enabled, l.timed) for l in first] == [
        ("log_mutex", enabled == "YES", False)]
    assert sum(sql.startswith("SELECT NAME, ENABLED") for sql in cursor.ran) == 1


# The latch summary of some instruments, as sources.perf_schema_latches asks for it: by name, at most one
# row each, in a derived table (a packed read asks for its columns from the same).
SUMMARY_OF = re.compile(r"SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM \(SELECT EVENT_NAME, COUNT_STAR,"
                        r" SUM_TIMER_WAIT FROM performance_schema\.events_waits_summary_global_by_event_name"
                        r" WHERE EVENT_NAME IN \(((?:'[^']+'(?:, )?)+)\) LIMIT (\d+)\) AS summary(?: ORDER BY EVENT_NAME)?")


def test_the_latch_summary_asks_for_the_instruments_by_name_with_one_statement_per_read(monkeypatch):
    """By name, so that a performance_schema with an index on EVENT_NAME (MySQL 8.0+) builds only their rows,
    and with a LIMIT of as many rows, so that one without (MariaDB) stops building rows at the last of them;
    the statement is built when the instruments are read (a connection's first scrape, then once a minute)."""
    now = [1000.0]
    monkeypatch.setattr(base.time, "monotonic", lambda: now[0])
    source = PerfSchemaLatches()
    names = ["wait/synch/mutex/innodb/log_mutex", "wait/synch/sxlock/innodb/index_tree_rw_lock"]
    cursor = Cursor({"SELECT NAME, ENABLED": [(name, "YES", "YES") for name in names], "SELECT EVENT_NAME": []})
    connection = server()
    source.fetch(cursor, connection)
    assert cursor.ran[1].endswith(f" WHERE EVENT_NAME IN ('{names[0]}', '{names[1]}') LIMIT 2) AS summary")
    assert "LIKE" not in cursor.ran[1]
    source.fetch(cursor, connection)
    assert cursor.ran[2] == cursor.ran[1]
    now[0] += 61
    cursor.answers["SELECT NAME, ENABLED"] = [(names[0], "YES", "YES")]  # an instrument gone from the list
    source.fetch(cursor, connection)
    assert cursor.ran[3].startswith("SELECT NAME, ENABLED")
    assert cursor.ran[4].endswith(f" IN ('{names[0]}') LIMIT 1) AS summary")


class SummaryCursor(Cursor):
    """Answers the latch summary with the rows of the instruments it names, from ``summary``, as now."""

    def __init__(self, states, summary):
        super().__init__({"SELECT NAME, ENABLED": states})
        self.summary = summary

    def _answer(self, sql):
        if asked := SUMMARY_OF.fullmatch(sql):  # packed reads come here too
            names = re.findall(r"'([^']+)'", asked.group(1))
            assert int(asked.group(2)) == len(names)
            return [(name, *self.summary[name]) for name in sorted(names) if name in self.summary]
        return super()._answer(sql)


def summaries(cursor) -> list[str]:
    """The instruments each summary the cursor read asked for, by their last part (a packed read each)."""
    return [",".join(re.findall(r"/innodb/([^']+)'", sql)) for sql in cursor.ran if "summary_global" in sql]


def test_disabled_latch_instruments_are_read_with_their_states_and_not_on_every_scrape(monkeypatch):
    """A disabled instrument counts nothing: its row is read with the states (once a minute) and the scrapes
    between ask only for the enabled ones, their values merged in name order with the states."""
    now = [1000.0]
    monkeypatch.setattr(base.time, "monotonic", lambda: now[0])
    a, b, c = (f"wait/synch/mutex/innodb/{n}" for n in "abc")
    states = [(a, "YES", "YES"), (b, "NO", "NO"), (c, "YES", "NO")]
    summary = {a: (3, 10), b: (7, 20), c: (5, 0)}
    cursor, source, connection = SummaryCursor(states, summary), PerfSchemaLatches(), server()
    source.fetch(cursor, connection)
    summary.update({a: (4, 30), c: (6, 0)})
    latches = source.fetch(cursor, connection)
    assert summaries(cursor) == ["a,b,c", "a,c"]
    assert [(l.name, l.waits, l.seconds, l.enabled, l.timed) for l in latches] == [
        ("a", 4, 3e-11, True, True), ("b", 7, 2e-11, False, False), ("c", 6, 0.0, True, False)]
    now[0] += 61  # b switched on: read with the states, then on every scrape
    cursor.answers["SELECT NAME, ENABLED"] = [(a, "YES", "YES"), (b, "YES", "YES"), (c, "YES", "NO")]
    summary[b] = (8, 40)
    assert [l.waits for l in source.fetch(cursor, connection)] == [4, 8, 6]
    source.fetch(cursor, connection)
    assert summaries(cursor) == ["a,b,c", "a,c", "a,b,c", "a,b,c"]


def test_a_server_with_every_latch_instrument_disabled_is_asked_for_no_summary_between_state_reads(monkeypatch):
    """Stock MySQL: the summary is read with the states, once a minute, and the series stay."""
    now = [1000.0]
    monkeypatch.setattr(base.time, "monotonic", lambda: now[0])
    names = ["wait/synch/mutex/innodb/log_mutex", "wait/synch/rwlock/innodb/lock_latch"]
    cursor = SummaryCursor([(name, "NO", "NO") for name in names], {names[0]: (0, 0), names[1]: (2, 0)})
    source, connection = PerfSchemaLatches(), server()
    first = source.fetch(cursor, connection)
    ran = len(cursor.ran)
    assert source.fetch(cursor, connection) == source.fetch(cursor, connection) == first
    assert [(l.name, l.waits) for l in first] == [("log_mutex", 0), ("lock_latch", 2)]
    assert len(cursor.ran) == ran == 2
    now[0] += 61
    source.fetch(cursor, connection)
    assert summaries(cursor) == ["log_mutex,lock_latch", "log_mutex,lock_latch"] and len(cursor.ran) == 4


def test_kept_rows_of_disabled_instruments_merge_with_enabled_ones_read_row_by_row(monkeypatch):
    """Packing refused after the states were read (a NULL, which GROUP_CONCAT leaves out): the enabled ones
    come as rows, merged with what the disabled ones kept; an instrument switched off keeps its last value."""
    now = [1000.0]
    monkeypatch.setattr(base.time, "monotonic", lambda: now[0])
    a, b = "wait/synch/mutex/innodb/a", "wait/synch/mutex/innodb/b"
    summary = {a: (3, 10), b: (7, 20)}
    cursor, source, connection = SummaryCursor([(a, "YES", "YES"), (b, "NO", "NO")], summary), PerfSchemaLatches(), server()
    source.fetch(cursor, connection)
    summary[a] = (4, None)
    assert [(l.name, l.waits, l.seconds) for l in source.fetch(cursor, connection)] == [("a", 4, 0.0), ("b", 7, 2e-11)]
    assert cursor.ran[-1].startswith("SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM ")
    summary[a] = (5, 30)
    latches = source.fetch(cursor, connection)
    assert [(l.name, l.waits, l.enabled) for l in latches] == [("a", 5, True), ("b", 7, False)]
    assert summaries(cursor)[-1] == "a" and not PACKED.fullmatch(cursor.ran[-1])
    now[0] += 61  # a switched off: read once more with the states, then kept
    cursor.answers["SELECT NAME, ENABLED"] = [(a, "NO", "NO"), (b, "NO", "NO")]
    summary[a] = (6, 40)
    source.fetch(cursor, connection)
    summary[a] = (9, 90)  # what a server cannot do with the instrument off: not read
    ran = len(cursor.ran)
    assert [(l.name, l.waits, l.enabled) for l in source.fetch(cursor, connection)] == [("a", 6, False), ("b", 7, False)]
    assert len(cursor.ran) == ran


def test_a_latch_summary_that_does_not_unpack_is_read_as_rows_in_name_order():
    name = "wait/synch/mutex/innodb/log_mutex"
    rows = [(name, 3, 1_000_000), ("wait/synch/rwlock/innodb/b", 1, 12345)]
    cursor = Cursor({"SELECT NAME, ENABLED": [(row[0], "YES", "YES") for row in rows], "SELECT EVENT_NAME": rows})
    # Cut inside the last field: both entries hold three fields, the last timer reads 123.
    cursor.group_concat_max_len = len(",".join(" ".join(map(str, row)) for row in rows)) - 2
    latches = PerfSchemaLatches().fetch(cursor, server())
    assert [(latch.name, latch.waits, latch.seconds) for latch in latches] == [("log_mutex", 3, 1e-06),
                                                                               ("b", 1, 1.2345e-08)]
    assert PACKED.fullmatch(cursor.ran[-2])
    assert cursor.ran[-1].startswith("SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM ")
    assert cursor.ran[-1].endswith(" ORDER BY EVENT_NAME")


@pytest.mark.parametrize("odd", ["it's", "a\\'b", "a b", "ä", "a;DROP"])
def test_an_instrument_name_that_is_not_plain_is_left_out_and_the_others_are_read(odd):
    """Names come from the server and are quoted into the summary statements: one that would not read the
    same quoted, whatever the connection's sql_mode (only a hostile server has one), is never sent."""
    good, bad = "wait/synch/mutex/innodb/log_mutex", f"wait/synch/mutex/innodb/{odd}"
    cursor = SummaryCursor([(bad, "YES", "YES"), (good, "YES", "YES")], {good: (3, 0), bad: (9, 0)})
    latches = PerfSchemaLatches().fetch(cursor, server())
    assert [(latch.name, latch.waits) for latch in latches] == [("log_mutex", 3)]
    assert all(odd not in sql for sql in cursor.ran[1:])


def test_a_build_without_innodb_latch_instruments_is_asked_for_no_summary():
    source = PerfSchemaLatches()
    cursor = Cursor({"SELECT NAME, ENABLED": []})
    connection = server()
    assert source.fetch(cursor, connection) == [] and source.fetch(cursor, connection) == []
    assert len(cursor.ran) == 1


def test_a_server_without_the_redo_file_instrument_is_not_asked_again_on_the_same_connection():
    source = PerfSchemaRedoFile()
    mariadb = Cursor({"SELECT COUNT_MISC": []})
    connection = server()
    assert source.fetch(mariadb, connection) is None and source.fetch(mariadb, connection) is None
    assert len(mariadb.ran) == 1
    mysql = Cursor({"SELECT COUNT_MISC": [(10, 2_000_000_000_000, 5, 0, 4096)]})
    again = server()  # a new connection, to a server that has it: asked on every scrape
    assert source.fetch(mysql, again).misc_seconds == 2.0 and source.fetch(mysql, again).misc_operations == 10
    assert len(mysql.ran) == 2


def test_settings_are_read_on_a_new_connection_and_then_once_a_minute(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(base.time, "monotonic", lambda: now[0])
    source = GlobalVariables(("innodb_log_file_size",))
    cursor = Cursor({"SHOW GLOBAL VARIABLES": [("innodb_log_file_size", "100")]})
    connection = server()
    assert source.fetch(cursor, connection) == {"innodb_log_file_size": "100"}
    now[0] += 59
    cursor.answers["SHOW GLOBAL VARIABLES"] = [("innodb_log_file_size", "200")]  # set by hand
    assert source.fetch(cursor, connection) == {"innodb_log_file_size": "100"} and len(cursor.ran) == 1
    now[0] += 2
    assert source.fetch(cursor, connection) == {"innodb_log_file_size": "200"} and len(cursor.ran) == 2
    source.fetch(cursor, server())  # a new connection
    assert len(cursor.ran) == 3


def test_the_names_a_source_asks_for_are_quoted_into_its_statement_once():
    status = sources.GlobalStatus(("Innodb_lsn_current", "Uptime"))
    sql = status.query(server())
    assert sql == "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_lsn_current', 'Uptime')"
    assert status.query(server()) is sql  # built with the source, not on every scrape
    metrics = InnodbMetrics(("log_writes",))
    cursor = Cursor({"SELECT NAME, SUBSYSTEM": [], "SELECT NAME, COUNT": []})
    metrics.fetch(cursor, server())
    assert cursor.ran[0].endswith("WHERE STATUS = 'enabled' OR NAME IN ('log_writes')")


def test_plain_names_are_quoted_into_a_statement():
    assert base.name_list(("a_1", "B2")) == "'a_1', 'B2'"


@pytest.mark.parametrize("name", ["it's", "a\\", "a b", "", "ä"])
def test_other_names_are_refused(name):
    with pytest.raises(ValueError, match="is not a plain name"):
        base.name_list(("ok", name))
