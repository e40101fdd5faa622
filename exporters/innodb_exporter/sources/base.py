"""The contract every source fulfils: one query to the server, and the typed value its rows become."""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ..server import ServerInfo


class Source(ABC):
    """One query, named after it (``name`` is the ``source`` label and the ``--collect.<name>`` flag).

    ``fetch`` runs ``query`` and hands the rows to ``from_rows``, which is pure: tests feed recorded rows
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
    def query(self, server: ServerInfo) -> tuple[str, tuple]:
        """The SQL and its parameters."""

    @abstractmethod
    def from_rows(self, rows) -> Any:
        """The typed value of the rows the query returned."""

    def fetch(self, cursor, server: ServerInfo) -> Any:
        sql, params = self.query(server)
        cursor.execute(sql, params or None)
        return self.from_rows(cursor.fetchall())

    def problems(self, value) -> list[str]:
        """What could not be read in an answer (counted as parse errors)."""
        return []

    def unreadable(self, value) -> bool:
        """True when nothing at all could be read from the answer."""
        return False


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+")


def name_list(names: tuple[str, ...]) -> str:
    """``'a', 'b'``: names the exporter itself declares, quoted into the statement once rather than escaped
    on every scrape; only plain names qualify, which read the same whatever the connection's sql_mode."""
    for name in names:
        if not _PLAIN_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a plain name to quote into a statement")
    return ", ".join(f"'{name}'" for name in names)


def read_packed(cursor, columns: tuple[str, ...], rest: str) -> list[list[str]] | None:
    """The rows of ``SELECT columns rest``, fetched as one: PyMySQL parses every row in Python (2 to 4 µs a
    row of three columns), and a hundred rows packed by GROUP_CONCAT into one text cost a third to a half.
    Only for columns of names and numbers, which hold neither the space nor the comma that separate them.
    None when the packing did not hold: a value held a separator, or the text reached
    ``group_concat_max_len`` (which ``session.probe_server`` raises) and may have been cut."""
    fields = ", ' ', ".join(columns)
    cursor.execute(f"SELECT COUNT(*), GROUP_CONCAT({fields} ORDER BY {columns[0]} SEPARATOR ','),"
                   f" @@SESSION.group_concat_max_len {rest}")
    answer = cursor.fetchall()
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
    """Rows read with ``read_packed`` while packing holds on a connection; once it did not (a proxy that drops
    session settings, a value holding a separator), row by row on that connection, with no second try."""

    def __init__(self):
        self._holds = PerConnection()

    def rows(self, cursor, server: ServerInfo, columns: tuple[str, ...], rest: str) -> list:
        if self._holds.stale(server):
            self._holds.keep(server, True)
        if self._holds.value:
            rows = read_packed(cursor, columns, rest)
            if rows is not None:
                return rows
            self._holds.value = False
        cursor.execute(f"SELECT {', '.join(columns)} {rest} ORDER BY {columns[0]}")
        return list(cursor.fetchall())
