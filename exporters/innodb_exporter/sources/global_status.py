"""``SHOW GLOBAL STATUS`` and ``VARIABLES``: only the InnoDB names our metrics use (mysqld_exporter has the rest).

Status is read on every scrape. The settings, which change only when an operator sets them, are read on a
connection's first scrape and then once a minute: a statement fewer on most scrapes, and a setting
changed by hand shows within a minute.
"""

from __future__ import annotations

from .base import PerConnection, Source, name_list

SETTINGS_MAX_AGE = 60.0  # seconds before the settings are read again


def _show_global(what: str, names: tuple[str, ...]) -> str:
    return f"SHOW GLOBAL {what} WHERE Variable_name IN ({name_list(names)})"


def _by_name(rows) -> dict[str, str]:
    """Keys lower-cased: servers differ in the case of the same name."""
    return {str(name).lower(): "" if value is None else str(value) for name, value in rows}


class GlobalStatus(Source):
    name = "global_status"
    field = "status"
    privilege = "none"
    summary = ("`SHOW GLOBAL STATUS`: only the InnoDB variables our metrics use, and `Uptime` (mysqld_exporter has "
               "the rest).")

    def __init__(self, wanted: tuple[str, ...] = ()):
        super().__init__(wanted)
        self._sql = _show_global("STATUS", wanted)

    def query(self, server):
        return self._sql

    def from_rows(self, rows) -> dict[str, str]:
        return _by_name(rows)


class GlobalVariables(Source):
    name = "global_variables"
    field = "variables"
    privilege = "none"
    summary = ("`SHOW GLOBAL VARIABLES`: the InnoDB settings the REDO model and derived metrics need, and the settings "
               "a tuner changes (below), read when a connection starts and then once a minute.")

    def __init__(self, wanted: tuple[str, ...] = ()):
        super().__init__(wanted)
        self._settings = PerConnection(max_age=SETTINGS_MAX_AGE)
        self._sql = _show_global("VARIABLES", wanted)

    def query(self, server):
        return self._sql

    def read(self, server):
        if self._settings.stale(server):
            self._settings.keep(server, (yield from super().read(server)))
        return self._settings.value

    def from_rows(self, rows) -> dict[str, str]:
        return _by_name(rows)
