"""``SHOW ENGINE INNODB STATUS``: fetched here, parsed by ``parsers.innodb_status``."""

from __future__ import annotations

from ..parsers import innodb_status

NAME = "engine_innodb_status"
FIELD = "innodb_status"
PRIVILEGE = "PROCESS"


def unsupported(server) -> str | None:
    return None


def fetch(cursor, server, names=None):
    cursor.execute("SHOW ENGINE INNODB STATUS")
    return from_rows(cursor.fetchall())


def from_rows(rows) -> innodb_status.InnodbStatus:
    # One row: Type 'InnoDB', Name '', Status <text>.
    text = rows[0][2] if rows and len(rows[0]) >= 3 else ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return innodb_status.parse(text)
