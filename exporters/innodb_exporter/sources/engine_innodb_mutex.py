"""``SHOW ENGINE INNODB MUTEX``: waits per latch, parsed by ``parsers.innodb_mutex``.

MariaDB 10.6+ answers with no rows (its latches are no longer tracked there); that is no error.
"""

from __future__ import annotations

from ..parsers import innodb_mutex

NAME = "engine_innodb_mutex"
FIELD = "mutexes"
PRIVILEGE = "PROCESS"


def unsupported(server) -> str | None:
    return None


def fetch(cursor, server, names=None):
    cursor.execute("SHOW ENGINE INNODB MUTEX")
    return from_rows(cursor.fetchall())


def from_rows(rows) -> innodb_mutex.MutexReading:
    return innodb_mutex.parse(rows)
