"""``SHOW ENGINE INNODB MUTEX``: waits per latch, parsed by ``parsers.innodb_mutex``.

MariaDB 10.6+ answers with no rows (its latches are no longer tracked there); that is no error.
"""

from __future__ import annotations

from ..parsers import innodb_mutex
from .base import Source


class EngineInnodbMutex(Source):
    name = "engine_innodb_mutex"
    field = "mutexes"
    privilege = "PROCESS"
    summary = "``SHOW ENGINE INNODB MUTEX``: waits per latch, parsed by ``parsers.innodb_mutex``."

    def query(self, server):
        return "SHOW ENGINE INNODB MUTEX", ()

    def from_rows(self, rows) -> innodb_mutex.MutexReading:
        return innodb_mutex.parse(rows)

    def problems(self, value):
        return value.problems
