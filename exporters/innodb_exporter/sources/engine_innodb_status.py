"""``SHOW ENGINE INNODB STATUS``: fetched here, parsed by ``parsers.innodb_status``."""

from __future__ import annotations

from ..parsers import innodb_status
from .base import Source


class EngineInnodbStatus(Source):
    name = "engine_innodb_status"
    field = "innodb_status"
    privilege = "PROCESS"
    summary = "``SHOW ENGINE INNODB STATUS``: fetched here, parsed by ``parsers.innodb_status``."

    def query(self, server):
        return "SHOW ENGINE INNODB STATUS"

    def from_rows(self, rows) -> innodb_status.InnodbStatus:
        # One row: Type 'InnoDB', Name '', Status <text>.
        text = rows[0][2] if rows and len(rows[0]) >= 3 else ""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        return innodb_status.parse(text)

    def problems(self, value):
        return value.problems

    def unreadable(self, value):
        return value.unreadable
