"""scrape.read_sources: the sources' statements sent together, one round trip a scrape, and each source's
answer kept apart from the others' (a statement that fails, a connection that goes, a proxy that takes one
statement at a time)."""

from __future__ import annotations

import time
from contextlib import contextmanager

import pymysql
import pytest

from innodb_exporter.scraping.connection import ConnectionSettings
from innodb_exporter.scraping.scrape import Outcome, read_sources
from innodb_exporter.sources.base import Source
from innodb_exporter.sources.server import ServerInfo


def source(name: str, *statements: str) -> Source:
    """A source that sends ``statements`` one after another (none: it answers with what it keeps) and whose
    value is the rows of each."""

    class Sends(Source):
        field = privilege = summary = ""

        def query(self, server):
            return statements[0]

        def read(self, server):
            rows = []
            for sql in statements:
                rows.append((yield sql))
            return rows

        def from_rows(self, rows):
            return rows

    Sends.name = name
    return Sends()


class Server:
    """Runs a query's statements in order as a server does: each answers its rows (its own text, as one row)
    or raises what ``errors`` holds for it, and after an error the server runs none of the rest. Behind a
    proxy that ``takes_batches`` not, a query of several statements is a syntax error."""

    def __init__(self, errors=None, answers_at_most: int | None = None, takes_batches: bool = True):
        self.errors = errors or {}
        self.answers_at_most = answers_at_most
        self.takes_batches = takes_batches
        self.queries: list[str] = []
        self.alive = True

    def cursor(self):
        return Cursor(self)


class Cursor:
    def __init__(self, server: Server):
        self.server, self._pending, self._rows = server, [], None

    def execute(self, query):
        self.server.queries.append(query)
        self._pending = query.split(";\n")[:self.server.answers_at_most]
        if len(self._pending) > 1 and not self.server.takes_batches:
            raise pymysql.err.ProgrammingError(1064, "You have an error in your SQL syntax")
        self._next()

    def nextset(self):
        if not self._pending:
            return None
        self._next()
        return True

    def _next(self):
        statement = self._pending.pop(0)
        if (error := self.server.errors.get(statement)) is not None:
            self._pending = []
            if isinstance(error, pymysql.err.OperationalError) and error.args[0] == 2013:
                self.server.alive = False
            raise error
        self._rows = ((statement,),)

    def fetchall(self):
        return self._rows


class Session:
    def __init__(self, server: Server, batches: bool = True):
        self.fake, self.batches = server, batches
        self.settings = ConnectionSettings(host="db.example", port=3306, user="u", password="Secret-pw-1")
        self.server = ServerInfo("mariadb", (10, 11, 19), True, "ENABLED")

    @contextmanager
    def cursor(self, deadline):
        yield self.fake.cursor()

    @property
    def alive(self):
        return self.fake.alive


def read(session, *sources, deadline: float | None = None):
    answers = read_sources(session, sources, time.monotonic() + 5 if deadline is None else deadline)
    return {name: (result.state, result.kind, value, outcome) for name, (result, value, outcome) in answers.items()}


def test_every_sources_statement_goes_in_one_query_and_each_source_reads_its_own_answer():
    db = Server()
    answers = read(Session(db), source("a", "A"), source("b", "B"), source("c", "C"))
    assert db.queries == ["A;\nB;\nC"]
    assert answers == {"a": ("read", None, [(("A",),)], Outcome.READ), "b": ("read", None, [(("B",),)], Outcome.READ),
                       "c": ("read", None, [(("C",),)], Outcome.READ)}


def test_a_source_that_needs_a_second_statement_sends_it_in_a_second_query():
    db = Server()
    answers = read(Session(db), source("a", "A1", "A2"), source("b", "B"), source("kept"))
    assert db.queries == ["A1;\nB", "A2"]
    assert answers["a"][2] == [(("A1",),), (("A2",),)] and answers["kept"] == ("read", None, [], Outcome.READ)


def test_a_statement_that_fails_fails_its_source_alone_and_the_statements_after_it_are_sent_again():
    denied = pymysql.err.OperationalError(1227, "Access denied; you need (at least one of) the PROCESS privilege(s)")
    db = Server({"B": denied})
    answers = read(Session(db), source("a", "A"), source("b", "B"), source("c", "C"))
    assert db.queries == ["A;\nB;\nC", "C"]
    assert answers["b"] == ("failed", "privilege", None, Outcome.FAILED)
    assert answers["a"][3] is answers["c"][3] is Outcome.READ


def test_a_lost_connection_loses_the_statements_after_it_and_what_the_others_kept_for_it():
    db = Server({"B": pymysql.err.OperationalError(2013, "Lost connection to server during query")})
    answers = read(Session(db), source("kept"), source("a", "A"), source("b", "B"), source("c", "C"))
    assert db.queries == ["A;\nB;\nC"]
    assert answers["a"][3] is Outcome.READ
    assert {name: answers[name][1:] for name in ("kept", "b", "c")} == {
        name: ("connection", None, Outcome.LOST) for name in ("kept", "b", "c")}


def test_fewer_answers_than_statements_drop_the_connection():
    db = Server(answers_at_most=1)
    session = Session(db)
    answers = read_sources(session, (source("a", "A"), source("b", "B")), time.monotonic() + 5)
    result, _, outcome = answers["b"]
    assert answers["a"][2] is Outcome.READ and outcome is Outcome.LOST
    assert result.message == "db.example:3306 answered 1 of the 2 statements sent together"


def test_a_connection_that_takes_no_multi_statement_query_is_sent_one_statement_at_a_time():
    db = Server()
    answers = read(Session(db, batches=False), source("a", "A1", "A2"), source("b", "B"))
    assert db.queries == ["A1", "A2", "B"]
    assert {outcome for *_, outcome in answers.values()} == {Outcome.READ}


def test_a_proxy_that_reads_the_query_as_one_statement_is_sent_one_at_a_time_from_then_on():
    db = Server(takes_batches=False)
    session = Session(db)
    answers = read(session, source("a", "A"), source("b", "B"))
    assert db.queries == ["A;\nB", "A", "B"] and session.batches is False
    assert {outcome for *_, outcome in answers.values()} == {Outcome.READ}


def test_no_statement_is_sent_past_the_deadline():
    db = Server()
    answers = read(Session(db), source("a", "A"), source("kept"), deadline=time.monotonic() - 1)
    assert db.queries == [] and answers["a"][:2] == ("failed", "timeout") and answers["kept"][0] == "read"


def test_rows_a_source_cannot_read_fail_that_source_alone():
    class Broken(Source):
        name, field, privilege, summary = "broken", "", "", ""

        def query(self, server):
            return "X"

        def from_rows(self, rows):
            raise ValueError(f"no such row in {rows}")

    db = Server()
    answers = read(Session(db), Broken(), source("a", "A"))
    assert db.queries == ["X;\nA"]
    assert answers["broken"][:2] == ("failed", "other") and answers["a"][3] is Outcome.READ


@pytest.mark.parametrize("kind", ["failed", "lost"])
def test_no_message_carries_the_password(kind):
    text = "denied for Secret-pw-1" if kind == "failed" else "lost Secret-pw-1"
    error = pymysql.err.OperationalError(1142 if kind == "failed" else 2013, text)
    session = Session(Server({"A": error}))
    answers = read_sources(session, (source("a", "A"),), time.monotonic() + 5)
    assert "Secret-pw-1" not in answers["a"][0].message
