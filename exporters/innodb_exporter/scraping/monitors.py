"""``--innodb_metrics.enable``: turn on the INNODB_METRICS counters the metrics read, whenever they are off.

Counters are off by default on most servers, off again after a restart, and anyone with the privilege
may switch them off. So they are checked on every new connection (before its first scrape reads them)
and after every scrape that finds one off. A refusal (the user lacks SUPER / SYSTEM_VARIABLES_ADMIN) is
logged once and tried again only after a while, never on every scrape.
"""

from __future__ import annotations

import logging
import time

from ..metrics.snapshot import Snapshot
from .connection import describe
from .problemlog import ProblemLog
from .session import Session

RETRY_AFTER = 600.0  # seconds after a refusal


def disabled(snapshot: Snapshot, needed: tuple[str, ...]) -> tuple[str, ...]:
    """The needed counters that exist on this server but are off."""
    counters = snapshot.counters or {}
    return tuple(n for n in needed if n in counters and not counters[n].enabled)


class MonitorEnabler:
    def __init__(self, needed: tuple[str, ...], problems: ProblemLog):
        self.needed = needed
        self.problems = problems
        self._refused_until = 0.0

    def on_connect(self, session: Session, deadline: float) -> None:
        """Enable what is off on a new connection, so that its first scrape already reads the counters."""
        self._refused_until = 0.0  # a restarted server, perhaps a user with new grants: try again
        column = session.server.metrics_state_column
        if column is None:
            return
        off = "STATUS <> 'enabled'" if column == "STATUS" else "ENABLED = 0"
        placeholders = ", ".join(["%s"] * len(self.needed))
        with session.cursor(deadline) as cursor:
            cursor.execute(f"SELECT NAME FROM information_schema.INNODB_METRICS WHERE {off} AND NAME IN "
                           f"({placeholders})", self.needed)
            names = tuple(sorted(str(row[0]) for row in cursor.fetchall()))
        self.enable(session, names, deadline)

    def enable(self, session: Session, names: tuple[str, ...], deadline: float) -> None:
        if not names or time.monotonic() < self._refused_until:
            return
        try:
            with session.cursor(deadline) as cursor:
                for name in names:
                    cursor.execute("SET GLOBAL innodb_monitor_enable = %s", (name,))
        except Exception as exc:
            self._refused_until = time.monotonic() + RETRY_AFTER
            _, message = describe(exc, session.settings)
            self.problems.report("enable", f"cannot enable INNODB_METRICS counters {', '.join(names)}: {message} "
                                           "(needs SUPER or SYSTEM_VARIABLES_ADMIN); trying again in "
                                           f"{RETRY_AFTER:.0f}s", logging.WARNING)
            return
        self.problems.resolve("enable")
        logging.getLogger("innodb_exporter").info(
            "enabled INNODB_METRICS counters: %s", ", ".join(names), extra={"target": self.problems.target})
