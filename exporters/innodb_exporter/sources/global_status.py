"""``SHOW GLOBAL STATUS``: only the InnoDB variables our metrics use (mysqld_exporter has the rest)."""

from __future__ import annotations

NAME = "global_status"
FIELD = "status"
PRIVILEGE = "none"


def unsupported(server) -> str | None:
    return None


def show_global(cursor, what: str, names) -> dict[str, str]:
    """``SHOW GLOBAL <what> WHERE Variable_name IN (...)``; keys lower-cased (servers differ in case)."""
    placeholders = ", ".join(["%s"] * len(names))
    cursor.execute(f"SHOW GLOBAL {what} WHERE Variable_name IN ({placeholders})", tuple(names))
    return from_rows(cursor.fetchall())


def fetch(cursor, server, names):
    return show_global(cursor, "STATUS", names)


def from_rows(rows) -> dict[str, str]:
    return {str(name).lower(): "" if value is None else str(value) for name, value in rows}
