"""The source contract: every source keeps its value in a Snapshot field of its own, and the sources that
read part of their answer once per connection read it again on a new connection."""

from __future__ import annotations

import dataclasses

import pymysql
from pymysql.constants import SERVER_STATUS

from innodb_exporter import sources
from innodb_exporter.server import ServerInfo
from innodb_exporter.snapshot import Snapshot
from innodb_exporter.sources import GlobalVariables, InnodbMetrics, PerfSchemaLatches, PerfSchemaRedoFile
from innodb_exporter.sources import base


def test_every_source_has_a_field_of_its_own_in_the_snapshot():
    fields = {f.name for f in dataclasses.fields(Snapshot)}
    assert all(source.field in fields for source in sources.CATALOGUE)
    assert len({source.field for source in sources.CATALOGUE}) == len(sources.CATALOGUE)
    assert len({source.name for source in sources.CATALOGUE}) == len(sources.CATALOGUE)


class Cursor:
    """Answers each statement from a table of (start of the SQL -> rows), and keeps what it ran."""

    def __init__(self, answers):
        self.answers, self.ran, self._rows = answers, [], []

    def execute(self, sql, params=None):
        self.ran.append(sql)
        self._rows = next(rows for start, rows in self.answers.items() if sql.startswith(start))

    def fetchall(self):
        return self._rows


class EscapingCursor(Cursor, pymysql.cursors.Cursor):
    """``Cursor`` with PyMySQL's own mogrify, which escapes as the connection's SQL mode says."""

    def __init__(self, answers, no_backslash_escapes: bool = False):
        pymysql.cursors.Cursor.__init__(self, pymysql.connections.Connection(defer_connect=True))
        self.connection.server_status = SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES if no_backslash_escapes else 0
        Cursor.__init__(self, answers)


def server() -> ServerInfo:
    return ServerInfo("mysql", (9, 7, 4), True, "STATUS")


def test_counter_descriptions_are_read_once_per_connection():
    source = InnodbMetrics(("log_writes",))
    cursor = Cursor({"SELECT NAME, SUBSYSTEM": [("log_writes", "log", 5, "status_counter", "Writes.", 1)],
                     "SELECT NAME, COUNT": [("log_writes", 7, 1)]})
    first = server()
    assert source.fetch(cursor, first)["log_writes"].count == 5
    second = source.fetch(cursor, first)["log_writes"]
    assert (second.count, second.comment, second.subsystem) == (7, "Writes.", "log")
    source.fetch(cursor, server())  # a new connection: described again
    assert [sql.split(",")[1].strip() for sql in cursor.ran] == ["SUBSYSTEM", "COUNT", "SUBSYSTEM"]


def test_a_counter_enabled_since_the_last_description_is_described():
    source = InnodbMetrics()
    cursor = Cursor({"SELECT NAME, SUBSYSTEM": [("log_writes", "log", 5, "status_counter", "Writes.", 1)],
                     "SELECT NAME, COUNT": [("log_writes", 7, 1), ("log_waits", 1, 1)]})
    connection = server()
    source.fetch(cursor, connection)
    source.fetch(cursor, connection)
    assert [sql.split(",")[1].strip() for sql in cursor.ran] == ["SUBSYSTEM", "COUNT", "SUBSYSTEM"]


def test_latch_states_are_read_on_a_new_connection_and_joined_to_every_summary():
    source = PerfSchemaLatches()
    # The server answers a row it was not asked for: kept, and counted as neither enabled nor timed.
    cursor = EscapingCursor({"SELECT NAME, ENABLED": [("wait/synch/mutex/innodb/log_mutex", "YES", "NO")],
                             "SELECT EVENT_NAME": [("wait/synch/mutex/innodb/log_mutex", 3, 0),
                                                   ("wait/synch/rwlock/innodb/new_one", 1, 5)]})
    connection = server()
    source.fetch(cursor, connection)
    latches = source.fetch(cursor, connection)
    assert [(l.name, l.enabled, l.timed) for l in latches] == [("log_mutex", True, False), ("new_one", False, False)]
    assert sum(sql.startswith("SELECT NAME, ENABLED") for sql in cursor.ran) == 1


def test_the_latch_summary_asks_for_the_instruments_by_name_with_one_statement_per_read(monkeypatch):
    """By name, so that a performance_schema with an index on EVENT_NAME (MySQL 8.0+) builds only their rows;
    the statement is built when the instruments are read (a connection's first scrape, then once a minute)."""
    now = [1000.0]
    monkeypatch.setattr(base.time, "monotonic", lambda: now[0])
    source = PerfSchemaLatches()
    names = ["wait/synch/mutex/innodb/log_mutex", "wait/synch/sxlock/innodb/index_tree_rw_lock"]
    cursor = EscapingCursor({"SELECT NAME, ENABLED": [(name, "YES", "YES") for name in names], "SELECT EVENT_NAME": []})
    connection = server()
    source.fetch(cursor, connection)
    assert cursor.ran[1].endswith(f" WHERE EVENT_NAME IN ('{names[0]}', '{names[1]}')")
    assert "LIKE" not in cursor.ran[1]
    source.fetch(cursor, connection)
    assert cursor.ran[2] is cursor.ran[1]  # the same statement, not built again
    now[0] += 61
    cursor.answers["SELECT NAME, ENABLED"] = [(names[0], "YES", "YES")]  # an instrument gone from the list
    source.fetch(cursor, connection)
    assert cursor.ran[3].startswith("SELECT NAME, ENABLED") and cursor.ran[4].endswith(f" IN ('{names[0]}')")


def test_instrument_names_are_escaped_as_the_connections_sql_mode_needs():
    """Names come from the server: a quote or a backslash in one stays inside its string literal, with
    backslash escapes and with NO_BACKSLASH_ESCAPES alike (PyMySQL's own escaping, on a real cursor)."""
    odd = "wait/synch/mutex/innodb/it's\\odd"
    for no_backslash_escapes, literal in ((False, "'wait/synch/mutex/innodb/it\\'s\\\\odd'"),
                                          (True, "'wait/synch/mutex/innodb/it''s\\odd'")):
        cursor = EscapingCursor({"SELECT NAME, ENABLED": [(odd, "YES", "YES")], "SELECT EVENT_NAME": []},
                                no_backslash_escapes)
        PerfSchemaLatches().fetch(cursor, server())
        assert cursor.ran[1].endswith(f" WHERE EVENT_NAME IN ({literal})")


def test_a_build_without_innodb_latch_instruments_is_asked_for_no_summary():
    source = PerfSchemaLatches()
    cursor = EscapingCursor({"SELECT NAME, ENABLED": []})
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
    assert source.fetch(mysql, again).fsync_seconds == 2.0 and source.fetch(mysql, again).fsyncs == 10
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
