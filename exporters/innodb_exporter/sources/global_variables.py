"""``SHOW GLOBAL VARIABLES``: only the InnoDB settings the REDO model and derived metrics need."""

from __future__ import annotations

from .global_status import from_rows, show_global

NAME = "global_variables"
FIELD = "variables"
PRIVILEGE = "none"
__all__ = ["NAME", "PRIVILEGE", "fetch", "from_rows", "unsupported"]


def unsupported(server) -> str | None:
    return None


def fetch(cursor, server, names):
    return show_global(cursor, "VARIABLES", names)
