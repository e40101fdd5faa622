"""``SHOW GLOBAL STATUS``: only the InnoDB variables our metrics use (mysqld_exporter has the rest)."""

from __future__ import annotations

from .base import Source


def _show_global(what: str, names: tuple[str, ...]) -> tuple[str, tuple]:
    placeholders = ", ".join(["%s"] * len(names))
    return f"SHOW GLOBAL {what} WHERE Variable_name IN ({placeholders})", tuple(names)


def _by_name(rows) -> dict[str, str]:
    """Keys lower-cased: servers differ in the case of the same name."""
    return {str(name).lower(): "" if value is None else str(value) for name, value in rows}


class GlobalStatus(Source):
    name = "global_status"
    field = "status"
    privilege = "none"
    summary = "`SHOW GLOBAL STATUS`: only the InnoDB variables our metrics use (mysqld_exporter has the rest)."

    def query(self, server):
        return _show_global("STATUS", self.wanted)

    def from_rows(self, rows) -> dict[str, str]:
        return _by_name(rows)


class GlobalVariables(Source):
    name = "global_variables"
    field = "variables"
    privilege = "none"
    summary = "`SHOW GLOBAL VARIABLES`: only the InnoDB settings the REDO model and derived metrics need."

    def query(self, server):
        return _show_global("VARIABLES", self.wanted)

    def from_rows(self, rows) -> dict[str, str]:
        return _by_name(rows)
