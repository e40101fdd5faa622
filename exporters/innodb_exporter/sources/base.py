"""The contract every source fulfils: one query to the server, and the typed value its rows become."""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generator

from .server import ServerInfo

# A source's read: yields each statement it needs, one after another, is sent that statement's rows, and
# returns its value. A scrape sends the statements of all its sources together (scrape.read_sources).
Read = Generator[str, Any, Any]


class Source(ABC):
    """One query, named after it (``name`` is the ``source`` label and the ``--collect.<name>`` flag).

    ``read`` sends ``query`` and hands the rows to ``from_rows``, which is pure: tests feed recorded rows
    through exactly the code a live scrape runs. What the value says about its own quality (parse problems,
    nothing readable) is asked through ``problems`` and ``unreadable``, so that the scrape treats every
    source alike.
    """

    name: ClassVar[str]
    field: ClassVar[str]  # the model.Snapshot attribute that keeps the value
    privilege: ClassVar[str]  # what the exporter's user needs for it
    summary: ClassVar[str]  # one line for the metrics reference

    def __init__(self, wanted: tuple[str, ...] = ()):
        self.wanted = wanted  # for sources that read only some names (status, variables)

    def unsupported(self, server: ServerInfo) -> str | None:
        """Why this server cannot answer the query, or None when it can."""
        return None

    @abstractmethod
    def query(self, server: ServerInfo) -> str:
        """The statement whose rows ``from_rows`` reads (what a recording keeps)."""

    @abstractmethod
    def from_rows(self, rows) -> Any:
        """The typed value of the rows the query returned."""

    def read(self, server: ServerInfo) -> Read:
        """This scrape's statements and the value their rows become: ``query``, unless the source keeps
        part of its answer per connection and asks for less, or for nothing."""
        return self.from_rows((yield self.query(server)))

    def fetch(self, cursor, server: ServerInfo) -> Any:
        """``read`` on its own, statement by statement on ``cursor`` (recordings, tests)."""
        read = self.read(server)
        try:
            sql = next(read)
            while True:
                cursor.execute(sql)
                sql = read.send(cursor.fetchall())
        except StopIteration as done:
            return done.value

    def problems(self, value) -> list[str]:
        """What could not be read in an answer (counted as parse errors)."""
        return []

    def unreadable(self, value) -> bool:
        """True when nothing at all could be read from the answer."""
        return False


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_/:.-]+")


def plain(name: str) -> bool:
    """A name that reads the same quoted into a statement whatever the connection's sql_mode and character
    set: ASCII letters, digits and ``_/:.-``, no quote, no backslash."""
    return bool(_PLAIN_NAME.fullmatch(name))


def name_list(names) -> str:
    """``'a', 'b'``: plain names quoted into a statement, which is then built once rather than escaped on
    every scrape."""
    for name in names:
        if not plain(name):
            raise ValueError(f"{name!r} is not a plain name to quote into a statement")
    return ", ".join(f"'{name}'" for name in names)


def packed_query(columns: tuple[str, ...], rest: str) -> str:
    """The rows of ``SELECT columns rest``, packed into one: PyMySQL parses every row in Python (2 to 4 µs a
    row of three columns), and a hundred rows packed by GROUP_CONCAT into one text cost a third to a half.
    Only for columns of names and numbers, which hold neither the space nor the comma that separate them."""
    fields = ", ' ', ".join(columns)
    return (f"SELECT COUNT(*), GROUP_CONCAT({fields} ORDER BY {columns[0]} SEPARATOR ','),"
            f" @@SESSION.group_concat_max_len {rest}")


def unpack(answer, columns: tuple[str, ...]) -> list[list[str]] | None:
    """The rows a ``packed_query`` answer holds. None when the packing did not hold: a value held a
    separator, or the text reached ``group_concat_max_len`` (which ``session.probe_server`` raises) and may
    have been cut."""
    if len(answer) != 1 or len(answer[0]) != 3:
        return None
    count, text, limit = answer[0]
    if text is None:
        return [] if count == 0 else None
    if not isinstance(text, str) or len(text.encode()) >= int(limit or 0):
        return None
    rows = [entry.split(" ") for entry in text.split(",")]
    if len(rows) != count or any(len(row) != len(columns) for row in rows):
        return None
    return rows


class PerConnection:
    """Something a source reads once per connection (and again after ``max_age`` seconds, when given):
    what the server does not change while it runs, kept off the scrapes that follow."""

    def __init__(self, max_age: float | None = None):
        self.max_age = max_age
        self.value = None
        self._server: ServerInfo | None = None  # identifies the connection: a new one has a new ServerInfo
        self._read_at = 0.0

    def stale(self, server: ServerInfo) -> bool:
        return self._server is not server or (self.max_age is not None
                                              and time.monotonic() - self._read_at > self.max_age)

    def keep(self, server: ServerInfo, value) -> None:
        self.value, self._server, self._read_at = value, server, time.monotonic()


class Packed:
    """Rows read with ``packed_query`` while packing holds on a connection; once it did not (a proxy that
    drops session settings, a value holding a separator), row by row on that connection, with no second try."""

    def __init__(self):
        self._holds = PerConnection()

    def rows(self, server: ServerInfo, columns: tuple[str, ...], rest: str) -> Read:
        if self._holds.stale(server):
            self._holds.keep(server, True)
        if self._holds.value:
            rows = unpack((yield packed_query(columns, rest)), columns)
            if rows is not None:
                return rows
            self._holds.value = False
        return list((yield f"SELECT {', '.join(columns)} {rest} ORDER BY {columns[0]}"))
