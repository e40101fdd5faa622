"""``SHOW ENGINE INNODB MUTEX``: waits per latch, parsed by ``parsers.innodb_mutex``.

MariaDB 10.6+ answers with no rows whatever the load (it no longer tracks latches there; the waits are
in performance_schema, ``perf_schema_latches``), so the statement is not sent to it.
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
        return "SHOW ENGINE INNODB MUTEX"

    def unsupported(self, server):
        if server.flavor == "mariadb" and server.version >= (10, 6):
            return "MariaDB 10.6+ keeps no latch statistics in SHOW ENGINE INNODB MUTEX"
        return None

    def from_rows(self, rows) -> innodb_mutex.MutexReading:
        return innodb_mutex.parse(rows)

    def problems(self, value):
        return value.problems
